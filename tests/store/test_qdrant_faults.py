"""A Qdrant URL that misbehaves: a server echoing the API key in an error, something that is not
Qdrant at all (a proxy's page, a wrong port). Each gives one `error:` line naming the URL, and
the key shows nowhere (stdout, stderr, log lines, MCP errors).

The stand-in is a small HTTP server in a thread on 127.0.0.1, answering every request alike.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_runs import Result, assert_one_error_line, sai, write_config
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn

from sai.errors import keep_secret, redact

KEY = "k3y-0f-the-team-5ecret"


class QdrantStandIn:
    """Answers every request with `status`, `content_type` and `body`, in which `{key}` is the
    api-key header the request carried (a server that echoes it, as some proxies and logs do)."""

    def __init__(self, status: int, body: str, *, content_type: str = "application/json") -> None:
        self.status, self.body, self.content_type = status, body, content_type
        self.requests = 0
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                standin.requests += 1
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                key = self.headers.get("api-key") or self.headers.get("authorization") or ""
                payload = standin.body.replace("{key}", key).encode()
                self.send_response(standin.status)
                self.send_header("content-type", standin.content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _answer  # noqa: N815 (http.server's names)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> QdrantStandIn:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


ECHOING = (500, '{"status": {"error": "error for request with api-key={key}; service unavailable"}}')
ECHOING_TEXT = (500, "upstream said: bad key {key}\nmore", "text/plain")
HTML_PAGE = (200, "<html><body>Sign in to the proxy</body></html>", "text/html")
HTML_404 = (404, "<html><body>Not Found</body></html>", "text/html")
WRONG_JSON = (200, '{"hello": "this is not qdrant"}')


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OLLAMA_HOST", "SAI_CONFIG", "SAI_BACKEND", "SAI_COLLECTION", "SAI_DB_PATH", "QDRANT_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("QDRANT_API_KEY", KEY)


@pytest.fixture
def project(tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    write_tree(root, {"a.py": "def alpha(x):\n    return x + 1\n"})
    write_config(root, ollama_server, "backend: qdrant\n")
    monkeypatch.chdir(root)
    return root


def _standin(answer: tuple) -> QdrantStandIn:
    status, body, *kind = answer
    return QdrantStandIn(status, body, content_type=kind[0] if kind else "application/json")


def _status(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str, *args: str) -> Result:
    monkeypatch.setenv("QDRANT_URL", url)
    return sai(capsys, *args, "status")


@pytest.mark.parametrize(("answer", "said"), [
    (ECHOING, "the Qdrant server at {url} answered HTTP 500: "),
    (ECHOING_TEXT, "the server at {url} answered with something that is not Qdrant's API (HTTP 500: "),
], ids=["json", "text"])
def test_a_server_echoing_the_api_key_in_an_error_never_gets_it_printed(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, answer: tuple, said: str,
) -> None:
    with _standin(answer) as server:
        result = _status(capsys, monkeypatch, server.url)
        assert server.requests >= 1  # the key did reach the server, which echoed it
    line = assert_one_error_line(result, said.format(url=server.url))
    assert KEY not in result.out + result.err and "***" in line


def test_no_log_line_shows_the_key_either(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _standin(ECHOING) as server:
        result = _status(capsys, monkeypatch, server.url, "--verbose")
    assert result.code == 1 and "Traceback" not in result.err
    assert KEY not in result.out + result.err
    assert f"error: the Qdrant server at {server.url} answered HTTP 500" in result.err


@pytest.mark.parametrize("answer", [HTML_PAGE, HTML_404, WRONG_JSON], ids=["html-200", "html-404", "other-json"])
def test_an_answer_that_is_not_qdrants_json_is_one_line_naming_the_url(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, answer: tuple,
) -> None:
    with _standin(answer) as server:
        result = _status(capsys, monkeypatch, server.url)
    line = assert_one_error_line(result, f"the server at {server.url} answered with something that is not Qdrant's")
    assert "qdrant.url" in line and "6333" in line


def test_a_url_that_is_no_url_is_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = _status(capsys, monkeypatch, "htp://127.0.0.1:6333")
    assert_one_error_line(result, "qdrant.url htp://127.0.0.1:6333 is not a URL of a Qdrant server")


@pytest.mark.parametrize("command", [["status"], ["mcp"], ["--query", "alpha", "--query-only"]])
def test_the_key_stays_hidden_from_a_real_process_and_the_mcp_server(project: Path, command: list[str]) -> None:
    with _standin(ECHOING) as server:
        env = {k: v for k, v in os.environ.items() if k != "OLLAMA_HOST" and not k.startswith("SAI_")}
        done = subprocess.run([sys.executable, "-m", "sai", *command], cwd=project, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, env=env | {"QDRANT_URL": server.url})
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert KEY not in done.stdout + done.stderr
    assert f"the Qdrant server at {server.url} answered HTTP 500" in done.stderr.splitlines()[-1]


def test_redact_hides_kept_secrets_bearer_tokens_and_api_key_values() -> None:
    keep_secret("kept-token-value")
    text = ("Authorization: Bearer abc.DEF-123 api-key=k1 api_key: k2 {\"api-key\": \"k3\"} "
            "x kept-token-value y; the API key (HTTP 403) was refused")
    shown = redact(text, ["other-secret"]) + redact("other-secret", ["other-secret"])
    for secret in ("abc.DEF-123", "k1", "k2", "k3", "kept-token-value", "other-secret"):
        assert secret not in shown
    assert "Bearer ***" in shown and "api-key=***" in shown and "the API key (HTTP 403) was refused" in shown


def test_an_mcp_tool_error_and_its_log_line_never_show_a_kept_secret(caplog: pytest.LogCaptureFixture) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from sai.errors import StoreError
    from sai.mcp.server import _RedactingFormatter, protocol_error

    keep_secret(KEY)
    for cause in (StoreError(f"the server said: {KEY} is wrong"), RuntimeError(f"Bearer {KEY}")):
        failure = ToolError("failed")
        failure.__cause__ = cause
        with caplog.at_level("INFO", logger="sai.mcp"):
            answer = protocol_error("sai_index_status", failure)
        assert KEY not in answer.error.message and "***" in answer.error.message
    lines = [_RedactingFormatter("sai mcp: %(message)s").format(r) for r in caplog.records]
    assert len(lines) == 2 and lines[1].endswith("RuntimeError: Bearer ***")  # the crash, with its exception
    assert all(KEY not in line for line in lines), lines
