"""The writers' change log: which chunk ids each committed write touched, kept in the index file.

A write that changes chunk rows commits a new token (tables.Connection._next_token); in the same
transaction it records the token it replaced and the ids of every chunk it inserted, deleted or
gave a vector. It is the one source of "what changed" for every derived copy (copies.py, and the
vector sidecar): a copy of an older token is patched with the chunks the log names since, read
by id, instead of read whole again (a full read costs seconds at a million chunks; docs/notebook.md,
"How the cost grows").

A write that only gave chunks their vectors (the second stage of a first build, a model's
vectors copied by hash) is logged as such: the copies of the rows, BM25 terms, symbols and
shapes, which hold no vector, pass over it (`rows_only`), and only the vector sidecar reads it.

Correct by construction, never by trust: the ids of one write are those its own statements
returned, in its own transaction, so a kill never leaves a log row without its write or a write
without its row. A chain that misses a link (a write this log did not see: an older SAI, a
schema migration, a row pruned) answers None, and the copy is read whole.
"""

from __future__ import annotations

import duckdb
import numpy as np

from sai.store.duckdb.rows import INTS, int_list

KEPT = 1024  # writes remembered: a copy further behind is read whole (a million chunks' vectors take ~250)
_SUFFIX = "__changes"


def table_of(collection: str) -> str:
    return collection + _SUFFIX


def record(con: duckdb.DuckDBPyConnection, collection: str, *, previous: str, token: str,
           ids: np.ndarray, vectors_only: bool) -> None:
    """Log that the write committing `token` over `previous` touched the chunks `ids` (their
    vectors alone when `vectors_only`)."""
    table = table_of(collection)
    con.execute(f"CREATE TABLE IF NOT EXISTS {table} (seq BIGINT, token VARCHAR, previous VARCHAR, ids BIGINT[], "
                "vectors_only BOOLEAN)")
    con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS vectors_only BOOLEAN")  # a log of an SAI before it
    row = con.execute(f"SELECT coalesce(max(seq), 0) + 1 FROM {table}").fetchone()
    seq = int(row[0]) if row else 1
    con.execute(f"INSERT INTO {table} (seq, token, previous, ids, vectors_only) "
                "VALUES (?, ?, ?, CAST(?::VARCHAR AS BIGINT[]), ?)",
                [seq, token, previous, int_list(np.unique(ids).tolist()), vectors_only])
    con.execute(f"DELETE FROM {table} WHERE seq <= ?", [seq - KEPT])


def touched(con: duckdb.DuckDBPyConnection, collection: str, *, since: str, until: str,
            rows_only: bool = False) -> np.ndarray | None:
    """The ids of every chunk the writes from `since` to `until` touched, sorted (with
    `rows_only`, those of writes that changed more than vectors); None when the log does not
    hold every one of those writes."""
    if since == until:
        return np.zeros(0, np.int64)
    table = table_of(collection)
    try:
        links = con.execute(f"SELECT token, previous, seq FROM {table}").fetchall()
    except duckdb.CatalogException:  # no write has logged here yet
        return None
    before = {token: (previous, seq) for token, previous, seq in links}
    seqs: list[int] = []
    at = until
    while at != since:
        if at not in before or len(seqs) > len(before):
            return None
        at, seq = before[at]
        seqs.append(seq)
    skip = " AND vectors_only IS NOT TRUE" if rows_only else ""
    rows = con.execute(f"SELECT ids FROM {table} WHERE seq IN {INTS}{skip}",
                       [int_list(seqs)]).fetchall()
    found = [np.asarray(ids, np.int64) for (ids,) in rows]
    return np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
