"""The `sai` program: the command line (sai/cli), with the MCP server (sai/mcp) behind `sai mcp`.

The two front ends never import each other; this module joins them, and loads the MCP server
only when `sai mcp` runs.
"""

from __future__ import annotations

from typing import Any

from sai.cli import commands


def serve_mcp(project: Any, **options: Any) -> None:
    from sai.mcp.server import serve  # the MCP SDK loads only for `sai mcp`

    serve(project, **options)


def main(argv: list[str] | None = None) -> int:
    return commands.main(argv, serve_mcp=serve_mcp)
