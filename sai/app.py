"""The `sai` program: the command line (sai/cli), with the MCP server (sai/mcp) behind `sai mcp`.

The two front ends never import each other; this module joins them, and loads the MCP server
only when `sai mcp` runs. It imports nothing heavy itself: a Ctrl-C while the command line
loads (numpy, DuckDB: most of a second) is answered with one line, exit 130, not a traceback.
"""

from __future__ import annotations

import signal
import sys

TYPE_CHECKING = False  # not typing's: nothing to import before main() can answer a Ctrl-C
if TYPE_CHECKING:
    from typing import Any


def serve_mcp(project: Any, **options: Any) -> None:
    from sai.mcp.server import serve  # the MCP SDK loads only for `sai mcp`

    serve(project, **options)


def main(argv: list[str] | None = None) -> int:
    came: list[int] = []
    try:  # a Ctrl-C while the command line loads is noted, not raised: raised inside a native
        # module's initialisation (DuckDB's), it became an ImportError and then a crash
        previous = signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    except ValueError:  # not the main thread: nothing to defer
        previous = None
    try:
        from sai.cli import commands
    except KeyboardInterrupt:
        came.append(signal.SIGINT)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if came:
        print("error: interrupted", file=sys.stderr)
        return 130
    return commands.main(argv, serve_mcp=serve_mcp)
