"""Helpers shared by the duplicate benchmarks: real stdlib chunks, cached MiniLM vectors, peak RSS.

Nothing here is part of SAI; the benchmarks import it as `from _common import ...` (run them as
scripts: `python benchmarks/duplicates_scale.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import sysconfig
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np

STDLIB = Path(os.environ.get("SAI_BENCH_STDLIB") or sysconfig.get_paths()["stdlib"])  # this Python's
CACHE_DIR = Path(os.environ.get("SAI_BENCH_CACHE", "/tmp/sai-bench"))
PRUNED = {"test", "tests", "idlelib", "site-packages", "__pycache__", "lib2to3", "turtledemo"}


@dataclass(frozen=True)
class StdChunk:
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    text: str


def bytes_under(path: Path) -> int:
    """The bytes of every file under `path` (0 when it is absent)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def stdlib_files(limit_bytes: int | None = None) -> list[Path]:
    """The stdlib's .py files in sorted order (tests and vendored trees left out)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(STDLIB):
        dirnames[:] = sorted(d for d in dirnames if d not in PRUNED)
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    found.sort(key=lambda p: p.relative_to(STDLIB).as_posix())
    if limit_bytes is not None:
        found = [p for p in found if p.stat().st_size <= limit_bytes]
    return found


def stdlib_chunks(count: int, *, min_lines: int = 3) -> list[StdChunk]:
    """The first `count` distinct AST chunks (>= min_lines lines) of the stdlib, in walk order."""
    from sai.chunking.treesitter import TreeSitterChunker

    chunker = TreeSitterChunker(max_chunk_chars=2000)
    seen: set[str] = set()
    out: list[StdChunk] = []
    for path in stdlib_files(limit_bytes=1_000_000):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        key = path.relative_to(STDLIB).as_posix()
        for c in chunker.chunk(key, text, "python"):
            if c.end_line - c.start_line + 1 < min_lines or c.text in seen:
                continue
            seen.add(c.text)
            out.append(StdChunk(key, c.start_line, c.end_line, c.symbol, c.text))
            if len(out) == count:
                return out
    return out


def cached_vectors(texts: list[str], *, label: str) -> np.ndarray:
    """MiniLM vectors of `texts`, embedded once and kept under CACHE_DIR (keyed by content)."""
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
    path = CACHE_DIR / f"{label}-{len(texts)}-{digest}.npy"
    if path.is_file():
        return np.load(path)
    from sai.embedders.local import LocalEmbedder

    log(f"embedding {len(texts)} chunks with all-MiniLM-L6-v2 (cached at {path}) ...")
    vectors = LocalEmbedder().embed_documents(texts)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def cached_text_vectors(texts: list[str], *, label: str) -> np.ndarray:
    """MiniLM vectors of `texts`, each embedded once: kept under CACHE_DIR per text (keyed by its
    hash), so a changed list embeds only the texts not seen before."""
    path = CACHE_DIR / f"{label}-by-text.npz"
    known: dict[str, np.ndarray] = {}
    if path.is_file():
        with np.load(path) as stored:
            known = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
    keys = [hashlib.sha256(t.encode()).hexdigest()[:24] for t in texts]
    missing = list(dict.fromkeys(k for k in keys if k not in known))
    if missing:
        from sai.embedders.local import LocalEmbedder

        by_key = dict(zip(keys, texts, strict=True))
        log(f"embedding {len(missing)} chunks with all-MiniLM-L6-v2 (cached at {path}) ...")
        vectors = LocalEmbedder().embed_documents([by_key[k] for k in missing])
        known.update(zip(missing, vectors, strict=True))
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        np.savez(path, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
    return np.stack([known[k] for k in keys]).astype(np.float32)


def peak_rss_mb() -> float:
    """This process's peak resident set (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def emit_json(payload: dict) -> None:
    """The one stdout line a child process hands back to its parent."""
    print(json.dumps(payload), flush=True)


class StandInHandler(BaseHTTPRequestHandler):
    """The skeleton of a benchmark's stand-in Ollama: its counters on GET, the inputs of an embed
    request, a JSON answer; a subclass's do_POST embeds. Its server holds inputs, requests, busy_s
    (and may hold last_s: time.time() when its last answer was ready)."""

    protocol_version = "HTTP/1.1"
    VRAM = 0  # `/api/ps`'s size_vram of the model: 0, a model on this machine's cores (a subclass on a device says so)

    def do_GET(self) -> None:  # noqa: N802
        srv = self.server
        if self.path == "/api/ps":  # where the model runs (OllamaEmbedder.runs_elsewhere)
            self._send(json.dumps({"models": [{"model": "nomic-embed-text:latest", "size_vram": self.VRAM}]}).encode())
            return
        self._send(json.dumps({"inputs": srv.inputs, "requests": srv.requests,  # type: ignore[attr-defined]
                               "busy_s": srv.busy_s,  # type: ignore[attr-defined]
                               "last_s": getattr(srv, "last_s", 0.0)}).encode())

    def _request(self) -> tuple[dict, list[str]]:
        """The request's body and its inputs as a list."""
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        inputs = body.get("input") or []
        return body, [inputs] if isinstance(inputs, str) else inputs

    def _send(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass
