"""`sai impact` on a real repository's last commits: how long each answer takes, and what it holds.

A clone of the repository (default: the one holding this script) in the benchmark cache is
indexed at the oldest of its last N first-parent commits, then replayed commit by commit: the
tree checked out at the commit, the index refreshed (an incremental run: only the files the commit
changed are read again), and `impact(since=<commit>^)` asked, so each answer is that commit's
diff. Each is timed twice: in process (`sai.impact.impact`, warm, as the MCP server answers it) and
as a user pays for it, `sai impact --since REV --json` as a subprocess (process start, imports,
opening the index). The index uses the static model `minilm-static` (built locally once, a few
thousand chunks a second): copies left behind need vectors, and impact never embeds, so the model
only sets how long the replay takes, not the timings. Printed: per commit the changed files, units,
callers and copies left behind, and p50 / p95 / max of both timings (target: each ≤ 1 s).

    .venv/bin/python benchmarks/impact_latency.py [--repo DIR] [--commits 20] [--model minilm-static]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import CACHE_DIR, log

from sai.config import load_config
from sai.impact import impact
from sai.indexing import indexer
from sai.project import Project

HERE = Path(__file__).resolve().parent


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True, text=True).stdout


def clone(repo: Path, tree: Path) -> None:
    """A fresh clone of `repo`'s HEAD at `tree`; the index it holds from an earlier run is kept."""
    if not (tree / ".git").is_dir():
        tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(repo), str(tree)], check=True)
    git(tree, "fetch", "--quiet", str(repo), "HEAD")
    git(tree, "update-ref", "refs/heads/bench-head", "FETCH_HEAD")


def project_at(tree: Path, model: str) -> Project:
    return Project(load_config(cwd=tree, env={}, flags={"embedder": "local", "model": model, "root": str(tree)}))


def timed_cli(tree: Path, model: str, since: str) -> tuple[float, dict]:
    command = [sys.executable, "-m", "sai", "--root", str(tree), "--embedder", "local", "--model", model,
               "--json", "impact", "--since", since]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"sai impact --since {since} failed ({done.returncode}): {done.stderr.strip()[:300]}")
    return wall, json.loads(done.stdout)


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def run(repo: Path, commits: int, model: str) -> None:
    tree = CACHE_DIR / "impact" / repo.resolve().name
    clone(repo, tree)
    order = git(tree, "rev-list", "--first-parent", f"-n{commits}", "bench-head").split()[::-1]
    log(f"{tree}: replaying {len(order)} commits, {order[0][:10]} .. {order[-1][:10]}")
    inner: list[float] = []
    outer: list[float] = []
    print(f"{'commit':<10} {'files':>5} {'units':>5} {'callers':>7} {'copies':>6} {'in process':>10} {'cli':>8}")
    for commit in order:
        git(tree, "checkout", "--quiet", "--force", commit)
        git(tree, "clean", "--quiet", "-fdx", "--exclude=.index")
        since = f"{commit}^"
        project = project_at(tree, model)
        try:
            indexer.index(project)
            start = time.perf_counter()
            found = impact(project, since=since)
            inner.append(time.perf_counter() - start)
        finally:
            project.close()
        wall, answer = timed_cli(tree, model, since)
        outer.append(wall)
        callers = sum(len(u.callers) + u.callers_more for u in found.units)
        copies = sum(len(u.copies) for u in found.units)
        units = len(found.units) + found.more
        assert len(answer["units"]) <= len(found.units), "the CLI answer holds more units than impact() found"
        print(f"{commit[:10]:<10} {len(found.changed_files):>5} {units:>5} {callers:>7} {copies:>6} "
              f"{inner[-1] * 1000:>8.0f}ms {wall * 1000:>6.0f}ms")
    print(f"impact in process (warm): {quantiles(inner)}")
    print(f"sai impact --since REV --json (a process each): {quantiles(outer)}")
    print(f"over 1 s: {sum(t > 1.0 for t in outer)} of {len(outer)} CLI answers, "
          f"{sum(t > 1.0 for t in inner)} in process")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE.parent, help="a git repository (default: SAI's own)")
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--model", default="minilm-static")
    parser.add_argument("--fresh", action="store_true", help="remove the cached clone and its index first")
    args = parser.parse_args()
    if args.fresh:
        shutil.rmtree(CACHE_DIR / "impact" / args.repo.resolve().name, ignore_errors=True)
    run(args.repo, max(1, args.commits), args.model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
