"""Streamable HTTP for the MCP server: stateless, plain JSON, loopback Host names only.

`sai mcp --http HOST:PORT` answers at /mcp without a session handshake or an event stream, so a
bare `curl -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'` works: a POST is read as JSON
whatever its Content-Type and Accept headers say. A request whose Host (or Origin) header names
another host is refused with 403, so a web page cannot reach the server through DNS rebinding.
The listening socket is bound before anything is printed: port 0 picks a free port, the line
`serving http://HOST:PORT/mcp` names the real one, and a failed bind is one error line.

With a bearer token (`SAI_MCP_TOKEN`, or `--token-file`: never a flag value, which `ps` shows)
every request must carry `Authorization: Bearer <token>`, compared in constant time; one without
it gets 401 and a JSON-RPC error. Without a token the server binds loopback addresses only,
unless `--allow-unauthenticated` says otherwise (with a warning): anyone who can reach the port
could read the indexed source. docs/mcp.md shows it behind a TLS reverse proxy.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from sai.errors import SaiError, UsageError, keep_secret

log = logging.getLogger("sai.mcp")

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
TOKEN_ENV = "SAI_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
UNAUTHORIZED = -32001  # the JSON-RPC error code of a request without the bearer token
JSON_HEADERS = ((b"content-type", b"application/json"),
                (b"accept", b"application/json, text/event-stream"))


def parse_bind(http: str) -> tuple[str, int]:
    """HOST:PORT, [V6]:PORT, :PORT or PORT (no host: loopback; port 0: any free port)."""
    host, sep, port = http.rpartition(":")
    if not sep:
        host, port = "", http
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"--http {http!r} is not HOST:PORT; give e.g. 127.0.0.1:8765")
    return host, int(port)


def serve_http(
    server: MCPServer, http: str, *, mode: str, token: str | None = None, allow_unauthenticated: bool = False,
) -> None:
    """Serve `server` at http://HOST:PORT/mcp until interrupted (blocking)."""
    host, port = parse_bind(http)
    sock = listen(host, port)
    try:  # the address bound, not the name given, says whether other machines can connect
        check_exposure(host, sock.getsockname()[0], token=token, allow_unauthenticated=allow_unauthenticated)
    except SaiError:
        sock.close()
        raise
    app = HostGuard(http_app(server), allowed=allowed_hosts(host), token=token)
    shown = f"[{host}]" if ":" in host else host
    log.info("serving http://%s:%d/mcp (%s%s)", shown, sock.getsockname()[1], mode,
             ", a token required" if token else "")
    config = uvicorn.Config(app, log_level="warning", access_log=False, log_config=None,
                            lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])  # closes the socket when it stops


def bearer_token(env: Mapping[str, str], token_file: str | None) -> str | None:
    """The token from `token_file` (its first line), else $SAI_MCP_TOKEN; None when neither is set."""
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise UsageError(f"cannot read the token file {token_file}: {reason}; "
                             "give a readable file holding the token") from None
        token, where = (text.splitlines() or [""])[0].strip(), f"the token file {token_file}"
    elif env.get(TOKEN_ENV):
        token, where = env[TOKEN_ENV].strip(), TOKEN_ENV
    else:
        return None
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not token.isprintable():
        raise UsageError(f"{where} must hold a token of at least {MIN_TOKEN_CHARS} printable ASCII "
                         "characters; make one with `openssl rand -hex 32`")
    keep_secret(token)
    return token


