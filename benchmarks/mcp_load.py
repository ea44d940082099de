"""MCP server under load: concurrent `sai_search_code` calls against one `sai mcp` process.

Indexes a snapshot of a real tree (default: this repository's `sai/` package; `--tree DIR` for
another, e.g. a slice of the stdlib) with the Ollama stand-in of tests/ollama_standin.py, so no model is needed
(`--embedder local` uses all-MiniLM-L6-v2 instead). Then starts one server and drives it with
`--clients` concurrent workers issuing `--calls` searches in total:

- stdio (default): one server process speaks to one client session, so the workers share that
  session and their requests are multiplexed by JSON-RPC id: the server answers them
  concurrently from its worker threads;
- `--transport http`: one `sai mcp --http` process and one separate client session per worker.

Every answer is checked against the answer the same query got in a sequential warm-up (same
hits, same scores), so crossed or corrupted responses under concurrency fail the run. Prints
p50/p95/max latency and throughput. Not part of the test run.

    .venv/bin/python benchmarks/mcp_load.py [--clients 8] [--calls 200]
        [--transport stdio|http] [--tree DIR] [--embedder ollama|local]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from ollama_standin import OllamaStandIn  # noqa: E402

from sai.config import load_config  # noqa: E402
from sai.indexing.indexer import index  # noqa: E402
from sai.models import EMBEDDERS  # noqa: E402
from sai.project import Project  # noqa: E402

Answer = list[tuple[str, int, int, float]]


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="sai-mcp-load-") as tmp, standin(args.embedder) as url:
        # a snapshot of the tree: an edit to the live tree during the run would flip hits'
        # `stale` flags and make answers differ from the warm-up for a reason that is not load
        tree = Path(shutil.copytree(args.tree.resolve(), Path(tmp) / "tree"))
        config = write_config(Path(tmp), tree, args.embedder)
        env = {"OLLAMA_HOST": url} if url else {}
        build_index(config, env)
        queries = corpus_queries(tree, args.queries)
        baseline = in_process(config, env, queries, args.limit)
        print(f"{len(queries)} distinct queries, {args.calls} calls, {args.clients} concurrent "
              f"clients over {args.transport}")
        run = run_stdio if args.transport == "stdio" else run_http
        latencies, wall = anyio.run(run, config, env, queries, args)
    report(latencies, wall, baseline)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--queries", type=int, default=40, help="distinct queries, cycled")
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--tree", type=Path, default=REPO / "sai")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="ollama")
    return parser.parse_args()


@contextlib.contextmanager
def standin(embedder: str) -> Iterator[str | None]:
    if embedder != "ollama":
        yield None
        return
    with OllamaStandIn() as server:
        yield server.url


def write_config(tmp: Path, tree: Path, embedder: str) -> Path:
    config = tmp / "sai-cfg.yml"
    config.write_text(
        f'root: "{tree}"\nembedder: {embedder}\nduckdb:\n  path: "{tmp / "index.duckdb"}"\n',
        encoding="utf-8",
    )
    return config


def build_index(config: Path, env: dict[str, str]) -> None:
    project = Project(load_config(config_file=str(config), env=env))
    try:
        start = time.perf_counter()
        done = index(project)
        print(f"index: {done.chunks} chunks from {done.files} files in "
              f"{time.perf_counter() - start:.1f} s")
    finally:
        project.close()


def corpus_queries(tree: Path, count: int) -> list[str]:
    """Function names of the tree as words ("load_config" -> "load config"), evenly spread."""
    names: list[str] = []
    for path in sorted(tree.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        names += [m.replace("_", " ").strip() for m in re.findall(r"def (\w+)", text)]
    unique = [n for n in dict.fromkeys(names) if len(n.split()) >= 2]
    step = max(1, len(unique) // count)
    return unique[::step][:count]


def in_process(config: Path, env: dict[str, str], queries: list[str], limit: int) -> list[float]:
    """Latencies of the same searches through sai.query.search.search() in this process, one at a time:
    what the MCP layer (and concurrency) adds is the difference."""
    from sai.query.search import search as core_search

    project = Project(load_config(config_file=str(config), env=env))
    try:
        core_search(project, queries[0], limit=limit)  # first call opens the index
        latencies = []
        for query in queries:
            start = time.perf_counter()
            core_search(project, query, limit=limit)
            latencies.append(time.perf_counter() - start)
        return latencies
    finally:
        project.close()


def server_argv(config: Path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "sai", "mcp", "--config", str(config), *flags]


async def run_stdio(
    config: Path, env: dict[str, str], queries: list[str], args: argparse.Namespace
) -> tuple[list[float], float]:
    command, *argv = server_argv(config)
    params = StdioServerParameters(command=command, args=argv, env=env)
    async with Client(stdio_client(params), mode="legacy") as client:
        expected = await warm_up(client, queries, args.limit)
        return await drive([client] * args.clients, expected, queries, args)


async def run_http(
    config: Path, env: dict[str, str], queries: list[str], args: argparse.Namespace
) -> tuple[list[float], float]:
    port = free_port()
    proc = subprocess.Popen(server_argv(config, "--http", f"127.0.0.1:{port}"),
                            env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    try:
        await wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(Client(url)) for _ in range(args.clients)]
            expected = await warm_up(clients[0], queries, args.limit)
            return await drive(clients, expected, queries, args)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def warm_up(client: Client, queries: list[str], limit: int) -> dict[str, Answer]:
    return {q: await search(client, q, limit) for q in queries}


async def search(client: Client, query: str, limit: int) -> Answer:
    result = await client.call_tool("sai_search_code", {"query": query, "limit": limit})
    if result.is_error:
        raise RuntimeError(f"sai_search_code failed: {result.content}")
    hits = result.structured_content["hits"]
    return [(h["path"], h["start_line"], h["end_line"], h["score"]) for h in hits]


async def drive(
    clients: list[Client], expected: dict[str, Answer], queries: list[str],
    args: argparse.Namespace,
) -> tuple[list[float], float]:
    """Run args.calls searches from len(clients) concurrent workers; check every answer."""
    todo = [queries[i % len(queries)] for i in range(args.calls)]
    latencies: list[float] = []

    async def worker(client: Client) -> None:
        while todo:
            query = todo.pop()
            start = time.perf_counter()
            answer = await search(client, query, args.limit)
            latencies.append(time.perf_counter() - start)
            if answer != expected[query]:
                raise AssertionError(f"answer for {query!r} differs from the warm-up's")

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for client in clients:
            group.start_soon(worker, client)
    return latencies, time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.aclose()
            return
        await anyio.sleep(0.1)
    raise RuntimeError(f"the HTTP server did not listen on {port} within {timeout:g}s")


def report(latencies: list[float], wall: float, baseline: list[float]) -> None:
    print(f"in-process search(), sequential: {figures(baseline)}")
    print(f"MCP sai_search_code, concurrent: {figures(latencies)}; {len(latencies)} answers "
          f"checked; throughput {len(latencies) / wall:.1f} calls/s ({wall:.2f} s wall)")


def figures(seconds: list[float]) -> str:
    ms = sorted(x * 1000 for x in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):.1f} ms  p95 {p95:.1f} ms  max {ms[-1]:.1f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
