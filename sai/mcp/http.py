"""Streamable HTTP for the MCP server: stateless, plain JSON, loopback Host names only.

`sai mcp --http HOST:PORT` answers at /mcp without a session handshake or an event stream, so a
bare `curl -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'` works: a POST is read as JSON
whatever its Content-Type and Accept headers say. A request whose Host (or Origin) header names
another host is refused with 403, so a web page cannot reach the server through DNS rebinding.
The listening socket is bound before anything is printed: port 0 picks a free port, the line
`serving http://HOST:PORT/mcp` names the real one, and a failed bind is one error line.
"""

from __future__ import annotations

import logging
import socket
from urllib.parse import urlsplit

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from sai.errors import SaiError, UsageError

log = logging.getLogger("sai.mcp")

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
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


def serve_http(server: MCPServer, http: str, *, mode: str) -> None:
    """Serve `server` at http://HOST:PORT/mcp until interrupted (blocking)."""
    host, port = parse_bind(http)
    sock = listen(host, port)
    app = HostGuard(http_app(server), allowed=allowed_hosts(host))
    shown = f"[{host}]" if ":" in host else host
    log.info("serving http://%s:%d/mcp (%s)", shown, sock.getsockname()[1], mode)
    config = uvicorn.Config(app, log_level="warning", access_log=False, log_config=None,
                            lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])  # closes the socket when it stops


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
    405 for GET, which would open an event stream this stateless server never feeds."""

    def __init__(self, app: ASGIApp, *, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            scope = as_json_post(scope)
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> PlainTextResponse | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        origin = headers.get("origin")
        if host_name(headers.get("host", "")) not in self.allowed or (
            origin is not None and (urlsplit(origin).hostname or "") not in self.allowed
        ):
            return PlainTextResponse("forbidden: Host is not a loopback name", status_code=403)
        if scope["method"] == "GET":
            return PlainTextResponse("POST JSON-RPC requests to this URL; it has no event stream",
                                     status_code=405, headers={"Allow": "POST, DELETE"})
        return None


def as_json_post(scope: Scope) -> Scope:
    """The POST with Content-Type application/json and an Accept the SDK takes: a bare
    `curl -d` (form-encoded, Accept */*) or a client naming neither type is still read as
    JSON-RPC and answered with plain JSON, instead of the SDK's 415 or 406."""
    kept = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"content-type", b"accept")]
    return {**scope, "headers": [*kept, *JSON_HEADERS]}
