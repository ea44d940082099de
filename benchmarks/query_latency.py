"""Query latency: `sai.query.search.search` per mode in one warm process, and `sai --query-only` cold.

Builds the stdlib-slice index of benchmarks/index_throughput.py (or reuses one with --index DIR),
loads the model once (excluded), then issues the same deterministic natural-language queries
(first docstring lines of the corpus's functions) through every mode search() offers,
interleaved so machine-load drift hits all modes alike. Prints p50/p95/max per mode in ms
(targets: p50 < 40 ms semantic, < 60 ms hybrid) and the share spent in embed_query; then runs
`sai --query-only` as a subprocess a few times (process start + model load + query; target
<= 2 s), and one `sai mcp` stdio server, printing its RSS after its first search (<= 300 MB).

    .venv/bin/python benchmarks/query_latency.py [--index DIR] [--queries N]
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from index_throughput import (
    OpenCounter,
    TimingEmbedder,
    load_local_embedder,
    open_project,
    prepare_tree,
)

from sai.indexing.indexer import index
from sai.query import search as search_module
from sai.store.duckdb.lease import READ_LEASE_S

TARGETS_MS = {"semantic": 40.0, "hybrid": 60.0}


def corpus_queries(root: Path, count: int) -> list[str]:
    """`count` queries, evenly spread over the functions (sorted by file, line) with a docstring."""
    found: list[str] = []
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in sorted(nodes, key=lambda n: n.lineno):
            doc = ast.get_docstring(node)
            first = doc.strip().splitlines()[0].strip().rstrip(".") if doc and doc.strip() else ""
            words = first.split()
            if len(words) >= 3:
                found.append(" ".join(words[:12]))
    unique = list(dict.fromkeys(found))
    if len(unique) <= count:
        return unique
    step = len(unique) / count
    return [unique[int(i * step)] for i in range(count)]


def available_modes() -> list[str | None]:
    """The modes search() takes, or [None] when it has no `mode` parameter yet."""
    if "mode" not in inspect.signature(search_module.search).parameters:
        return [None]
    modes = getattr(search_module, "MODES", ("semantic", "lexical", "hybrid"))
    return [m for m in ("semantic", "lexical", "hybrid") if m in modes]


def run_search(project, query: str, mode: str | None, limit: int) -> list:
    if mode is None:
        return search_module.search(project, query, limit=limit)
    return search_module.search(project, query, limit=limit, mode=mode)


def measure_in_process(root: Path, queries: list[str], limit: int, idle_queries: int) -> None:
    real, load_s = load_local_embedder()
    print(f"model load (excluded): {load_s:.2f} s; embedder threads: {getattr(real, 'threads', '?')}")
    proxy = TimingEmbedder(real)
    project = open_project(root, proxy)
    modes = available_modes()
    times: dict[str | None, list[float]] = {m: [] for m in modes}
    embed: dict[str | None, list[float]] = {m: [] for m in modes}
    opened: dict[str | None, list[float]] = {m: [] for m in modes}
    empty = dict.fromkeys(modes, 0)
    try:
        with OpenCounter() as opens:
            for mode in modes:  # warm-up: first open of the index file, first FTS/HNSW touch
                start = time.perf_counter()
                run_search(project, "warm up query", mode, limit)
                print(f"first query, mode {mode or 'default'}: "
                      f"{1000 * (time.perf_counter() - start):.1f} ms")
            for query in queries:
                for mode in modes:
                    proxy.reset()
                    opens.reset()
                    start = time.perf_counter()
                    hits = run_search(project, query, mode, limit)
                    times[mode].append(time.perf_counter() - start)
                    embed[mode].append(proxy.seconds)
                    opened[mode].append(opens.seconds)
                    empty[mode] += not hits
            idle = idle_latency(project, queries[:idle_queries], modes[0], limit, opens)
    finally:
        project.close()
    print(f"{len(queries)} queries per mode, limit {limit}, modes interleaved, back to back:")
    print(f"  {'mode':<9} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'embed p50':>10} "
          f"{'reopens':>8} {'reopen ms':>10} {'empty':>6}  target")
    for mode in modes:
        ms = 1000 * np.array(times[mode])
        p50, p95 = np.percentile(ms, 50), np.percentile(ms, 95)
        reopen = [s for s in opened[mode] if s]
        target = TARGETS_MS.get(mode or "semantic")
        verdict = "" if target is None else f"p50 < {target:g}: {'PASS' if p50 < target else 'FAIL'}"
        print(f"  {mode or 'default':<9} {p50:8.1f} {p95:8.1f} {ms.max():8.1f} "
              f"{1000 * np.median(embed[mode]):10.1f} {len(reopen):8d} "
              f"{1000 * np.median(reopen) if reopen else 0.0:10.1f} {empty[mode]:6d}  {verdict}")
    if idle:
        ms = 1000 * np.array(idle)
        print(f"  after {READ_LEASE_S + 0.1:g} s idle (read lease expired), {len(idle)} {modes[0] or 'default'} "
              f"queries: p50 {np.percentile(ms, 50):.1f} ms, max {ms.max():.1f} ms")


def idle_latency(project, queries: list[str], mode: str | None, limit: int,
                 opens: OpenCounter) -> list[float]:
    """Latency of queries that each come after the idle read lease has closed the index file."""
    took = []
    for query in queries:
        time.sleep(READ_LEASE_S + 0.1)
        start = time.perf_counter()
        run_search(project, query, mode, limit)
        took.append(time.perf_counter() - start)
    return took


def measure_cli(root: Path, queries: list[str], runs: int) -> None:
    sai = shutil.which("sai", path=str(Path(sys.executable).parent)) or "sai"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAI_")}
    print(f"end to end: {sai} --query-only --query Q --silent (cwd {root}), {runs} runs:")
    for query in queries[:runs]:
        start = time.perf_counter()
        done = subprocess.run([sai, "--query-only", "--query", query, "--silent"], cwd=root,
                              capture_output=True, text=True, env=env)
        took = time.perf_counter() - start
        status = "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[:200]}"
        print(f"  {took:6.2f} s  {status}  ({query!r})")


def server_rss_mb(config: Path) -> float:
    """VmRSS of this process's `sai mcp --config CONFIG` child (the stdio client started it)."""
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            cmdline = (status.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields["PPid"]) == os.getpid() and b"mcp" in cmdline and str(config).encode() in cmdline:
            return int(fields["VmRSS"].split()[0]) / 1024
    return float("nan")


