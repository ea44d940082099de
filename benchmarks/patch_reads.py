"""What a searching process reads to learn which chunks a write changed, at `--rows` chunks.

A DuckDB file holds a chunk table of `--rows` rows (ids, write times and 4-d vectors: the reads
below touch ids and write times, and answer `embedding IS NULL` from the column's statistics, so
the vectors' width does not matter) and one change-log row of a one-file write (20 chunks). Then,
`--repeat` times each, in one process:

- every (id, stamp) pair, as a reader compares them when the change log cannot serve it
  (`ConnectionVectors.vector_stamps`);
- the change log's ids from the old token to the new (`changelog.touched`).

    .venv/bin/python benchmarks/patch_reads.py [--rows 1000000] [--repeat 5] [--work DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from sai.store.duckdb import changelog
from sai.store.duckdb.sidecar_source import ConnectionVectors
from sai.store.duckdb.tables import Connection


def build(path: Path, rows: int) -> None:
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE TABLE code AS SELECT i AS id, TIMESTAMP '2026-12-01' + to_microseconds(i) AS indexed_at, "
                    "[0.5, 0.5, 0.5, 0.5]::FLOAT[4] AS embedding FROM range(1, ?) t(i)", [rows + 1])
        con.execute("CREATE TABLE sai_meta (collection VARCHAR, key VARCHAR, value VARCHAR)")
        con.execute("INSERT INTO sai_meta VALUES ('code', 'token', 'after'), ('code', 'vector_dim', '4')")
        changelog.record(con, "code", previous="before", token="after", ids=np.arange(140, 160))
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, default=None, help="directory for the index file (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        path = Path(work) / "patch.duckdb"
        build(path, args.rows)
        con = duckdb.connect(":memory:")
        con.execute(f"ATTACH '{path}' AS sai (READ_ONLY)")
        con.execute("USE sai")
        conn = Connection(con, "code", read_only=True)
        pairs, logged = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            ids, _ = ConnectionVectors(conn).vector_stamps()
            pairs.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            named = changelog.touched(con, "code", since="before", until="after")
            logged.append((time.perf_counter() - start) * 1000)
        con.close()
    assert len(ids) == args.rows and named is not None and len(named) == 20
    print(f"{args.rows:,} chunks: every (id, stamp) pair {statistics.median(pairs):.1f} ms median "
          f"({min(pairs):.1f}-{max(pairs):.1f}); the change log's 20 ids {statistics.median(logged):.2f} ms "
          f"({min(logged):.2f}-{max(logged):.2f}); {args.repeat} runs")


if __name__ == "__main__":
    main()
