"""The two backends side by side on one corpus: DuckDB (the file) and Qdrant (local mode; and a
server too when QDRANT_URL is set), driven through the store verbs an index run and a search use.

Corpus: the Python stdlib's .py files in sorted order (benchmarks/_common.py) chunked by SAI's
own prepare step (AST chunks, lexemes, shapes) until --chunks chunks (20,000). Vectors: a fast
stand-in embedder, one deterministic unit vector (384 dims) per content hash, so no model is
downloaded or run and both backends store the same vectors.

Each backend runs in its own child process (so its peak RSS is its own) and measures:
- index: create, then replace_files per batch of about 1,000 chunks (one write session each, as an
  index run writes);
- no-op: what an index run over an unchanged tree reads from the store (meta, files, known hashes);
- query p50/p95 per mode (top 50): semantic (nearest), lexical (BM25), hybrid (both, then the
  chunks of the fused top 10), and semantic within a glob's keys (a filtered search);
- duplicates: reading every chunk's vector and shape (all_chunks) plus SAI's duplicate edges;
- peak RSS of the child.

Local mode is qdrant-client's pure-Python engine for tests and single users: its figures are not
a performance claim about Qdrant (a server indexes in Rust, with HNSW and payload indexes).

    nice -n 10 python benchmarks/backends.py [--chunks 20000] [--queries 60]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import STDLIB, stdlib_files  # noqa: E402

from sai.config import load_config  # noqa: E402
from sai.models import FileRow, IndexMeta, NewChunk, SourceFile  # noqa: E402
from sai.text.lexical import query_lexemes  # noqa: E402

DIM = 384
BATCH = 1000
META = IndexMeta(backend="", embedder="ollama", model="stand-in", prefix_style="none", vector_dim=DIM,
                 chunker="ast", chunker_version=1)


def fast_vector(digest: str) -> np.ndarray:
    seed = int(hashlib.sha256(digest.encode()).hexdigest()[:16], 16)
    vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def build_corpus(count: int) -> tuple[list[list[NewChunk]], list[list[FileRow]], dict[str, np.ndarray]]:
    """Batches of whole files' chunks (about BATCH each), their file rows, a vector per hash."""
    from sai.indexing.prepare import prepare

    with tempfile.TemporaryDirectory() as cwd:
        config = load_config(flags={"root": str(STDLIB), "chunker": "ast"}, env={}, cwd=Path(cwd))
    batches: list[list[NewChunk]] = [[]]
    files: list[list[FileRow]] = [[]]
    total = 0
    for path in stdlib_files(limit_bytes=1_000_000):
        stat = path.stat()
        source = SourceFile(path.relative_to(STDLIB).as_posix(), str(path), "python", stat.st_size, stat.st_mtime_ns)
        prepared = prepare(source, config, None)
        if prepared.skip or not prepared.rows:
            continue
        if len(batches[-1]) >= BATCH:
            batches.append([])
            files.append([])
        batches[-1] += [NewChunk(*row) for row in prepared.rows]
        files[-1].append(FileRow(source.key, source.size, source.mtime_ns, prepared.file_hash, len(prepared.rows)))
        total += len(prepared.rows)
        if total >= count:
            break
    vectors = {c.content_hash: fast_vector(c.content_hash) for batch in batches for c in batch}
    return batches, files, vectors


