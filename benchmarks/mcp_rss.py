"""Memory of one `sai mcp` stdio server at about 20,000 chunks: RSS at start and after its first search.

The index: first_answer.py's tree (standard-library files up to `--chunks` AST chunks,
`embedder: local`), stage one written by `sai --query` (chunks, postings, symbols; stopped at its
first answer), then every chunk given a vector. By default the vectors are random unit vectors of
the model's 384 dimensions written straight through the store (seconds, not the half hour the
model takes on a busy 2-core machine: the server's memory depends on the vectors' count and
length, not on their values); `--real-vectors` lets `sai` embed them instead. Then one server
answers `sai_index_status` (RSS "at start") and one `sai_search_code`, whose query embedding loads
the local model (RSS "after its first search"; target <= 300 MB). Then `--servers` servers (4)
start together on the same index, each answers one search, and each one's RSS and PSS (shared
pages counted once across them, in parts) are printed with their sums.

    .venv/bin/python benchmarks/mcp_rss.py [--chunks 20000] [--work DIR] [--real-vectors] [--servers 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from first_answer import REPO, build_tree, timeline, write_config
from query_latency import measure_mcp_rss

from sai.config import load_config
from sai.project import Project
from sai.query.status import status

DIM = 384  # all-MiniLM-L6-v2
WRITE_CHUNKS = 2048


def random_vectors(root: Path) -> int:
    """Give every chunk waiting for a vector a random unit vector; returns how many texts got one."""
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        with project.store.read() as reader:
            hashes = [item.content_hash for item in reader.pending()]
        rng = np.random.default_rng(20261201)
        for start in range(0, len(hashes), WRITE_CHUNKS):
            group = hashes[start:start + WRITE_CHUNKS]
            vectors = rng.standard_normal((len(group), DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            with project.store.write() as writer:
                writer.set_vectors(group, vectors)
        return len(hashes)
    finally:
        project.close()


def real_vectors(root: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "sai", "--silent"], cwd=root, env=env, check=True)


def children_memory_mb(config: Path) -> list[tuple[float, float]]:
    """(RSS, PSS) of each of this process's `sai mcp --config CONFIG` children."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            rollup = dict(line.split(":", 1) for line in (proc / "smaps_rollup").read_text().splitlines()[1:])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"mcp" in cmdline and str(config).encode() in cmdline:
            found.append((int(rollup["Rss"].split()[0]) / 1024, int(rollup["Pss"].split()[0]) / 1024))
    return found


def measure_servers(root: Path, query: str, servers: int) -> None:
    """`servers` stdio servers on one index at once, each after its first search."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    config = root / "sai-cfg.yml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAI_")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "sai", "mcp", "--config", str(config)], env=env)
    searched = anyio.Event()
    done = 0

    async def one(n: int) -> None:
        nonlocal done
        async with Client(stdio_client(params), mode="legacy") as client:
            await client.call_tool("sai_search_code", {"query": f"{query} {n}", "limit": 8})
            done += 1
            if done == servers:
                searched.set()
            await searched.wait()
            await anyio.sleep(1)  # every server answered: measure them all while they live
            if n == 0:
                each = children_memory_mb(config)
                rss, pss = sum(r for r, _ in each), sum(p for _, p in each)
                print(f"{len(each)} sai mcp servers at once, after their first search: RSS "
                      f"{', '.join(f'{r:.0f}' for r, _ in each)} MB (sum {rss:.0f} MB); PSS sum {pss:.0f} MB "
                      f"(shared pages counted once)", flush=True)
            await anyio.sleep(2)

    async def run() -> None:
        async with anyio.create_task_group() as group:
            for n in range(servers):
                group.start_soon(one, n)

    anyio.run(run)


def describe(root: Path) -> str:
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        found = status(project)
        return f"{found.chunk_count} chunks, {found.pending_vectors} without a vector, model {found.model}"
    finally:
        project.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/sai-mcp-rss"))
    parser.add_argument("--real-vectors", action="store_true", help="embed with the model (slow)")
    parser.add_argument("--servers", type=int, default=4, help="servers measured at once after the one (4; 0: none)")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}  (cores: {os.cpu_count()})", flush=True)
    shutil.rmtree(args.work, ignore_errors=True)
    root = args.work / "tree"
    root.mkdir(parents=True)
    targets = build_tree(root, args.chunks)
    write_config(root, None)
    timeline(root, targets[0][1], first_only=True)
    if args.real_vectors:
        real_vectors(root)
    else:
        print(f"random vectors for {random_vectors(root)} distinct texts", flush=True)
    print(f"index: {describe(root)}", flush=True)
    measure_mcp_rss(root, targets[len(targets) // 2][1])
    if args.servers:
        measure_servers(root, targets[len(targets) // 3][1], args.servers)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
