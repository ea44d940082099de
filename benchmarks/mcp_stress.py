"""Fault check under load: fresh MCP servers, concurrent mixed calls, while the CLI re-indexes.

Builds an index of a slice of the standard library (by default the ~300-file tree of the
reliability issue: asyncio, concurrent, email, http, importlib, json, logging,
multiprocessing, unittest, urllib, xml, distutils, lib2to3 and a dozen modules) with the Ollama stand-in of
tests/ollama_standin.py. Then, for each transport, starts `--servers` fresh `sai mcp` processes
one after the other and drives each with `--clients` concurrent workers making `--calls` mixed
calls each (searches in the three modes with and without filters, similar by snippet and by
location, status, a filtered duplicates run, a symbol look-up, reading a chunk), while a CLI
process edits a file and runs `sai refresh` on it over and over. Every call must answer without
error and every server must be alive at the end. Prints per server: errors, alive, p50/p95/max
latency, and the number of refreshes the writer completed meanwhile. Exit status 1 on any error
or dead server.

    .venv/bin/python benchmarks/mcp_stress.py [--servers 3] [--clients 8] [--calls 40]
        [--transport http|stdio|both] [--tree DIR] [--memory-rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
from mcp_load import build_index, free_port, server_argv, wait_for_port  # noqa: E402
from ollama_standin import OllamaStandIn  # noqa: E402

STDLIB = Path(os.environ.get("SAI_BENCH_STDLIB") or sysconfig.get_paths()["stdlib"])  # this Python's
PACKAGES = ("asyncio", "concurrent", "distutils", "email", "http", "importlib", "json", "lib2to3",
            "logging", "multiprocessing", "unittest", "urllib", "xml")
MODULES = ("argparse", "bisect", "csv", "difflib", "heapq", "pprint", "shutil", "tarfile",
           "textwrap", "zipfile")
WRITER_TARGET = "json/decoder.py"


def main() -> int:
    args = parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="sai-stress-") as tmp, OllamaStandIn(dim=384) as server:
        tree = args.tree or build_tree(Path(tmp) / "tree")
        config = Path(tmp) / "sai-cfg.yml"
        config.write_text(f'root: "{tree}"\next: [py]\nembedder: ollama\nduckdb:\n'
                          f'  path: "{Path(tmp) / "index.duckdb"}"\n', encoding="utf-8")
        env = {"OLLAMA_HOST": server.url, "PYTHONPATH": str(REPO)}
        build_index(config, env)
        transports = ("http", "stdio") if args.transport == "both" else (args.transport,)
        for transport in transports:
            for number in range(1, args.servers + 1):
                with writer(config, tree, env) as refreshes:
                    errors, alive, latencies = anyio.run(run_server, transport, config, env, args)
                failed |= bool(errors) or not alive
                print(f"{transport} server {number}: {len(latencies)} calls, errors {len(errors)}, "
                      f"alive {alive}, {figures(latencies)}; {refreshes[0]} CLI refreshes meanwhile"
                      + (f"; first error: {errors[0]}" if errors else ""), flush=True)
    return 1 if failed else 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=40, help="calls per client")
    parser.add_argument("--transport", choices=("http", "stdio", "both"), default="both")
    parser.add_argument("--tree", type=Path, help="index this tree instead of the stdlib slice")
    parser.add_argument("--memory-rounds", type=int, default=0,
                        help="HTTP: this many more rounds of calls per server, printing its RSS after each")
    return parser.parse_args()


def build_tree(root: Path) -> Path:
    for name in PACKAGES:
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in MODULES:
        shutil.copy2(STDLIB / f"{name}.py", root / f"{name}.py")
    return root


@contextlib.contextmanager
def writer(config: Path, tree: Path, env: dict[str, str]):
    """A CLI process editing a file and refreshing it in a loop, as an agent's editor would."""
    stop, count = threading.Event(), [0]
    target = tree / WRITER_TARGET
    original = target.read_text(encoding="utf-8")

    def loop() -> None:
        while not stop.is_set():
            target.write_text(original + f"\n\ndef stress_marker_{count[0]}(x):\n    return x\n",
                              encoding="utf-8")
            done = subprocess.run([sys.executable, "-m", "sai", "refresh", str(target), "--config", str(config),
                                   "--silent"], env={**os.environ, **env}, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"writer: sai refresh failed: {done.stderr.strip()}", flush=True)
            count[0] += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield count
    finally:
        stop.set()
        thread.join()
        target.write_text(original, encoding="utf-8")


