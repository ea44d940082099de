"""The stdio transport with every frame answered (docs/mcp.md, "Frames over stdio").

The SDK's stdio reader drops, without a word, every line it cannot validate: malformed JSON, a
batch array, array `params`, an object `id`, and a request holding a lone UTF-16 surrogate
(`"\\ud800"`: valid JSON, but no Unicode text) — a client waiting for those answers waits
forever. Here each line is checked first (`check_frame`): a frame that is fine goes on to the
SDK unchanged; any other is answered with a JSON-RPC error carrying its `id` when it has a
usable one (-32600 invalid request, -32602 invalid params), or `null` (-32700 parse error,
-32600), and logged in one line. A notification (no `id`) cannot be answered: it is logged.

The SDK still owns stdout (fd 1 points at stderr while serving); fd 0 is claimed here the same
way, so a child process reads EOF, never the protocol.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from sai.errors import shown

log = logging.getLogger("sai.mcp")
SHOWN_FRAME = 120  # characters of a refused frame the log quotes


class FrameError(Exception):
    """A line that is no MCP message; `answer` is the error response (None: a notification)."""

    def __init__(self, code: int, message: str, request_id: int | str | None, *, answer: bool = True) -> None:
        super().__init__(message)
        self.code = code
        self.request_id = request_id
        self.answer = answer

    def response(self) -> JSONRPCError:
        return JSONRPCError(jsonrpc="2.0", id=self.request_id, error=ErrorData(code=self.code, message=str(self)))


def check_frame(line: str) -> str:
    """`line` when it is one MCP message the SDK can read; else raise FrameError."""
    try:
        frame = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, RecursionError's cousin for deep nesting
        raise FrameError(PARSE_ERROR, f"Parse error: the frame is not JSON ({exc})", None) from None
    except RecursionError:
        raise FrameError(PARSE_ERROR, "Parse error: the frame nests too deeply", None) from None
    if isinstance(frame, list):
        raise FrameError(INVALID_REQUEST, "Invalid Request: batch arrays are not supported; "
                         "send one JSON-RPC message per line", None)
    if not isinstance(frame, dict):
        raise FrameError(INVALID_REQUEST, "Invalid Request: a frame must be a JSON object", None)
    request_id = _request_id(frame)
    # a notification (a method, no id) and a response (a result or an error) are never answered
    answer = not ("method" in frame and "id" not in frame or "method" not in frame and
                  ("result" in frame or "error" in frame))
    if _lone_surrogate(frame):
        raise FrameError(INVALID_PARAMS, "Invalid params: the request holds a lone UTF-16 surrogate "
                         "(such as \\ud800), which is not text; send valid Unicode", request_id, answer=answer)
    if "params" in frame and not isinstance(frame["params"], dict | None):
        raise FrameError(INVALID_PARAMS, "Invalid params: params must be an object", request_id, answer=answer)
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"][1:]) or "frame"
        raise FrameError(INVALID_REQUEST, f"Invalid Request: {where}: {problem['msg']}", request_id,
                         answer=answer) from None
    return line


def _request_id(frame: dict[str, Any]) -> int | str | None:
    """The frame's id when a response can carry it (a string or an integer); else refused."""
    value = frame.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if value is None and ("id" not in frame or "method" not in frame):
        return None  # a notification, or an error response to a frame its sender could not read
    raise FrameError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer", None)


def _lone_surrogate(value: object) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    return False


class _CheckedLines:
    """The lines of stdin the SDK reads: only frames that passed check_frame; the others'
    answers go to `refusals`."""

    def __init__(self, source: BinaryIO, refusals: MemoryObjectSendStream[SessionMessage]) -> None:
        self.source = source
        self.refusals = refusals

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async with self.refusals:
            while raw := await anyio.to_thread.run_sync(self.source.readline, abandon_on_cancel=True):
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                try:
                    yield check_frame(line)
                except FrameError as refused:
                    await self._refuse(refused, line)

    async def _refuse(self, refused: FrameError, line: str) -> None:
        frame = json.dumps(shown(line, SHOWN_FRAME))[1:-1]  # one ASCII line, control characters escaped
        if refused.answer:
            log.warning("stdio: answered %d to the frame %s: %s", refused.code, frame, refused)
            await self.refusals.send(SessionMessage(refused.response()))
        else:
            log.warning("stdio: dropped the notification %s: %s", frame, refused)


@contextlib.asynccontextmanager
async def checked_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio_server over checked lines: (read stream, write stream) for the server."""
    with _claimed_stdin() as source:
        refusals_in, refusals_out = anyio.create_memory_object_stream[SessionMessage](16)
        lines = _CheckedLines(source, refusals_in)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_forward, refusals_out, write_stream)
                yield read_stream, write_stream
                tasks.cancel_scope.cancel()


async def _forward(refusals: MemoryObjectReceiveStream[SessionMessage], write_stream: Any) -> None:
    async with refusals:
        async for message in refusals:
            await write_stream.send(message)


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """stdin's descriptor for the protocol only: fd 0 points at the null device meanwhile."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        with os.fdopen(private, "rb", closefd=False) as source:
            yield source
    finally:
        os.dup2(private, 0)
        os.close(private)
