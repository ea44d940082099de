"""`sai mcp --http` with a bearer token, and the refusal to serve other machines without one.

Real servers (`python -m sai mcp --http 127.0.0.1:0`) in subprocesses, probed with httpx and with
the MCP SDK's own client session; every request goes to 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from anyio.from_thread import BlockingPortal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_sessions import HEADERS, TOOLS, sai_mcp_command, standin_env
from ollama_standin import OllamaStandIn

from sai.mcp import http

TOKEN = "5ai-test-token-" + "0123456789abcdef" * 2
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
SERVING = re.compile(r"^sai mcp: serving (http://[^ ]+/mcp) \((read-only[^)]*)\)$", re.M)


@contextmanager
def _server(root: Path, standin: OllamaStandIn, log: Path, *args: str, env: dict[str, str] | None = None,
            ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A running `sai mcp --http …`: its URL (from the serving line) and its process."""
    base = {k: v for k, v in os.environ.items() if k != http.TOKEN_ENV}
    with log.open("wb") as err:
        proc = subprocess.Popen([*sai_mcp_command(root), "--http", *args],
                                env={**base, **standin_env(standin), **(env or {})},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while not (found := SERVING.search(log.read_text(errors="replace"))):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield found.group(1).replace("[::]", "127.0.0.1").replace("0.0.0.0", "127.0.0.1"), proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def token_url(project_dir: Path, standin: OllamaStandIn, tmp_path_factory: pytest.TempPathFactory,  # noqa: F811
              ) -> Iterator[str]:
    log = tmp_path_factory.mktemp("http-token") / "stderr.log"
    with _server(project_dir, standin, log, "127.0.0.1:0", env={http.TOKEN_ENV: TOKEN}) as (url, _):
        yield url
    assert TOKEN not in log.read_text()
    assert "(read-only, a token required)" in log.read_text()


def _post(url: str, *, token: str | None = None, scheme: str = "Bearer", **headers: str) -> httpx.Response:
    auth = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    return httpx.post(url, json=LIST, headers={**HEADERS, **auth, **headers}, timeout=30)


def test_a_request_without_the_token_gets_401_and_a_json_rpc_error(token_url: str) -> None:
    for response in (_post(token_url), _post(token_url, token="wrong"), _post(token_url, token=TOKEN + "x"),
                     _post(token_url, token=TOKEN[:-1]), _post(token_url, token=TOKEN, scheme="Basic"),
                     httpx.get(token_url, headers=HEADERS, timeout=30)):
        assert response.status_code == 401, response.request.headers
        assert response.headers["www-authenticate"].startswith("Bearer")
        answer = response.json()
        assert answer["jsonrpc"] == "2.0" and answer["id"] is None
        assert answer["error"]["code"] == http.UNAUTHORIZED and "Authorization: Bearer" in answer["error"]["message"]
        assert "result" not in answer


def test_the_right_token_is_served_and_the_host_check_still_holds(token_url: str) -> None:
    for scheme in ("Bearer", "bearer"):
        answer = _post(token_url, token=TOKEN, scheme=scheme)
        assert answer.status_code == 200 and {t["name"] for t in answer.json()["result"]["tools"]} == TOOLS
    assert _post(token_url, token=TOKEN, Host="evil.example").status_code == 403
    assert _post(token_url, token=TOKEN, Origin="http://evil.example").status_code == 403


def test_an_sdk_client_session_with_the_token_is_served_and_one_without_is_refused(
    portal: BlockingPortal, token_url: str,
) -> None:
    transport = streamable_http_client(
        token_url, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}))
    with portal.wrap_async_context_manager(Client(transport)) as client:
        assert {t.name for t in portal.call(client.list_tools).tools} == TOOLS
        result = portal.call(client.call_tool, "sai_search_code", {"query": "password salt"})
        assert result.structured_content["hits"][0]["path"] == "src/auth.py"
    with pytest.raises(Exception) as refused:  # noqa: B017, PT011 (whatever the SDK raises for a 401)
        with portal.wrap_async_context_manager(Client(token_url)) as client:
            portal.call(client.list_tools)
    assert "401" in repr(refused.value) or "nauthori" in repr(refused.value), repr(refused.value)