async def run_server(transport: str, config: Path, env: dict[str, str], args: argparse.Namespace):
    if transport == "stdio":
        command, *argv = server_argv(config)
        params = StdioServerParameters(command=command, args=argv, env={**os.environ, **env})
        async with Client(stdio_client(params), mode="legacy") as client:
            errors, latencies = await drive([client] * args.clients, args)
            alive = (await client.call_tool("sai_index_status", {})).structured_content is not None
        return errors, alive, latencies
    port = free_port()
    proc = subprocess.Popen(server_argv(config, "--http", f"127.0.0.1:{port}"),
                            env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    try:
        await wait_for_port(port)
        async with contextlib.AsyncExitStack() as stack:
            url = f"http://127.0.0.1:{port}/mcp"
            clients = [await stack.enter_async_context(Client(url)) for _ in range(args.clients)]
            errors, latencies = await drive(clients, args)
            rss = [resident_mb(proc.pid)]
            for _ in range(args.memory_rounds):  # many more calls: memory must not keep growing
                more, _ = await drive(clients, args)
                errors += more
                rss.append(resident_mb(proc.pid))
        if args.memory_rounds:
            print(f"server RSS after each round of {len(clients) * args.calls} calls: "
                  + ", ".join(f"{mb:.0f} MB" for mb in rss), flush=True)
        return errors, proc.poll() is None, latencies
    finally:
        proc.terminate()
        proc.wait(timeout=30)


CALLS = (
    ("sai_search_code", {"query": "parse header", "limit": 8}),
    ("sai_search_code", {"query": "parse header", "limit": 8, "mode": "lexical", "language": "py"}),
    ("sai_search_code", {"query": "encode a message", "limit": 8, "mode": "semantic", "path_glob": "email/**"}),
    ("sai_find_similar", {"code": "def parse_header(line):\n    return line.split(':', 1)", "min_score": 0}),
    ("sai_find_similar", {"path": "json/encoder.py", "line": 120, "min_score": 0}),
    ("sai_index_status", {}),
    ("sai_search_code", {"query": "stress marker", "limit": 5, "mode": "lexical"}),
    ("sai_find_duplicates", {"path_glob": "json/**", "max_clusters": 5}),
    ("sai_find_symbol", {"name": "JSONDecoder"}),
    ("sai_search_code", {"query": "JSONDecoder", "limit": 5}),  # a bare name: its definitions join
    ("sai_read_chunk", {"path": "json/decoder.py", "start_line": 340, "neighbours": 2, "enclosing": True}),
)


async def drive(clients: list[Client], args: argparse.Namespace) -> tuple[list[str], list[float]]:
    errors: list[str] = []
    latencies: list[float] = []

    async def worker(client: Client, seed: int) -> None:
        order = random.Random(seed)
        for _ in range(args.calls):
            name, arguments = order.choice(CALLS)
            start = time.perf_counter()
            try:
                result = await client.call_tool(name, arguments)
                if result.is_error or result.structured_content is None:
                    errors.append(f"{name}: {result.content}")
            except Exception as exc:  # noqa: BLE001 - a benchmark counts every failure
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - start)

    async with anyio.create_task_group() as group:
        for seed, client in enumerate(clients):
            group.start_soon(worker, client, seed)
    return errors, latencies


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def figures(seconds: list[float]) -> str:
    if not seconds:
        return "no calls"
    ms = sorted(x * 1000 for x in seconds)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):.0f} ms, p95 {p95:.0f} ms, max {ms[-1]:.0f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
