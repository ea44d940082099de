"""The index file's side of the vector sidecar (store/duckdb/sidecar.py): what a DuckDB connection
hands it, the table a reader searches, mapped from it, and the patches of a process's other
copies that the sidecar's changes make possible.

The sidecar doubles as the change log of the chunk rows: at the same generation, the rows it
appended and tombstoned between two tokens are the chunks a write added and removed (every
change of a chunk row changes its (id, stamp) pair). So when a write's token arrives, the row
table and the lexical table a process holds are patched with those chunks, read by id, instead
of read whole again (a full read of the postings costs seconds at a million chunks). Any doubt
(no mark for the old token, another generation, too many changes) reads the table whole.

Kept apart from tables.py so the sidecar is one package's business: tables.Connection only asks
`mapped_table` for its vector table when it reads committed rows, and hands the patches below
to its derived tables.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from sai.store.duckdb import changelog
from sai.store.duckdb.chunkrows import RowTable
from sai.store.duckdb.postings import LexicalTable
from sai.store.duckdb.sidecar import Mark, changes
from sai.store.duckdb.vectors import VectorTable
from sai.store.symbols import SymbolTable

if TYPE_CHECKING:
    from sai.store.duckdb.derived import DerivedTables

log = logging.getLogger(__name__)
# A chunk row's write time in µs, times 2 (the low bit says whether it has its vector): with its
# id, what tells the sidecar a row is the one it holds
_STAMP = "coalesce(epoch_us(indexed_at), 0) * 2"
# Rows per Arrow batch a sidecar patch reads: a batch's vectors are copied a few times on their
# way to the files (Arrow, the float matrix, its rotation for the bits), 3 MB a copy at 384-d.
_BATCH_ROWS = 2_048
PATCH_SHARE = 0.1  # chunks changed since a copy's full read, past this share of it: read it whole
_MARKS_KEPT = 8  # tokens whose sidecar mark a process remembers


def mapped_table(conn: DerivedTables, token: str) -> VectorTable:
    """The vector table of `conn`'s snapshot (at `token`) over the shared sidecar, patched first
    when behind; where the sidecar cannot be used, a copy in this process's memory."""
    assert conn.sidecar is not None
    origin, dim = _identity(conn)
    try:
        view = conn.sidecar.view(ConnectionVectors(conn), token=token, origin=origin, dim=dim)
    except OSError as exc:  # a read-only place, a full disk: this process keeps its own copy
        log.debug("vector sidecar %s unusable (%s); reading the vectors into memory", conn.sidecar.dir, exc)
        return VectorTable.from_arrow(token, conn.vector_rows())
    marks = conn.derived.marks
    marks[token] = view.mark
    for old in list(marks)[:-_MARKS_KEPT]:
        del marks[old]
    return VectorTable.from_view(view)


def current_table(conn: DerivedTables, token: str) -> VectorTable | None:
    """The vector table of `conn`'s snapshot when the sidecar holds it already (mapping it costs
    nothing), else None: what a count of the chunks without a vector reads instead of every
    vector (a DuckDB filter on the embedding column reads the whole column, 30 MB at 20k chunks)."""
    if conn.sidecar is None or not token:
        return None
    origin, dim = _identity(conn)
    return conn.vector_table() if conn.sidecar.is_current(token=token, origin=origin, dim=dim) else None


def _identity(conn: DerivedTables) -> tuple[str, int]:
    """What a sidecar is built from besides the token: the collection's creation time, the dimension."""
    meta = conn.meta()
    return meta.get("created_at", ""), int(meta.get("vector_dim") or 0)


