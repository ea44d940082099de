"""The reads of chunk rows that the derived copies are made of: one connection's snapshot as the
copies' source (copies.py) and the vector sidecar's VectorSource (sidecar.py).

Composed by tables.Connection, which hands it the three facts of its state it needs (the token,
the meta, whether the vector column exists); it never calls back into the connection otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import duckdb
import numpy as np
import pyarrow as pa

from sai.store.duckdb import changelog
from sai.store.duckdb.postings import Postings
from sai.store.duckdb.rows import INTS, TEXTS, among, arrow, chunk_cols, int_list, text_list
from sai.store.symbols import SYMBOL_COLS, SymbolRow

# Rows per Arrow batch a sidecar patch reads: a batch's vectors are copied a few times on their
# way to the files (Arrow, the float matrix, its rotation for the bits), 3 MB a copy at 384-d.
_BATCH_ROWS = 2_048


class ChunkReads:
    """SQL reads of one collection's chunk rows at one connection's snapshot."""

    def __init__(self, con: duckdb.DuckDBPyConnection, postings: Postings, *, token: Callable[[], str],
                 meta: Callable[[], dict[str, str]], has_vectors: Callable[[], bool]) -> None:
        self.con = con
        self.postings = postings
        self.table = postings.chunks
        self._token, self._meta, self._has_vectors = token, meta, has_vectors

    @property
    def token(self) -> str:
        """The token the copies are read at: '' while the snapshot holds uncommitted rows."""
        return self._token()

    def identity(self) -> tuple[str, int]:
        """What a sidecar is built from besides the token: the collection's creation time, the dimension."""
        meta = self._meta()
        return meta.get("created_at", ""), int(meta.get("vector_dim") or 0)

    def touched_since(self, token: str, *, rows_only: bool = False) -> np.ndarray | None:
        """The ids of every chunk written since `token` (None: the change log misses a write);
        with `rows_only`, of the writes that changed more than their vectors."""
        return changelog.touched(self.con, self.table, since=token, until=self._meta().get("token", ""),
                                 rows_only=rows_only)

    def vector_rows(self) -> pa.Table:
        """id, path, language and embedding of every chunk, unordered: DuckDB's sort of the vectors
        cost ~40 MB more at 20k chunks (VectorTable.from_arrow orders them by id)."""
        vectors = "embedding" if self._has_vectors() else "NULL::FLOAT[1] AS embedding"
        return arrow(self.con, f"SELECT id, path, language, {vectors} FROM {self.table}")

    def vector_batches(self, ids: np.ndarray | None) -> Iterator[pa.RecordBatch]:
        """id, present, path, language and embedding (null: none yet) of these chunks (None: every
        chunk), in no particular order, streamed: a sidecar rebuild holds one batch of vectors at
        a time (an ORDER BY would make DuckDB sort every vector before handing back the first)."""
        if self._has_vectors():
            columns = "(embedding IS NOT NULL)::UTINYINT AS present, path, language, embedding"
        else:
            columns = "0::UTINYINT AS present, path, language, NULL::FLOAT[1] AS embedding"
        with among(self.con, ids) as (where, params):
            yield from self.con.execute(f"SELECT id, {columns} FROM {self.table} WHERE {where}",
                                        params).to_arrow_reader(_BATCH_ROWS)

    def row_rows(self, ids: np.ndarray | None = None) -> pa.Table:
        """Every chunk's row without its text (of these chunk ids; None: all), by id."""
        return self._by_id(chunk_cols(text=False), ids)

    def shape_rows(self, ids: np.ndarray | None = None) -> tuple[np.ndarray, list[bytes | None]]:
        """Every chunk's id and shape signature (of these chunk ids; None: all), by id."""
        table = self._by_id("id, shape", ids)
        return table.column("id").to_numpy().astype(np.int64), table.column("shape").to_pylist()

    def _by_id(self, columns: str, ids: np.ndarray | None) -> pa.Table:
        with among(self.con, ids) as (where, params):
            return arrow(self.con, f"SELECT {columns} FROM {self.table} WHERE {where} ORDER BY id", params)

    def symbol_rows(self) -> pa.Table:
        """The SYMBOL_COLS of every chunk, by id."""
        return arrow(self.con, f"SELECT {SYMBOL_COLS} FROM {self.table} ORDER BY id")

    def symbol_rows_of(self, files: frozenset[str]) -> list[SymbolRow]:
        """The symbol rows of every chunk of these files, by id."""
        return [tuple(r) for r in self.con.execute(
            f"SELECT {SYMBOL_COLS} FROM {self.table} WHERE path IN {TEXTS} ORDER BY id",
            [text_list(sorted(files))]).fetchall()]

    def files_of(self, ids: np.ndarray) -> set[str]:
        """The files of these chunk ids."""
        rows = self.con.execute(f"SELECT DISTINCT path FROM {self.table} WHERE id IN {INTS}",
                                [int_list(ids.tolist())]).fetchall()
        return {path for (path,) in rows}

    def lexicon_rows(self, ids: np.ndarray | None = None, *, after_termid: int = -1
                     ) -> tuple[pa.Table, pa.Table, pa.Table]:
        """What LexicalTable.from_arrow reads: the chunk ids, their postings, the terms numbered
        after `after_termid`; of every chunk, or of those of these ids still in the index."""
        p = self.postings
        terms = arrow(self.con, f"SELECT hash(term) AS hash, termid FROM {p.terms} WHERE termid > ?", [after_termid])
        with among(self.con, ids) as (where, params):
            return (arrow(self.con, f"SELECT id FROM {self.table} WHERE {where} ORDER BY id", params),
                    arrow(self.con, f"SELECT id, termid, tf FROM {p.postings} WHERE {where}", params), terms)
