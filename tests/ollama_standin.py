"""A small HTTP server in a thread that speaks enough of Ollama's API for the real client.

`POST /api/embed` answers with deterministic vectors: hashed words and character trigrams, so
identical texts get identical vectors and texts sharing words get a higher cosine. The vectors
are deliberately not unit length, so callers must normalise them. The server counts what it
receives, can fail or stall on demand, and refuses connections once stopped.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Iterable
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODELS = ("nomic-embed-text", "mxbai-embed-large", "all-minilm", "qwen3-embedding:0.6b")
WORD_RE = re.compile(r"[A-Za-z0-9]+")


class OllamaStandIn:
    """Ollama on 127.0.0.1 at `.url`; `start()` / `stop()`, or use it as a context manager."""

    def __init__(
        self,
        *,
        models: Iterable[str] = DEFAULT_MODELS,
        dim: int = 768,
        context_tokens: int = 2048,
        port: int = 0,
    ) -> None:
        self.models = {_tagged(m) for m in models}
        self.loaded = set(self.models)  # what /api/ps lists (a real server: the models used lately)
        self.vram = 1 << 30  # /api/ps's size_vram of each: a GPU's (0: the model runs on the CPU)
        self.dim = dim  # may be changed between requests to simulate another model
        self.context_tokens = context_tokens
        self.requests = 0  # POST /api/embed requests received, failed ones included
        self.inputs_embedded = 0  # inputs answered with a vector
        self.received_inputs: list[str] = []  # every embedded input, in arrival order
        self.bodies: list[dict[str, Any]] = []  # every /api/embed request body, as JSON
        self._failures: list[tuple[int, str]] = []
        self._stalls: list[float] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self.port = port  # 0: any free port; the bound one is in `.url` after start()
        self.url = ""

    def start(self) -> OllamaStandIn:
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.standin = self
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        # A short poll interval keeps stop() (and so each test's teardown) fast.
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Close the listening socket: later requests get connection refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OllamaStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail_next(self, n: int = 1, *, status: int = 500, error: str = "stand-in failure") -> None:
        """Answer the next n embed requests with `status` and `{"error": error}`."""
        with self._lock:
            self._failures.extend([(status, error)] * n)

    def stall_next(self, n: int = 1, *, seconds: float) -> None:
        """Wait `seconds` before answering each of the next n embed requests (for timeouts)."""
        with self._lock:
            self._stalls.extend([seconds] * n)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = self.inputs_embedded = 0
            self.received_inputs.clear()
            self.bodies.clear()

    def vector(self, text: str) -> list[float]:
        """The (unnormalised) vector the server returns for `text`."""
        return embed_text(text, self.dim)

    def handle_embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Status and JSON answer for one `/api/embed` request body."""
        with self._lock:
            self.requests += 1
            self.bodies.append(body)
            failure = self._failures.pop(0) if self._failures else None
            stall = self._stalls.pop(0) if self._stalls else 0.0
        time.sleep(stall)
        if failure:
            return failure[0], {"error": failure[1]}
        model, inputs = body.get("model"), body.get("input", [])
        if not model:
            return 400, {"error": "model is required"}
        if _tagged(model) not in self.models:
            return 404, {"error": f'model "{model}" not found, try pulling it first'}
        self.loaded.add(_tagged(model))
        inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        too_long = any(len(WORD_RE.findall(t)) > self.context_tokens for t in inputs)
        if too_long and body.get("truncate") is False:
            return 400, {"error": "the input length exceeds the context length"}
        vectors = [self.vector(t)[: body.get("dimensions") or None] for t in inputs]
        with self._lock:
            self.inputs_embedded += len(inputs)
            self.received_inputs.extend(inputs)
        tokens = sum(min(len(WORD_RE.findall(t)), self.context_tokens) for t in inputs)
        return 200, {
            "model": model, "embeddings": vectors,
            "total_duration": 1000, "load_duration": 100, "prompt_eval_count": tokens,
        }

    def handle_get(self, path: str) -> tuple[int, dict[str, Any]] | None:
        if path == "/api/version":
            return 200, {"version": "0.0.0-standin"}
        if path == "/api/ps":
            return 200, {"models": [{"name": m, "model": m, "size": 1 << 30, "size_vram": self.vram}
                                    for m in sorted(self.loaded)]}
        if path == "/api/tags":
            models = [
                {"name": m, "model": m, "modified_at": "2024-01-01T00:00:00Z", "size": 0,
                 "digest": hashlib.sha256(m.encode()).hexdigest()}
                for m in sorted(self.models)
            ]
            return 200, {"models": models}
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    standin: OllamaStandIn

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out has closed the socket before a stalled answer: expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        answer = self.server.standin.handle_get(self.path)
        if answer is None:
            self._send_text(404, "404 page not found")
        else:
            self._send_json(*answer)

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/api/embed":
            self._send_text(404, "404 page not found")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": "invalid JSON"})
            return
        self._send_json(*self.server.standin.handle_embed(body))

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json; charset=utf-8")

    def _send_text(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/plain; charset=utf-8")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


def embed_text(text: str, dim: int) -> list[float]:
    """Hashed bag of lower-cased words (weight 1) and their character trigrams (weight 0.3),
    plus a small constant feature so no vector is zero."""
    vector = [0.0] * dim
    _add(vector, "\0bias", 0.1)
    for word in WORD_RE.findall(text.lower()):
        _add(vector, word, 1.0)
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            _add(vector, "3:" + padded[i : i + 3], 0.3)
    return [round(x, 6) for x in vector]


def _add(vector: list[float], feature: str, weight: float) -> None:
    index, sign = _slot(feature, len(vector))
    vector[index] += sign * weight


@lru_cache(maxsize=65536)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    return digest % dim, (1.0 if (digest >> 63) & 1 else -1.0)


def _tagged(model: str) -> str:
    """Ollama treats `name` and `name:latest` as the same model."""
    return model if ":" in model else f"{model}:latest"