def queries(batches: list[list[NewChunk]], n: int) -> list[tuple[str, np.ndarray, str]]:
    """(lexemes, vector, glob directory) per query: a named chunk's symbol words and a noisy copy
    of its vector; the directory of its file is the filtered search's scope."""
    named = [c for batch in batches for c in batch if c.symbol]
    rng = np.random.default_rng(7)
    out = []
    for chunk in named[:: max(1, len(named) // n)][:n]:
        vector = fast_vector(chunk.content_hash) + rng.standard_normal(DIM).astype(np.float32) * 0.05
        words = query_lexemes(chunk.symbol.replace("_", " ").replace(".", " "))
        out.append((words, vector / np.linalg.norm(vector), chunk.path.rsplit("/", 1)[0] if "/" in chunk.path else ""))
    return out


# -- one backend, in a child process -------------------------------------------------------------

def open_backend(name: str, where: Path):  # type: ignore[no-untyped-def]
    if name == "duckdb":
        from sai.store.duckdb import DuckDBStore

        return DuckDBStore(where / "bench.duckdb", collection="bench")
    from sai.store.qdrant import QdrantStore

    if name == "qdrant-local":
        return QdrantStore("bench", path=where / "qdrant")
    return QdrantStore(f"bench_{os.getpid()}", url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"),
                       timeout_s=60)


class Ops:
    """The read verbs this benchmark times, for either backend (DuckDB through its Connection)."""

    def __init__(self, reader, backend: str) -> None:  # type: ignore[no-untyped-def]
        self.r, self.duck = reader, backend == "duckdb"

    def noop(self) -> int:
        return len(self.r.meta()) + len(self.r.files()) + len(self.r.content_hashes())

    def semantic(self, vector: np.ndarray, keys: frozenset[str] | None = None) -> list:
        if self.duck:
            table = self.r.copies.vectors()
            return table.nearest(vector, 50, mask=table.mask(paths=keys) if keys else None)
        from sai.store.base import Scope

        return self.r.nearest(vector, 50, scope=Scope(keys=keys) if keys else None)

    def lexical(self, words: str) -> list:
        return self.r.lexical(words, 50)

    def top_chunk_ids(self, found: list) -> list[str]:
        """The chunk_ids of a hit list's first 10 (ids differ between backends, chunk_ids do not)."""
        return [row.chunk_id for row in self.chunks([int(i) for i, _ in found[:10]])]

    def chunks(self, ids: list[int]) -> list:
        return self.r.chunks(ids)

    def all_chunks(self) -> tuple:
        return self.r.all_chunks()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    return {"p50_ms": round(statistics.median(ms), 2), "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2)}


def run_backend(name: str, corpus: Path, where: Path) -> dict:
    from sai.duplicates.edges import Shapes
    from sai.duplicates.score import duplicate_edges

    with corpus.open("rb") as f:
        batches, files, vectors, asked = pickle.load(f)
    store = open_backend(name, where)
    out: dict = {"backend": name}
    start = time.perf_counter()
    with store.write() as writer:
        if writer.has_index():
            writer.drop()
        writer.create(META)
    for batch, rows in zip(batches, files, strict=True):
        with store.write() as writer:
            writer.replace_files(rows, batch, np.stack([vectors[c.content_hash] for c in batch]))
    out["index_s"] = round(time.perf_counter() - start, 2)
    with store.read() as reader:
        ops = Ops(reader, name)
        out["noop_s"] = round(timed(ops.noop), 3)
        out["semantic"] = percentiles([timed(lambda q=q: ops.semantic(q[1])) for q in asked])
        out["lexical"] = percentiles([timed(lambda q=q: ops.lexical(q[0])) for q in asked])
        keys = [r.path for rows in files for r in rows]
        keys_of = {d: frozenset(k for k in keys if k.startswith(d + "/")) or None for _, _, d in asked}
        out["semantic_glob"] = percentiles([timed(lambda q=q: ops.semantic(q[1], keys_of[q[2]])) for q in asked])

        def hybrid(q: tuple) -> None:
            found = ops.semantic(q[1])[:25] + ops.lexical(q[0])[:25]
            ops.chunks([int(i) for i, _ in found[:10]])

        out["hybrid"] = percentiles([timed(lambda q=q: hybrid(q)) for q in asked])
        out["top10"] = {"semantic": [ops.top_chunk_ids(ops.semantic(q[1])) for q in asked],
                        "lexical": [ops.top_chunk_ids(ops.lexical(q[0])) for q in asked]}
        clock = time.perf_counter()
        rows, matrix, shapes = ops.all_chunks()
        out["all_chunks_s"] = round(time.perf_counter() - clock, 2)
        keep = [k for k, s in enumerate(shapes) if s]
        edges = duplicate_edges(matrix[keep], Shapes.of([shapes[k] for k in keep]), top_k=10, min_score=0.75)
        out["duplicates_s"] = round(time.perf_counter() - clock, 2)
        out["chunks"], out["edges"] = len(rows), len(edges.i)
    store.close()
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--child", nargs=3, metavar=("BACKEND", "CORPUS", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_backend(args.child[0], Path(args.child[1]), Path(args.child[2]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        clock = time.perf_counter()
        batches, files, vectors = build_corpus(args.chunks)
        asked = queries(batches, args.queries)
        corpus = Path(tmp) / "corpus.pickle"
        with corpus.open("wb") as f:
            pickle.dump((batches, files, vectors, asked), f)
        total = sum(len(b) for b in batches)
        print(f"corpus: {total} chunks of {sum(len(f) for f in files)} stdlib files "
              f"(prepared in {time.perf_counter() - clock:.1f}s), {len(asked)} queries")
        names = ["duckdb", "qdrant-local"] + (["qdrant-server"] if os.environ.get("QDRANT_URL") else [])
        results = []
        for name in names:
            where = Path(tmp) / name
            where.mkdir()
            done = subprocess.run([sys.executable, __file__, "--child", name, str(corpus), str(where)],
                                  capture_output=True, text=True, check=True)
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps({k: v for k, v in results[-1].items() if k != "top10"}), flush=True)
    print_table(results)
    print_overlap(results)


def print_overlap(results: list[dict]) -> None:
    """How many of DuckDB's top 10 each other backend also returns, per mode (mean over queries)."""
    base = results[0]["top10"]
    for other in results[1:]:
        for mode in ("semantic", "lexical"):
            pairs = zip(base[mode], other["top10"][mode], strict=True)
            shared = [len(set(a) & set(b)) / max(1, len(a)) for a, b in pairs]
            print(f"{other['backend']} {mode} top-10 overlap with duckdb: {statistics.mean(shared):.2f}")


def print_table(results: list[dict]) -> None:
    rows = [("index (s)", "index_s"), ("no-op reads (s)", "noop_s"), ("duplicates incl. read (s)", "duplicates_s"),
            ("all_chunks read (s)", "all_chunks_s"), ("peak RSS (MB)", "peak_rss_mb")]
    print("\n| measure | " + " | ".join(r["backend"] for r in results) + " |")
    print("|---|" + "---|" * len(results))
    for label, key in rows:
        print(f"| {label} | " + " | ".join(str(r[key]) for r in results) + " |")
    for mode in ("semantic", "lexical", "hybrid", "semantic_glob"):
        print(f"| {mode} p50 / p95 (ms) | " + " | ".join(
            f"{r[mode]['p50_ms']} / {r[mode]['p95_ms']}" for r in results) + " |")


if __name__ == "__main__":
    main()
