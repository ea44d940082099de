"""Symbol lookup latency: sai_find_symbol's in-memory table (sai/store/symbols.py) at 100k chunks.

Builds a SymbolTable from synthetic rows shaped like a real index (a class per 10 chunks, its
methods qualified by it, some gap chunks without a symbol, a few windows of one unit), then
times lookups of names that exist (a method's last name, a qualified name, a class), names in
another case, prefixes and misses, interleaved. Prints the build time and p50/p95/max per kind
in ms (target: p50 < 20 ms). No index file and no embedder are involved.

    .venv/bin/python benchmarks/symbol_lookup.py [--chunks 100000] [--lookups 2000]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from sai.store.symbols import SymbolTable

WORDS = ("get", "set", "compute", "total", "user", "session", "parse", "render", "cart", "price",
         "load", "save", "item", "order", "token", "cache", "build", "index", "query", "route")


def synthetic_rows(count: int, seed: int = 7) -> list[tuple]:
    """Rows (id, path, language, start, end, symbol, kind, hash) of `count` chunks."""
    rng = random.Random(seed)
    rows, line, path, owner = [], 1, "", ""
    for row_id in range(1, count + 1):
        if row_id % 200 == 1:
            path, line = f"src/pkg{row_id // 5000}/mod_{row_id // 200}.py", 1
        if row_id % 10 == 1:
            owner = "".join(w.capitalize() for w in rng.sample(WORDS, 2)) + str(row_id)
            symbol, kind = owner, "class"
        elif row_id % 10 == 0:
            symbol, kind = None, None  # a gap chunk
        else:
            symbol, kind = f"{owner}.{rng.choice(WORDS)}{rng.choice(WORDS).capitalize()}{row_id % 97}", "method"
        rows.append((row_id, path, "python", line, line + 9, symbol, kind, f"{row_id:064x}"))
        line += 10
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=2000)
    args = parser.parse_args()
    rows = synthetic_rows(args.chunks)
    started = time.perf_counter()
    table = SymbolTable("bench", rows)
    print(f"built a SymbolTable of {len(table):,} chunks in {time.perf_counter() - started:.2f} s")
    rng = random.Random(11)
    named = [r[5] for r in rows if r[5]]
    kinds = {
        "last name": lambda: rng.choice(named).rsplit(".", 1)[-1],
        "qualified": lambda: rng.choice(named),
        "other case": lambda: rng.choice(named).rsplit(".", 1)[-1].lower(),
        "prefix (5 chars)": lambda: rng.choice(named).rsplit(".", 1)[-1][:5],
        "miss": lambda: f"noSuchName{rng.randrange(10**6)}",
    }
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(args.lookups // len(kinds)):
        for kind, pick in kinds.items():
            name = pick()
            started = time.perf_counter()
            table.lookup(name, limit=20)
            times[kind].append((time.perf_counter() - started) * 1000)
    every = [t for values in times.values() for t in values]
    for kind, values in [*times.items(), ("all", every)]:
        p50, p95 = np.percentile(values, [50, 95])
        print(f"  {kind:17s} p50 {p50:7.3f} ms   p95 {p95:7.3f} ms   max {max(values):7.3f} ms   (n={len(values)})")


if __name__ == "__main__":
    main()
