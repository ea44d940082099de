"""What an index directory holds, in bytes per chunk: each file, and each table and column of the DuckDB file.

Each column is copied alone into a fresh DuckDB file (compressed as DuckDB compresses it, with the
same row order) and weighed by the blocks it takes; the sum of the columns is close to, but not
the same as, the file (block slack, the catalog, the free blocks a write leaves). The sidecar and
the shared copies are weighed file by file.

    .venv/bin/python benchmarks/index_bytes.py <root>/.index/code.duckdb [--collection code] [--columns]
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path

import duckdb


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'sai' "
                                      "ORDER BY table_name").fetchall()]


def columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [c for (c,) in con.execute("SELECT column_name FROM duckdb_columns() WHERE database_name = 'sai' "
                                      "AND table_name = ? ORDER BY column_index", [table]).fetchall()]


def weighed(con: duckdb.DuckDBPyConnection, select: str, scratch: Path) -> int:
    """Bytes of the blocks a fresh database holding `select` alone takes."""
    path = scratch / "w.duckdb"
    path.unlink(missing_ok=True)
    con.execute(f"ATTACH '{path}' AS w")
    try:
        con.execute(f"CREATE TABLE w.t AS {select}")
        con.execute("CHECKPOINT w")
        used, size = con.execute("SELECT used_blocks, block_size FROM pragma_database_size() "
                                 "WHERE database_name = 'w'").fetchone()
        return int(used) * int(size)
    finally:
        con.execute("DETACH w")
        path.unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--collection", default="source_code")
    parser.add_argument("--columns", action="store_true", help="weigh each column of each table alone")
    args = parser.parse_args()
    con = duckdb.connect()
    con.execute(f"ATTACH '{args.db}' AS sai (READ_ONLY)")
    (chunks,) = con.execute(f"SELECT count(*) FROM sai.{args.collection}").fetchone()
    print(f"{chunks:,} chunks")
    directory = args.db.parent
    by_file: dict[str, int] = defaultdict(int)
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = path.relative_to(directory).as_posix()
        if "/g" in name and "." in path.name:  # the sidecar's g<n>.<column> files, by column
            name = name.rsplit("/", 1)[0] + "/g*." + path.name.split(".", 1)[1]
        by_file[name] += path.stat().st_size
    total = sum(by_file.values())
    print(f"\nthe directory: {total / chunks:,.0f} B/chunk ({total / 1e6:.1f} MB)")
    for name, size in sorted(by_file.items(), key=lambda kv: -kv[1]):
        print(f"  {size / chunks:9,.1f}  {name}")
    with tempfile.TemporaryDirectory() as scratch:
        print("\nthe DuckDB file, table by table (each copied alone):")
        for table in tables(con):
            size = weighed(con, f"SELECT * FROM sai.{table}", Path(scratch))
            (rows,) = con.execute(f"SELECT count(*) FROM sai.{table}").fetchone()
            print(f"  {size / chunks:9,.1f}  {table} ({rows:,} rows)")
            if args.columns:
                for column in columns(con, table):
                    part = weighed(con, f'SELECT "{column}" FROM sai.{table}', Path(scratch))
                    print(f"  {'':9} {part / chunks:9,.1f}  .{column}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
