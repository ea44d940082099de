"""Walk and glob timing: `sai.source.files.walk` over a tree, then pathological globs over its keys.

Prints the walk's time (best of --repeat, wall and CPU) with the number of files included and
skipped, then for typical and pathological globs (`path_glob`/`include` syntax, and one
`.gitignore` line) the compile time and the matching time per 1,000 keys. Target: every glob
under 50 ms per 1,000 keys (on Python's backtracking `re`, the regex of `**?` x 11 + `**X` did
not answer one 100-character key in two minutes).

    python benchmarks/walk_globs.py [--tree DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from sai.config import load_config
from sai.source.files import glob_match, walk
from sai.source.gitignore import IgnoreMatcher

STDLIB = Path(os.environ.get("SAI_BENCH_STDLIB") or sysconfig.get_paths()["stdlib"])  # this Python's
TARGET_MS = 50.0
GLOBS = (
    "*.py", "src/**/*.py", "**/tests/**", "{lib,src}/**/*.{py,pyi}",
    "**?" * 11 + "**X",
    "**?**?**?**?**?**?**?**?**X",
    "*a" * 14 + "*X",
    "{a,b,ab}" * 12 + "*X",
    "[a-z]*" * 10 + "X",
)
GITIGNORE_LINE = "*a*a*a*a*a*a*a*a*a*a*a*a*b"


def best_of(repeat: int, run: Callable[[], object]) -> tuple[float, float]:
    """The lowest wall and CPU seconds of `repeat` runs (the machine is shared)."""
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def time_glob(pattern: str, keys: list[str]) -> tuple[float, float, int]:
    """Milliseconds to compile, milliseconds per 1,000 keys to match, and the number matched."""
    start = time.perf_counter()
    glob_match(pattern, "")
    compiled = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    hits = sum(glob_match(pattern, key) for key in keys)
    per_thousand = (time.perf_counter() - start) * 1000 / max(1, len(keys)) * 1000
    return compiled, per_thousand, hits


def time_gitignore(keys: list[str]) -> float:
    """Milliseconds per 1,000 keys for a matcher holding one pathological `.gitignore` line."""
    matcher = IgnoreMatcher.create("", [("", f"{GITIGNORE_LINE}\n*.pyc\n")])
    start = time.perf_counter()
    for key in keys:
        matcher.ignored(key, is_dir=False)
    return (time.perf_counter() - start) * 1000 / max(1, len(keys)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=STDLIB, help="the tree to walk")
    parser.add_argument("--repeat", type=int, default=5, help="walks timed (best is kept)")
    args = parser.parse_args()
    root = args.tree.resolve()
    filters = load_config(flags={"root": str(root)}, env={}, cwd=root).walk
    result = walk(filters)
    wall, cpu = best_of(args.repeat, lambda: walk(filters))
    print(f"walk of {root}: {len(result.included)} files included, {len(result.excluded)} skipped;"
          f" best of {args.repeat}: {wall:.3f} s wall, {cpu:.3f} s CPU")
    keys = [source.key for source in result.included]
    worst = 0.0
    print(f"{'glob':<48} {'compile ms':>10} {'ms/1000 keys':>13} {'matched':>8}")
    for pattern in GLOBS:
        compiled, per_thousand, hits = time_glob(pattern, keys)
        worst = max(worst, per_thousand)
        print(f"{pattern[:48]:<48} {compiled:>10.2f} {per_thousand:>13.2f} {hits:>8}")
    ignore_ms = time_gitignore(keys)
    print(f"{'.gitignore ' + GITIGNORE_LINE:<48} {'':>10} {ignore_ms:>13.2f}")
    verdict = "within" if max(worst, ignore_ms) < TARGET_MS else "OVER"
    print(f"slowest: {max(worst, ignore_ms):.2f} ms per 1,000 keys ({verdict} the {TARGET_MS:.0f} ms target)")


if __name__ == "__main__":
    main()
