"""Memory of searching processes on one index: one alone, then four at once, per code tree.

Runs on an index `scale.py` built (its tree under `--cache`, e.g. tree-100000) with the same
stand-in embedder, for each `--code` directory (a checkout of SAI: its `sai` is what the workers
import), so two versions are measured on one index in one run:

    python benchmarks/searchers_rss.py --tree DIR/tree-100000 --code /path/main --code /path/branch

Each worker warms up (every query of scale.py in each mode, then one symbol look-up, which
builds or maps the symbol table), then times `--queries` hybrid searches without a filter; the
parent reads each worker's /proc/<pid>/smaps: RSS, PSS, anonymous PSS, file-backed PSS, and the
PSS of the index's own files (sidecar, shared copies). The ratio is the four's PSS sum over the
one's PSS (and over its RSS). The shared copies (the `.arrow` files beside the sidecar) are removed
before each code tree's run, so its first process builds them. The four time their searches
together once all are warm (on this machine's cores: their p50 is not the one's); with several
code trees, a last round runs their workers side by side (alternating, four in all), so their
search times are taken under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODES = ("hybrid", "semantic", "lexical")


def worker(root: Path, queries: int) -> None:
    from sai import search  # noqa: PLC0415 (the `sai` of PYTHONPATH: the code tree measured)
    from sai.config import load_config  # noqa: PLC0415
    from sai.project import Project  # noqa: PLC0415
    from sai.query.lookup import find_symbol  # noqa: PLC0415

    sys.path.insert(0, str(HERE))
    from scale import QUERIES  # noqa: PLC0415 (after sai: scale.py puts its own checkout first on the path)

    project = Project(load_config(cwd=root, env={}))
    lookup = 0.0
    for line in sys.stdin:
        if line.strip() == "warm":
            for query in QUERIES:
                for mode in MODES:
                    search(project, query, limit=8, mode=mode)
            start = time.perf_counter()
            find_symbol(project, "parse")  # builds or maps the symbol table
            lookup = time.perf_counter() - start
            print(json.dumps({"pid": os.getpid()}), flush=True)
        elif line.strip() == "time":  # once every worker is warm: they time their searches together
            times, faults = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for n in range(queries):
                start = time.perf_counter()
                search(project, QUERIES[n % len(QUERIES)], limit=8, mode="hybrid")
                times.append(time.perf_counter() - start)
            print(json.dumps({"pid": os.getpid(), "hybrid_p50_ms": round(statistics.median(times) * 1000, 1),
                              "first_lookup_ms": round(lookup * 1000, 1),
                              "minor_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults}), flush=True)
    project.close()


def smaps(pid: int, index_dir: Path) -> dict[str, float]:
    """RSS, PSS, anonymous / file-backed PSS (smaps_rollup) and the PSS of the index's files (smaps), MB."""
    out = {"rss": 0.0, "pss": 0.0, "pss_anon": 0.0, "pss_file": 0.0, "pss_index_files": 0.0}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.lower() in out:
                out[name.lower()] = int(rest.split()[0]) / 1024
    current = ""
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if head and not head[0].endswith(":"):  # a mapping's first line: range, mode, ..., path
                current = head[5] if len(head) > 5 else ""
            elif head and head[0] == "Pss:" and current.startswith(str(index_dir)):
                out["pss_index_files"] += int(head[1]) / 1024
    return {k: round(v, 1) for k, v in out.items()}


def measure(codes: list[Path], root: Path, queries: int) -> dict[str, Any]:
    """One worker per code tree given, all at once: warmed, measured, then timed together."""
    workers = [subprocess.Popen([sys.executable, __file__, "--worker", str(root), "--queries", str(queries)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, PYTHONPATH=str(code)), cwd=code) for code in codes]

    def ask(command: str) -> list[dict[str, Any]]:
        for w in workers:
            assert w.stdin is not None
            w.stdin.write(command + "\n")
            w.stdin.flush()
        return [json.loads(w.stdout.readline()) for w in workers if w.stdout is not None]

    each = [smaps(a["pid"], root / ".index") for a in ask("warm")]
    for found, timed in zip(each, ask("time"), strict=True):
        found.update({k: timed[k] for k in ("hybrid_p50_ms", "first_lookup_ms", "minor_faults")})
    for w in workers:
        if w.stdin is not None:
            w.stdin.close()
        w.wait(timeout=120)
    return {"each": each, "pss_sum": round(sum(e["pss"] for e in each), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="an indexed tree of scale.py (tree-<chunks>)")
    parser.add_argument("--code", type=Path, action="append", default=[], help="a SAI checkout (repeatable)")
    parser.add_argument("--queries", type=int, default=40, help="hybrid queries timed per worker")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.queries)
        return 0
    if args.tree is None:
        parser.error("--tree is required")
    server = subprocess.Popen([sys.executable, str(HERE / "scale.py"), "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        (args.tree / "sai-cfg.yml").write_text(
            f"embedder: ollama\nmodel: nomic-embed-text\next: py\nollama:\n  url: {url}\n", encoding="utf-8")
        results = {}
        for code in args.code:
            index = args.tree / ".index"  # the shared copies of either layout (copies/ since 2026-12)
            for stale in [*index.glob("*.vectors/*/g*.*.arrow"), *index.glob("*.vectors/*/copies/*.arrow")]:
                stale.unlink()
            one = measure([code], args.tree, args.queries)
            four = measure([code] * 4, args.tree, args.queries)
            results[str(code)] = {"one": one["each"][0], "four": four,
                                  "ratio_pss": round(four["pss_sum"] / one["each"][0]["pss"], 2),
                                  "ratio_to_rss_one": round(four["pss_sum"] / one["each"][0]["rss"], 2),
                                  "load": os.getloadavg()}
            print(json.dumps({str(code): results[str(code)]}), flush=True)
        if len(args.code) > 1:  # the code trees' workers side by side: their search times under one load
            mixed = measure((args.code * 4)[:4], args.tree, args.queries)["each"]
            print(json.dumps({"mixed": [{"code": str(c), **{k: m[k] for k in ("hybrid_p50_ms", "minor_faults")}}
                                        for c, m in zip((args.code * 4)[:4], mixed, strict=True)]}), flush=True)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