def measure_mcp_rss(root: Path, query: str) -> None:
    """RSS of one `sai mcp` stdio server at start and after its first search (the model loaded)."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    config = root / "sai-cfg.yml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAI_")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "sai", "mcp", "--config", str(config)], env=env)

    async def run() -> None:
        async with Client(stdio_client(params), mode="legacy") as client:
            await client.call_tool("sai_index_status", {})
            started = server_rss_mb(config)
            begin = time.perf_counter()
            await client.call_tool("sai_search_code", {"query": query, "limit": 8})
            took = time.perf_counter() - begin
            print(f"sai mcp (stdio): RSS {started:.0f} MB at start, {server_rss_mb(config):.0f} MB after its "
                  f"first search ({took:.2f} s, model load included); target <= 300 MB")
            # DuckDB hands back the memory of reading the vectors over a few seconds, and closes
            # the idle read lease after READ_LEASE_S: what the server holds between searches
            await anyio.sleep(READ_LEASE_S + 3)
            settled = server_rss_mb(config)
            await client.call_tool("sai_search_code", {"query": query + " again", "limit": 8})
            print(f"  {settled:.0f} MB {READ_LEASE_S + 3:g} s later, {server_rss_mb(config):.0f} MB after a "
                  "second search")

    anyio.run(run)


def build_index(root: Path, lines: int) -> None:
    prepare_tree(root, lines)
    real, _ = load_local_embedder()
    project = open_project(root, real)
    try:
        start = time.perf_counter()
        report = index(project)
        print(f"built index in {time.perf_counter() - start:.1f} s: {report}")
    finally:
        project.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", metavar="DIR", help="a tree indexed by index_throughput.py --keep")
    parser.add_argument("--lines", type=int, default=20000, help="corpus size when building (20000)")
    parser.add_argument("--queries", type=int, default=120, help="queries per mode (120)")
    parser.add_argument("--limit", type=int, default=8, help="hits per query (8)")
    parser.add_argument("--cli-runs", type=int, default=2, help="sai subprocess runs (2)")
    parser.add_argument("--idle-queries", type=int, default=10, help="queries after an idle gap (10)")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}  (cores: {os.cpu_count()})")
    tmp = None
    if args.index:
        root = Path(args.index).resolve()
        if not (root / "sai-cfg.yml").is_file():
            parser.error(f"{root} has no sai-cfg.yml; build it with index_throughput.py --keep {root}")
    else:
        tmp = tempfile.TemporaryDirectory(prefix="sai-bench-")
        root = Path(tmp.name)
        build_index(root, args.lines)
    try:
        queries = corpus_queries(root, args.queries)
        measure_in_process(root, queries, args.limit, args.idle_queries)
        measure_cli(root, queries, args.cli_runs)
        measure_mcp_rss(root, queries[0])
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"load average after:  {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