def _changes(conn: DerivedTables, since_token: str, since: Mark | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(chunk ids removed, chunk ids added) from `since_token` (whose sidecar mark is `since`, or
    the one this process saw) to `conn`'s snapshot, by the sidecar."""
    since = since or conn.derived.marks.get(since_token)  # type: ignore[assignment]
    if not isinstance(since, Mark) or conn.sidecar is None:
        return None
    table = conn.vector_table()  # the sidecar at this snapshot (patched by now if it was behind)
    return None if table.view is None else changes(since, table.view)


def patch_rows(conn: DerivedTables, old: RowTable, token: str, since: Mark | None = None) -> RowTable | None:
    """`old` brought to `token` with the rows of the chunks written since (None: read it whole)."""
    found = _changes(conn, old.token, since)
    if found is None:
        return None
    removed, added = found
    held = np.zeros(0, np.int64) if old.added is None else np.setdiff1d(old.added.ids, removed)
    written = np.union1d(held, added)
    dead = len(old.ids) - (len(old.ids) if old.alive is None else int(np.count_nonzero(old.alive)))
    if len(written) + dead + len(removed) > PATCH_SHARE * max(len(old.ids), 1):
        return None
    return old.patched(token, np.union1d(removed, added), conn.row_rows(np.unique(added)))


def patch_lexicon(conn: DerivedTables, old: LexicalTable, token: str, since: Mark | None = None
                  ) -> LexicalTable | None:
    """`old` brought to `token`: the chunks removed since masked out, a new delta read of every
    chunk written since its full read (None: read it whole)."""
    found = _changes(conn, old.token, since)
    if found is None:
        return None
    removed, added = found
    written = np.union1d(np.setdiff1d(old.written, removed), added)
    if len(written) + len(removed) > PATCH_SHARE * max(len(old.ids), 1):
        return None
    delta = LexicalTable.from_arrow(token, conn.postings.rows_of(written, after_termid=old.last_termid))
    return old.patched(token, np.union1d(removed, added), delta)


def patch_symbols(conn: DerivedTables, old: SymbolTable, token: str, since: Mark | None = None
                  ) -> SymbolTable | None:
    """`old` brought to `token`: every file written since it was built answered from its rows
    read now (None: read it whole)."""
    found = _changes(conn, old.token, since)
    if found is None:
        return None
    removed, added = found
    files = frozenset(old.patched_files | old.files_of(removed) | conn.files_of(added))
    rows = conn.symbol_rows_of(files) if files else []
    if len(rows) > PATCH_SHARE * max(old.built_rows, 1):
        return None
    return old.patched(token, files, rows)


class ConnectionVectors:
    """The sidecar's VectorSource over one connection's snapshot."""

    def __init__(self, conn: DerivedTables) -> None:
        self.conn = conn
        self.table = conn.collection

    def _arrow(self, sql: str) -> pa.Table:
        result = self.conn.con.execute(sql).arrow()
        return result.read_all() if hasattr(result, "read_all") else result

    def vector_stamps(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, stamps) of every chunk by id: what the sidecar is compared with."""
        # Two reads: `embedding IS NULL` is answered from the column's statistics when no vector
        # is missing (~1 ms), where `IS NOT NULL` per row reads every vector (0.3-0.9 s at 84k chunks).
        table = self._arrow(f"SELECT id, {_STAMP} AS stamp FROM {self.table} ORDER BY id")
        ids = table.column("id").to_numpy().astype(np.int64)
        stamps = table.column("stamp").to_numpy().astype(np.int64)
        if not self.conn.has_vectors():
            return ids, stamps  # no chunk has a vector yet
        missing = self._arrow(f"SELECT id FROM {self.table} WHERE embedding IS NULL").column("id")
        stamps += 1
        if len(missing):
            stamps[np.isin(ids, missing.to_numpy())] -= 1
        return ids, stamps

    def touched_since(self, token: str) -> np.ndarray | None:
        return changelog.touched(self.conn.con, self.table, since=token, until=self.conn.token)

    def vector_batches(self, ids: np.ndarray | None) -> Iterator[pa.RecordBatch]:
        """id, stamp, path, language and embedding (null: none yet) of these chunks (None:
        every chunk), in no particular order (the sidecar takes rows in any order), streamed:
        a sidecar rebuild holds one batch of vectors at a time (an ORDER BY would make DuckDB sort
        every vector before handing back the first)."""
        if self.conn.has_vectors():
            columns = f"{_STAMP} + (embedding IS NOT NULL)::BIGINT AS stamp, path, language, embedding"
        else:
            columns = f"{_STAMP} AS stamp, path, language, NULL::FLOAT[1] AS embedding"
        sql = f"SELECT id, {columns} FROM {self.table}"
        if ids is not None:
            self.conn.con.register("sai_wanted", pa.table({"id": pa.array(ids, pa.int64())}))
            sql += " WHERE id IN (SELECT id FROM sai_wanted)"
        try:
            yield from self.conn.con.execute(sql).to_arrow_reader(_BATCH_ROWS)
        finally:
            if ids is not None:
                self.conn.con.unregister("sai_wanted")
