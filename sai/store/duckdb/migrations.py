"""Numbered schema migrations: what turns an index file of an older format into this one.

Each step brings a collection from format `n - 1` to `n` and keeps every vector; the steps of
one upgrade run in one transaction, so a kill leaves the old format, upgraded again by the next
run. Columns added here start empty; the chunking signature changed with them, so the next index
run chunks every file again and fills them (vectors reused, nothing embedded). Nothing of an
older format is read anywhere else: a file opens without the extensions older formats used
(DuckDB keeps an index of an unknown type unbound until a write, and a dropped one needs none).
"""

from __future__ import annotations

from collections.abc import Callable

from sai.models import SCHEMA_VERSION
from sai.store.duckdb.tables import Connection


def _add_shape(conn: Connection) -> None:
    """3: chunks carry a token-shape signature (sai/text/shape.py)."""
    conn.con.execute(f"ALTER TABLE {conn.collection} ADD COLUMN IF NOT EXISTS shape BLOB")


def _drop_hnsw(conn: Connection) -> None:
    """4: no HNSW index; vectors are searched in memory (vectors.py)."""
    conn.con.execute(f"DROP INDEX IF EXISTS {conn.collection}_hnsw")


def _add_kind(conn: Connection) -> None:
    """5: chunks carry the kind of unit they hold (function, method, class, ...)."""
    conn.con.execute(f"ALTER TABLE {conn.collection} ADD COLUMN IF NOT EXISTS kind VARCHAR")


def _add_references(conn: Connection) -> None:
    """6: a table of the uses of names (references.py), filled as files are read again; and the
    postings of every chunk where an SAI before them left a DuckDB FTS index instead (postings.py)."""
    conn.references.create()
    if not conn.table_exists(conn.postings.postings):
        conn.con.execute(f"DROP SCHEMA IF EXISTS fts_main_{conn.collection} CASCADE")
        conn.postings.rebuild()
    conn.con.execute("DELETE FROM sai_meta WHERE collection = ? AND key IN ('lexicon', 'lexicon_token', 'fts_token')",
                     [conn.collection])


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    3: _add_shape, 4: _drop_hnsw, 5: _add_kind, 6: _add_references,
}
OLDEST = min(MIGRATIONS) - 1  # the oldest format a file can be upgraded from


def upgrade(conn: Connection, from_version: int) -> None:
    """Run every migration after `from_version`, in order, and record SCHEMA_VERSION."""
    for version in sorted(MIGRATIONS):
        if version > from_version:
            MIGRATIONS[version](conn)
    conn.set_meta({"schema_version": str(SCHEMA_VERSION)})
    conn.dirty = True  # a new token, not logged (changelog.py): readers compare every chunk