def test_the_token_comes_from_a_file_and_never_shows_in_the_command_line(
    project_dir: Path, standin: OllamaStandIn, tmp_path: Path,  # noqa: F811
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    with _server(project_dir, standin, tmp_path / "log", "127.0.0.1:0", "--token-file", str(token_file)) as (
            url, proc):
        assert TOKEN not in Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(errors="replace")
        assert _post(url).status_code == 401
        assert _post(url, token=TOKEN).status_code == 200


def _refused(root: Path, standin: OllamaStandIn, *args: str, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != http.TOKEN_ENV}
    done = subprocess.run([*sai_mcp_command(root), *args], env={**base, **standin_env(standin), **(env or {})},
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "serving" not in done.stderr, done.stderr
    return done


def test_a_non_loopback_bind_without_a_token_is_refused(project_dir: Path, standin: OllamaStandIn) -> None:  # noqa: F811
    for bind in ("0.0.0.0:0", "[::]:0"):
        done = _refused(project_dir, standin, "--http", bind)
        assert done.stderr.startswith(f"error: --http {bind.rsplit(':', 1)[0].strip('[]')} serves other machines")
        assert "SAI_MCP_TOKEN" in done.stderr and "--allow-unauthenticated" in done.stderr


def test_bad_tokens_and_token_options_without_http_are_one_line(
    project_dir: Path, standin: OllamaStandIn, tmp_path: Path,  # noqa: F811
) -> None:
    short = _refused(project_dir, standin, "--http", "127.0.0.1:0", env={http.TOKEN_ENV: "short"})
    assert "SAI_MCP_TOKEN must hold a token of at least 16" in short.stderr and "short" not in short.stderr[30:]
    missing = _refused(project_dir, standin, "--http", "127.0.0.1:0", "--token-file", str(tmp_path / "none"))
    assert f"cannot read the token file {tmp_path / 'none'}" in missing.stderr
    without = _refused(project_dir, standin, "--token-file", str(tmp_path / "none"))
    assert "apply to --http only" in without.stderr


def test_allow_unauthenticated_serves_a_wildcard_bind_with_a_warning(
    project_dir: Path, standin: OllamaStandIn, tmp_path: Path,  # noqa: F811
) -> None:
    log = tmp_path / "log"
    with _server(project_dir, standin, log, "0.0.0.0:0", "--allow-unauthenticated") as (url, _):
        assert "without a token (--allow-unauthenticated): anyone who can reach" in log.read_text()
        assert _post(url).status_code == 200  # to 127.0.0.1: a loopback Host


def test_the_token_check_is_constant_time_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = http.hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(http.hmac, "compare_digest", recording)
    expected = http.expected_header(TOKEN)
    assert http.authorized({"headers": [(b"authorization", f"Bearer {TOKEN}".encode())]}, expected)
    assert not http.authorized({"headers": [(b"Authorization", b"Bearer " + TOKEN.encode()[:-1])]}, expected)
    assert not http.authorized({"headers": []}, expected)
    assert len(compared) == 3 and all(b == expected and len(a) == len(b) for a, b in compared)


def test_only_loopback_addresses_are_served_without_a_token() -> None:
    for address in ("127.0.0.1", "127.0.1.1", "::1"):
        http.check_exposure("myhost", address, token=None, allow_unauthenticated=False)
    for address in ("0.0.0.0", "::", "10.0.0.5", "192.0.2.1"):
        http.check_exposure("myhost", address, token=TOKEN, allow_unauthenticated=False)
        with pytest.raises(http.UsageError, match="--http myhost serves other machines"):
            http.check_exposure("myhost", address, token=None, allow_unauthenticated=False)
