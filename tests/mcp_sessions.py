"""`sai mcp` run as a subprocess for the tests: a client session over stdio driven synchronously
through a portal, the fixture project's sources, and the server's environment and command line."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from anyio.from_thread import BlockingPortal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from ollama_standin import OllamaStandIn

import sai
from sai.config import load_config
from sai.indexing import indexer
from sai.project import Project

REPO = Path(sai.__file__).resolve().parent.parent  # the checkout under test, for the servers
TOOLS = {
    "sai_search_code", "sai_find_similar", "sai_find_duplicates", "sai_index_status",
    "sai_refresh", "sai_sync", "sai_prepare_mcp_setup", "sai_read_chunk", "sai_find_symbol",
    "sai_find_references", "sai_find_callers", "sai_find_callees", "sai_impact",
}
AUTH = '''"""Password hashing and user sessions."""
import hashlib


def hash_password(password: str, salt: str) -> str:
    """Salted SHA-256 digest of a password."""
    return hashlib.sha256((salt + password).encode()).hexdigest()


class Session:
    def __init__(self, user: str) -> None:
        self.user = user

    def create(self, token: str) -> str:
        return f"{self.user}:{token}"
'''
PARSER = '''def parse_config_lines(text):
    """Key/value pairs from INI-like lines, comments skipped."""
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    if not values:
        raise ValueError("no settings found")
    return values
'''
MANY = "".join(f"def handler_{i}(request):\n    return request.get('field_{i}')\n\n\n" for i in range(60))
_SERVERS = itertools.count()  # numbers each server's stderr log
HEADERS = {"Accept": "application/json, text/event-stream"}


def index_project(root: Path, standin: OllamaStandIn) -> Path:
    """Index `root` by its sai-cfg.yml with the stand-in, as `sai` would; returns `root`."""
    project = Project(load_config(config_file=str(root / "sai-cfg.yml"), env=standin_env(standin)))
    try:
        indexer.index(project)
    finally:
        project.close()
    return root


def _closed(schema: Any) -> Any:
    """`schema` with additionalProperties false on every object that lists its properties."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: _closed(value) for key, value in schema.items()}
    if "properties" in closed:
        closed.setdefault("additionalProperties", False)
    return closed


class Session:
    """A connected MCP client, driven from synchronous tests through the portal."""

    def __init__(self, portal: BlockingPortal, client: Client, stderr: Path) -> None:
        self.portal = portal
        self.client = client
        self.stderr = stderr
        self._schemas: dict[str, dict[str, Any]] | None = None

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The tool's structured result, checked against its declared outputSchema (no extra keys)."""
        result = self.portal.call(self.client.call_tool, tool, arguments)
        assert not result.is_error, result.content
        assert json.loads(result.content[0].text) == result.structured_content
        jsonschema.validate(result.structured_content, self.output_schema(tool))
        return result.structured_content

    def output_schema(self, tool: str) -> dict[str, Any]:
        """The tool's outputSchema as tools/list gives it, closed: an undeclared key is an error."""
        if self._schemas is None:
            tools = self.portal.call(self.client.list_tools).tools
            self._schemas = {t.name: _closed(t.output_schema) for t in tools}
        return self._schemas[tool]

    def error(self, tool: str, **arguments: Any) -> MCPError:
        with pytest.raises(MCPError) as raised:
            self.portal.call(self.client.call_tool, tool, arguments)
        return raised.value


@contextmanager
def mcp_session(
    portal: BlockingPortal, root: Path, env: dict[str, str], *flags: str, cwd: Path | None = None,
    output_schemas: bool = True,
) -> Iterator[Session]:
    """A client session with `sai mcp` over stdio; with `output_schemas` (--output-schemas), each
    call's result is checked against its tool's outputSchema (Session.call)."""
    command, *args = sai_mcp_command(root)
    published = ["--output-schemas"] if output_schemas else []
    params = StdioServerParameters(command=command, args=[*args, *published, *flags], env=env,
                                   cwd=cwd or root.parent)
    stderr = root.parent / f"mcp-stderr-{next(_SERVERS)}.log"
    with stderr.open("w") as errlog:
        transport = stdio_client(params, errlog=errlog)
        with portal.wrap_async_context_manager(Client(transport, mode="legacy")) as client:
            yield Session(portal, client, stderr)


def sai_mcp_command(root: Path) -> list[str]:
    return [sys.executable, "-m", "sai", "mcp", "--config", str(root / "sai-cfg.yml")]


def standin_env(standin: OllamaStandIn) -> dict[str, str]:
    # stdio_client passes on only PATH, HOME and the like: name the checkout under test
    return {"OLLAMA_HOST": standin.url, "PYTHONPATH": str(REPO)}


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


SERVING = re.compile(r"^sai mcp: serving (http://127\.0\.0\.1:(\d+)/mcp) \(read-only\)$", re.M)


def served_url(stderr: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> str:
    """The URL of the server's "serving" line, once it is printed (the socket listens by then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = SERVING.search(stderr.read_text(encoding="utf-8", errors="replace"))
        if found:
            assert int(found.group(2)) != 0
            return found.group(1)
        assert proc.poll() is None, f"the HTTP server exited: {stderr.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"no serving line within {timeout}s: {stderr.read_text()}")
