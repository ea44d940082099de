"""Filtered search: latency of a selective and a broad filter against no filter, per mode.

Indexes a slice of the standard library (`--chunks`, default about 20,000 chunks) with the
Ollama stand-in of tests/ollama_standin.py (384-d hashed vectors: no model, so the figures are
SAI's own work plus one loopback embedding request), then times `search()` in one warm process,
interleaving the filters so that load drift hits them alike. Filters choose the searched subset
(docs/design.md, "Search"): the vector side masks the in-memory matrix, the BM25 side restricts
its postings to the subset's chunk ids. Also prints the vector table's load time (what the first
query after a write pays) and one exact scan on its own.

    .venv/bin/python benchmarks/filtered_search.py [--chunks 20000] [--queries 40] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from ollama_standin import OllamaStandIn  # noqa: E402

from sai.config import load_config  # noqa: E402
from sai.indexing import indexer  # noqa: E402
from sai.project import Project  # noqa: E402
from sai.query import search  # noqa: E402

STDLIB = Path(os.environ.get("SAI_BENCH_STDLIB") or sysconfig.get_paths()["stdlib"])  # this Python's
QUERIES = ("parse a header line", "encode the message body", "open a socket connection", "read the config file",
           "format a date", "split words", "compress data", "handle an error", "quote a string", "iterate lines")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="sai-filtered-") as tmp, OllamaStandIn(dim=384) as server:
        root = args.keep or Path(tmp) / "tree"
        if not (root / "sai-cfg.yml").is_file():
            build_tree(root, args.chunks)
            (root / "sai-cfg.yml").write_text("ext: [py]\nembedder: ollama\n", encoding="utf-8")
        project = Project(load_config(cwd=root, env={"OLLAMA_HOST": server.url}))
        started = time.perf_counter()
        report = indexer.index(project)
        print(f"index: {report.chunks} chunks from {report.files} files in {time.perf_counter() - started:.1f} s")
        selective = smallest_file_glob(project)
        filters = {"none": {}, f"selective (path_glob {selective})": {"path_glob": selective},
                   "broad (path_glob email/**)": {"path_glob": "email/**"}, "broad (language py)": {"language": "py"}}
        table_load(project)
        for mode in ("semantic", "lexical", "hybrid"):
            times: dict[str, list[float]] = {name: [] for name in filters}
            for n in range(args.queries):
                for name, given in filters.items():
                    query = QUERIES[n % len(QUERIES)]
                    start = time.perf_counter()
                    search.search(project, query, limit=8, mode=mode, **given)
                    times[name].append(time.perf_counter() - start)
            for name, seconds in times.items():
                print(f"{mode:8s} {name:45s} {figures(seconds)}", flush=True)
        project.close()
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20000, help="about this many chunks (20000)")
    parser.add_argument("--queries", type=int, default=40, help="queries per mode and filter (40)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build the tree and index in DIR, or reuse them")
    return parser.parse_args()


def build_tree(root: Path, chunks: int) -> None:
    """Stdlib .py files in sorted order until their size suggests `chunks` chunks (~1 per 450 bytes)."""
    budget = chunks * 450
    for path in sorted(STDLIB.rglob("*.py")):
        rel = path.relative_to(STDLIB)
        if any(part in ("site-packages", "__pycache__") for part in rel.parts):
            continue
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        budget -= path.stat().st_size
        if budget <= 0:
            break


def smallest_file_glob(project: Project) -> str:
    with project.store.read() as reader:
        counts = {key: row.chunk_count for key, row in reader.files().items() if row.chunk_count >= 4}
    return min(counts, key=lambda key: (counts[key], key))


def table_load(project: Project) -> None:
    with project.store.read() as reader:
        conn = reader.conn  # the DuckDB backend's own tables: what loading them costs
        start = time.perf_counter()
        table = conn.reads.vector_rows()
        loaded = time.perf_counter() - start
        vectors = reader.copies.vectors()
    query = vectors.matrix[0]
    start = time.perf_counter()
    for _ in range(20):
        vectors.nearest(query, 50)
    scan = (time.perf_counter() - start) / 20
    print(f"vector table: {table.num_rows} rows x {vectors.matrix.shape[1]} read in {loaded * 1000:.0f} ms; "
          f"one exact scan + top 50: {scan * 1000:.1f} ms")


def figures(seconds: list[float]) -> str:
    ms = np.sort(np.array(seconds) * 1000)
    return (f"p50 {statistics.median(ms):6.1f} ms  p95 {ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]:6.1f} ms")


if __name__ == "__main__":
    raise SystemExit(main())
