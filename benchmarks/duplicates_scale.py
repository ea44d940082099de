"""How long find_duplicates takes, and how much memory, on indexes of 5k, 20k and 100k chunks.

    python benchmarks/duplicates_scale.py [--sizes 5000,20000,100000] [--top-k 10] [--min-score F]

The chunks are real: the first 5,000 distinct AST chunks (>= 3 lines) of the Python stdlib,
embedded once with all-MiniLM-L6-v2 (cached under /tmp/sai-bench). Larger indexes repeat those
chunks under `copyNN/` paths with *synthetic* vectors: copy c is the real set turned by a fixed
random rotation R_c that moves every vector by the same angle (cos 0.6 to its source). A
rotation keeps every similarity inside a copy, so each copy has exactly the real set's
near-duplicate structure (at 0.8, 40% of the real chunks sit in a cluster: the stdlib is full of
boilerplate), while a chunk and its rotated twins stay below any duplicate threshold. Their
token-shape signatures are salted per copy in the same spirit (see salted()). Rotated
copies spread over more directions than one model's embeddings do, which makes the screen in
sai/duplicates/exact.py pass more pairs than on real code: a pessimistic stand-in.
Rows go into a real DuckDB index through sai's store (no HNSW index: the
duplicate search scans every vector and does not use it). Each size is then measured in a fresh
subprocess: `find_duplicates(top_k=10)` end to end, loading the vectors from DuckDB included, and
the process's peak RSS (ru_maxrss, which counts numpy/BLAS memory that tracemalloc misses).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import (
    CACHE_DIR,
    cached_vectors,
    current_rss_mb,
    emit_json,
    log,
    peak_rss_mb,
    stdlib_chunks,
)

from sai.config import load_config
from sai.models import NewChunk, sha256_hex
from sai.project import Project
from sai.text.lexical import lexemes
from sai.text.shape import signature

BASE = 5000
TWIN_COS = 0.6  # a chunk against its own rotated copy
BATCH = 10_000


def project_at(root: Path) -> Project:
    root.mkdir(parents=True, exist_ok=True)
    config = load_config(cwd=root, env={}, flags={"embedder": "local", "root": str(root)})
    return Project(config)


def synthetic(size: int, vectors: np.ndarray, seed: int = 11) -> np.ndarray:
    """Rows 0..size-1: the real vectors, then rotated copies of them (see the module doc)."""
    rng = np.random.default_rng(seed)
    parts, held = [vectors.astype(np.float32)], len(vectors)
    turn = np.arccos(TWIN_COS)
    while held < size:
        basis, _ = np.linalg.qr(rng.standard_normal((vectors.shape[1], vectors.shape[1])))
        coords = vectors.astype(np.float64) @ basis
        even, odd = coords[:, 0::2].copy(), coords[:, 1::2].copy()
        coords[:, 0::2] = even * np.cos(turn) - odd * np.sin(turn)
        coords[:, 1::2] = even * np.sin(turn) + odd * np.cos(turn)
        parts.append((coords @ basis.T).astype(np.float32))
        held += len(vectors)
    return np.vstack(parts)[:size]


def row(chunk, copy: int) -> NewChunk:
    path = chunk.path if copy == 0 else f"copy{copy:02d}/{chunk.path}"
    return NewChunk(
        path=path, language="python", start_line=chunk.start_line, end_line=chunk.end_line, symbol=chunk.symbol,
        text=chunk.text, content_hash=sha256_hex(f"{copy}\0{chunk.text}"), file_hash=sha256_hex(path),
        no_duplicate=False, lexemes=lexemes(chunk.text, path=path, symbol=chunk.symbol),
        shape=salted(signature(chunk.text, "python"), copy),
    )


def salted(shape: bytes, copy: int) -> bytes:
    """The shape signature of a copy: each minimum XORed with the copy's fixed random word, so a
    copy keeps the real set's shape similarities within itself (as its rotation keeps cosines)
    while a chunk and its copies share no minimum, as their vectors share no closeness."""
    if copy == 0 or not shape:
        return shape
    words = np.frombuffer(shape, dtype="<u4").copy()
    salt = np.random.default_rng(copy).integers(1, 2**32, size=len(words) - 1, dtype=np.uint64)
    words[:-1] ^= salt.astype("<u4")  # the last word is the shape's element count: kept
    return words.astype("<u4").tobytes()


def build(root: Path, size: int, chunks, vectors: np.ndarray) -> float:
    """Write `size` rows into the index under `root` (reused when already complete)."""
    project = project_at(root)
    try:
        if project.store.exists:
            with project.store.read() as reader:
                meta = reader.meta()
                if (reader.has_index() and reader.chunk_count() == size
                        and meta.get("chunking") == project.chunking_signature()):
                    return 0.0
            Path(project.store.location).unlink()
        started = time.perf_counter()
        matrix = synthetic(size, vectors)
        with project.store.write() as writer:
            writer.create(project.expected_meta(matrix.shape[1]))
        for start in range(0, size, BATCH):
            stop = min(size, start + BATCH)
            rows = [row(chunks[i % BASE], i // BASE) for i in range(start, stop)]
            with project.store.write() as writer:  # no file rows: duplicates read chunks only
                writer.replace_files([], rows, matrix[start:stop])
        return time.perf_counter() - started
    finally:
        project.close()


def child(root: Path, top_k: int, min_score: float | None) -> None:
    """Run in a fresh process: time find_duplicates end to end and report peak RSS."""
    from sai.duplicates.clusters import find_duplicates

    project = project_at(root)
    threshold = project.config.similarity.duplicate_min_score if min_score is None else min_score
    baseline = current_rss_mb()
    started = time.perf_counter()
    clusters = find_duplicates(project, top_k=top_k, min_score=threshold, max_clusters=10**9)
    seconds = time.perf_counter() - started
    peak = peak_rss_mb()
    started = time.perf_counter()
    with project.store.read() as reader:
        rows, _, _ = reader.all_chunks()
    load = time.perf_counter() - started
    project.close()
    emit_json({
        "chunks": len(rows), "seconds": seconds, "load_seconds": load, "min_score": threshold,
        "clusters": len(clusters), "members": sum(c.size for c in clusters),
        "peak_rss_mb": peak, "baseline_rss_mb": baseline,
    })


def measure(root: Path, top_k: int, min_score: float | None) -> dict:
    cmd = [sys.executable, __file__, "--child", str(root), "--top-k", str(top_k)]
    if min_score is not None:
        cmd += ["--min-score", str(min_score)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child failed for {root}:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000,100000")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--min-score", type=float, default=None, help="default: the model's")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.top_k, args.min_score)
        return
    chunks = stdlib_chunks(BASE)
    vectors = cached_vectors([c.text for c in chunks], label="stdlib-minilm")
    print(f"{len(chunks)} real stdlib chunks embedded with all-MiniLM-L6-v2; larger sizes repeat "
          f"them with rotated vectors (each copy keeps the real set's similarities; cos "
          f"{TWIN_COS:g} to its source)")
    print(f"{'chunks':>8}  {'vectors':<22}  {'find_duplicates':>15}  {'of which load':>13}  "
          f"{'min_score':>9}  {'clusters':>8}  {'members':>7}  {'peak RSS':>9}  {'before call':>11}")
    for size in (int(s) for s in args.sizes.split(",")):
        root = CACHE_DIR / f"dups-rotated-{size}"
        built = build(root, size, chunks, vectors)
        if built:
            log(f"built the {size}-chunk index in {built:.1f} s")
        r = measure(root, args.top_k, args.min_score)
        kind = "real" if size <= BASE else f"real + {size - BASE} rotated"
        print(f"{r['chunks']:>8}  {kind:<22}  {r['seconds']:>13.2f} s  {r['load_seconds']:>11.2f} s  "
              f"{r['min_score']:>9g}  {r['clusters']:>8}  {r['members']:>7}  "
              f"{r['peak_rss_mb']:>6.0f} MB  {r['baseline_rss_mb']:>8.0f} MB  "
              f"(load avg {os.getloadavg()[0]:.1f})", flush=True)
    print(f"top_k {args.top_k}; times are wall-clock on this {os.cpu_count()}-core machine "
          "(the load average shows how busy it was); peak RSS is the whole child process "
          "(Python, duckdb, numpy included)")


if __name__ == "__main__":
    main()
