"""What every MCP tool does with its arguments and its result (shared by mcp_server.py and
mcp_lookup.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import CallToolResult, TextContent

from sai.errors import UsageError, redact, shown
from sai.output.budget import Budget, Spelling, check_budget
from sai.output.payloads import json_text
from sai.output.render import printable
from sai.project import Project
from sai.source import files


def tool_result(payload: Mapping[str, Any]) -> CallToolResult:
    """The payload as structured content and, for clients that read text, as the same JSON."""
    text = json_text(payload)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=dict(payload))


SPELLING = Spelling(budget="max_tokens", read="sai_read_chunk with its chunk_id")


def answer_budget(max_tokens: object) -> Budget:
    """A tool's max_tokens, checked before the tool does any work (-32602 when not positive)."""
    return Budget(check_budget(max_tokens), SPELLING)


def escaped(message: str) -> str:
    """A message for a JSON-RPC error or the server log: on one line, control characters shown
    escaped as in every output (sai/output/render.py `printable`), and no secret (`redact`)."""
    return printable(redact(message))


def key_of(project: Project, path: str) -> str:
    """The key of a root-relative (or absolute) path; refused when outside the root.

    Agents send paths relative to the project root, whatever directory the server was started
    in; the core takes keys.
    """
    return files.key_for(project.config.root, no_nul("path", path), cwd=project.config.root)


def no_nul(what: str, path: str) -> str:
    """`path`, refused when it holds a NUL byte, which no file name can (and os calls reject)."""
    if "\0" in path:
        raise UsageError(f"{what} {shown(repr(path))} contains a NUL byte; give a file path without one")
    return path
