"""Compaction of a DuckDB index file that carries too many free blocks (docs/design.md, "Storage layout").

DuckDB writes a checkpoint's changed row groups into new blocks before it frees the old ones,
and reuses freed blocks but never gives them back: a small index doubles after its first
refresh and stays there (16.8 MB fresh, 30.2 MB after 400 refreshes), and a run that failed on
a full disk leaves what it wrote as free blocks. Neither CHECKPOINT nor VACUUM returns them.
So at the end of a run, still holding the writer lock, the store copies the database into a
fresh file beside it (`<db>.compact`, `COPY FROM DATABASE`) when the free blocks pass
WASTE_RATIO of the used ones, after a first build of FIRST_BUILD_BLOCKS or more, when the file has
grown past 1 + WASTE_RATIO times its size after its last compaction (or first build), or once
for a file an SAI before tables.ROW_GROUP_ROWS wrote in larger row groups, closes its
own connection (a checkpoint: no write-ahead log is left) and renames the copy over the index.
A kill at any moment leaves the index whole: before the rename the old file is untouched (a
leftover copy is deleted by the next compaction), and the rename is atomic; every run's end
deletes a copy a killed compaction left.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import duckdb

from sai.store.dirs import fsync_path
from sai.store.duckdb.errors import first_line
from sai.store.duckdb.rows import quote
from sai.store.duckdb.tables import ROW_GROUP_ROWS, Connection

log = logging.getLogger(__name__)
WASTE_RATIO = 0.4  # free blocks per used block above which a run's end compacts (file <= ~1.4x its data)
# A first build of at least this many blocks (16 MB) is compacted at its end: its checkpoints leave
# rewritten row groups part-empty, which no free-block count shows (100k chunks: 710 blocks, 23 of
# them free; 645 after a copy of 4.7 s, 186 -> 169 MB), and the compacted size is the base of the bound
FIRST_BUILD_BLOCKS = 64
MIN_FREE_BLOCKS = 4  # and at least this many 256 KB blocks wasted: a copy for less is not worth its time
BASELINE_KEY = "compact_blocks"  # sai_meta key: the file's blocks after its last compaction or first build
ROWS_KEY = "row_group_rows"  # sai_meta key: the row group size it was then written with (tables.ROW_GROUP_ROWS)


def wasteful(conn: Connection) -> bool:
    """Whether the file carries too much waste, after a checkpoint (the one closing the
    connection would pay anyway): free blocks past WASTE_RATIO of the used ones, or a file grown
    past 1 + WASTE_RATIO times its size after its last compaction or first build (rewritten row
    groups also leave used blocks half full, which no free-block count shows); a first build of
    FIRST_BUILD_BLOCKS or more; a file of that size written with row groups of another size
    (an SAI before ROW_GROUP_ROWS), once."""
    conn.con.execute("CHECKPOINT")
    total, used, free = _blocks(conn, "sai")
    baseline = _meta_value(conn, BASELINE_KEY)
    if baseline is None or not baseline.isdigit():  # a first build: its size is the base of the bound
        _record(conn, "sai", total)  # (a compaction records its own)
        return total >= FIRST_BUILD_BLOCKS
    if total >= FIRST_BUILD_BLOCKS and _meta_value(conn, ROWS_KEY) != str(ROW_GROUP_ROWS):
        return True
    grown = total >= int(baseline) + MIN_FREE_BLOCKS and total > (1 + WASTE_RATIO) * int(baseline)
    return grown or (free >= MIN_FREE_BLOCKS and free > WASTE_RATIO * used)


def _blocks(conn: Connection, database: str) -> tuple[int, int, int]:
    """(total, used, free) blocks of an attached database."""
    row = conn.con.execute(
        "SELECT total_blocks, used_blocks, free_blocks FROM pragma_database_size() WHERE database_name = ?",
        [database],
    ).fetchone()
    return (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)


def _meta_value(conn: Connection, key: str) -> str | None:
    if not _has_meta(conn, "sai"):
        return None
    row = conn.con.execute("SELECT max(value) FROM sai.sai_meta WHERE collection = '' AND key = ?", [key]).fetchone()
    return str(row[0]) if row and row[0] is not None else None


def _record(conn: Connection, database: str, blocks: int) -> None:
    """Note the file's size in blocks and its row group size (meta rows of no collection: '' is
    no collection's name)."""
    if not _has_meta(conn, database):
        return
    conn.con.execute(f"DELETE FROM {database}.sai_meta WHERE collection = '' AND key IN (?, ?)",
                     [BASELINE_KEY, ROWS_KEY])
    conn.con.execute(f"INSERT INTO {database}.sai_meta VALUES ('', ?, ?), ('', ?, ?)",
                     [BASELINE_KEY, str(blocks), ROWS_KEY, str(ROW_GROUP_ROWS)])


def _has_meta(conn: Connection, database: str) -> bool:
    row = conn.con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = 'sai_meta'",
                           [database]).fetchone()
    return bool(row and row[0])


def copy_beside(conn: Connection, db: Path) -> Path | None:
    """The database copied into `<db>.compact`, closed and synced; None when the copy failed
    (a full disk, say: the index stays as it is, and the next run tries again)."""
    copy = compact_path(db)
    discard(copy)
    try:
        conn.con.execute(f"ATTACH '{quote(str(copy))}' AS sai_compact (ROW_GROUP_SIZE {ROW_GROUP_ROWS})")
        try:
            conn.con.execute("COPY FROM DATABASE sai TO sai_compact")
            conn.con.execute("CHECKPOINT sai_compact")
            _record(conn, "sai_compact", _blocks(conn, "sai_compact")[0])
        finally:
            conn.con.execute("DETACH sai_compact")  # closing checkpoints the copy
        fsync_path(copy)
    except duckdb.InterruptException:  # Ctrl-C: the store turns it into KeyboardInterrupt
        discard(copy)
        raise
    except (duckdb.Error, OSError) as exc:
        log.warning("compacting the index %s failed (%s); it keeps its free space", db, first_line(exc))
        discard(copy)
        return None
    return copy


def swap_in(copy: Path, db: Path) -> bool:
    """Rename the copy over the index, once the index's connection is closed; False (copy
    discarded) when a write-ahead log of either file remains, which the rename would orphan."""
    if _wal(db).exists() or _wal(copy).exists():
        log.warning("not compacting the index %s: a write-ahead log is left", db)
        discard(copy)
        return False
    before = db.stat().st_size
    os.replace(copy, db)
    fsync_path(db.parent)
    log.debug("compacted the index %s from %d to %d bytes", db, before, db.stat().st_size)
    return True


def compact_path(db: Path) -> Path:
    return db.with_name(db.name + ".compact")


def discard(copy: Path) -> None:
    for path in (copy, _wal(copy)):
        path.unlink(missing_ok=True)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")
