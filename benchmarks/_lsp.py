"""A language server over stdio, as much of the protocol as refs_quality.py needs: open every
file, then `textDocument/references` of a position (without its declaration). gopls and clangd
are the ones it is used with (Debian packages: `apt-get install gopls golang-go clangd`)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import unquote

LANGUAGE_IDS = {".go": "go", ".c": "c", ".h": "c"}


class LanguageServer:
    """One server process on `root`; its requests to the client get empty answers."""

    def __init__(self, command: list[str], root: Path, *, env: dict[str, str] | None = None) -> None:
        self.root = root.resolve()
        self.process = subprocess.Popen(command, cwd=self.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
        self._next = 0
        self.diagnosed: set[str] = set()  # the files the server has parsed (it published their diagnostics)
        self.broken: set[str] = set()  # ... and those it could not compile (an error among them)
        self.progress_ended: set[str] = set()  # work-done progress tokens the server has ended
        self.request("initialize", {"processId": None, "rootUri": self.root.as_uri(),
                                    "workspaceFolders": [{"uri": self.root.as_uri(), "name": "root"}],
                                    "capabilities": {"workspace": {"workspaceFolders": True},
                                                     "window": {"workDoneProgress": True}}})
        self.notify("initialized", {})

    def open(self, keys: list[str]) -> None:
        for key in keys:
            path = self.root / key
            self.notify("textDocument/didOpen", {"textDocument": {
                "uri": path.as_uri(), "languageId": LANGUAGE_IDS.get(path.suffix, "plaintext"), "version": 1,
                "text": path.read_text(encoding="utf-8", errors="replace")}})

    def wait_parsed(self, keys: list[str], *, progress: str = "", timeout: float = 600) -> None:
        """Until the server has published diagnostics for each file (clangd indexes a file as it
        parses it: a reference asked before that is not found) and ended the `progress` named."""
        wanted = {(self.root / key).as_uri() for key in keys}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (
                wanted <= self.diagnosed and (not progress or progress in self.progress_ended)):
            self._answer(self._read())

    def broken_keys(self) -> set[str]:
        """The files whose diagnostics hold an error (they do not compile here: a missing header)."""
        return {Path(unquote(uri.removeprefix("file://"))).relative_to(self.root).as_posix() for uri in self.broken
                if Path(unquote(uri.removeprefix("file://"))).is_relative_to(self.root)}

    def references(self, key: str, line: int, column: int) -> set[tuple[str, int, int]]:
        """(key, 1-based line, 0-based column) of every reference the server gives, declaration left out."""
        answer = self.request("textDocument/references", {
            "textDocument": {"uri": (self.root / key).as_uri()},
            "position": {"line": line - 1, "character": column}, "context": {"includeDeclaration": False}})
        found = set()
        for place in answer or []:
            path = Path(unquote(place["uri"].removeprefix("file://")))
            if path.is_relative_to(self.root):
                start = place["range"]["start"]
                found.add((path.relative_to(self.root).as_posix(), start["line"] + 1, start["character"]))
        return found

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
        finally:
            self.process.kill()
            self.process.wait()

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, *, timeout: float = 300) -> Any:
        self._next += 1
        wanted = self._next
        self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._read()
            self._answer(message)
            if "method" not in message and message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")
        raise TimeoutError(f"{method}: no answer in {timeout} s")

    def _answer(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # the server asks the client something
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        elif message.get("method") == "textDocument/publishDiagnostics":
            uri = message["params"]["uri"]
            self.diagnosed.add(uri)
            if any(d.get("severity") == 1 for d in message["params"]["diagnostics"]):
                self.broken.add(uri)
        elif message.get("method") == "$/progress" and message["params"]["value"].get("kind") == "end":
            self.progress_ended.add(str(message["params"]["token"]))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the language server closed its output")
            if not line.strip():
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.process.stdout.read(length))