def is_loopback(address: str) -> bool:
    """A bound address (getsockname) that only this machine can reach."""
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, address: str, *, token: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to serve other machines without a token (`host` as given, bound at `address`);
    warn when told to all the same."""
    if token is not None or is_loopback(address):
        return
    if not allow_unauthenticated:
        raise UsageError(f"--http {host} serves other machines, and without a token anyone who can reach it "
                         f"reads the indexed source; set {TOKEN_ENV} or --token-file, bind 127.0.0.1, "
                         "or pass --allow-unauthenticated")
    log.warning("serving %s without a token (--allow-unauthenticated): anyone who can reach this port can "
                "read the indexed source", host)


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, as uvicorn would bind it; one SaiError when it cannot."""
    sock = None
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:  # gaierror included: an unknown host name
        if sock is not None:
            sock.close()
        reason = exc.strerror or str(exc)
        raise SaiError(f"cannot listen on {host}:{port}: {reason}; choose another --http "
                       "address or port (0 picks a free one)") from exc
    return sock


def http_app(server: MCPServer) -> ASGIApp:
    """Stateless Streamable HTTP answering plain JSON: no session handshake, no event stream."""
    # The SDK's own DNS-rebinding check answers 421; docs/mcp.md promises 403, so HostGuard does it.
    return server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def allowed_hosts(bind_host: str) -> frozenset[str]:
    """Loopback names, plus the bind address when it was given explicitly and is no wildcard."""
    explicit = bind_host.lower() not in ("0.0.0.0", "::", "")
    return LOOPBACK | ({bind_host.lower()} if explicit else set())


def host_name(header: str) -> str:
    """The host part of a Host header: `name:port`, `[v6]:port` or a bare name."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    name, sep, port = header.rpartition(":")
    return name if sep and port.isdigit() and ":" not in name else header


class HostGuard:
    """ASGI middleware in front of the MCP app: 403 when the Host (or Origin) header names another
    host, so a web page cannot reach the server through DNS rebinding or a cross-site request;
    401 without the bearer token, when there is one; 405 for GET, which would open an event
    stream this stateless server never feeds."""

    def __init__(self, app: ASGIApp, *, allowed: frozenset[str], token: str | None = None) -> None:
        self.app = app
        self.allowed = allowed
        self.expected = expected_header(token) if token is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            scope = as_json_post(scope)
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if host_name(headers.get("host", "")) not in self.allowed or (
            origin is not None and (urlsplit(origin).hostname or "") not in self.allowed
        ):
            return PlainTextResponse("forbidden: Host is not a loopback name", status_code=403)
        if self.expected is not None and not authorized(scope, self.expected):
            return unauthorized()
        if scope["method"] == "GET":
            return PlainTextResponse("POST JSON-RPC requests to this URL; it has no event stream",
                                     status_code=405, headers={"Allow": "POST, DELETE"})
        return None


def expected_header(token: str) -> bytes:
    """What `authorized` compares with: the digest of `Bearer <token>`."""
    return hashlib.sha256(f"Bearer {token}".encode("ascii")).digest()


def authorized(scope: Scope, expected: bytes) -> bool:
    """The Authorization header is `Bearer <token>` (the scheme in any case), compared in constant
    time, as digests of one length: how long the check takes says nothing about how much of a
    guess was right, nor how long the token is."""
    given = next((v for k, v in scope["headers"] if k.lower() == b"authorization"), b"")
    scheme, _, credentials = given.strip().partition(b" ")
    presented = b"Bearer " + credentials.strip() if scheme.lower() == b"bearer" else b""
    return hmac.compare_digest(hashlib.sha256(presented).digest(), expected)


def unauthorized() -> Response:
    """401 with a JSON-RPC error (id null: the request is not read before it is authorised)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {
        "code": UNAUTHORIZED, "message": "unauthorized: send the header Authorization: Bearer <token>"}}
    return Response(json.dumps(body), status_code=401, media_type="application/json",
                    headers={"WWW-Authenticate": 'Bearer realm="sai"'})


def as_json_post(scope: Scope) -> Scope:
    """The POST with Content-Type application/json and an Accept the SDK takes: a bare
    `curl -d` (form-encoded, Accept */*) or a client naming neither type is still read as
    JSON-RPC and answered with plain JSON, instead of the SDK's 415 or 406."""
    kept = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"content-type", b"accept")]
    return {**scope, "headers": [*kept, *JSON_HEADERS]}
