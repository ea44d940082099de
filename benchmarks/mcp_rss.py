"""Memory of one `sai mcp` stdio server at about 20,000 chunks: RSS at start and after its first search.

The index: first_answer.py's tree (standard-library files up to `--chunks` AST chunks,
`embedder: local`), stage one written by `sai --query` (chunks, postings, symbols; stopped at its
first answer), then every chunk given a vector. By default the vectors are random unit vectors of
the model's 384 dimensions written straight through the store (seconds, not the half hour the
model takes on a busy 2-core machine: the server's memory depends on the vectors' count and
length, not on their values); `--real-vectors` lets `sai` embed them instead. Then one server
answers `sai_index_status` (RSS "at start") and one `sai_search_code`, whose query embedding loads
the local model (RSS "after its first search"; target <= 300 MB).

    .venv/bin/python benchmarks/mcp_rss.py [--chunks 20000] [--work DIR] [--real-vectors]
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
            hashes = reader.pending_hashes()
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
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
