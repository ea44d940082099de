"""The DuckDB backend's reader: every read verb of the contract (store/base.py), with its SQL.

A reader is made for a collection that exists (the store hands out base.EMPTY otherwise). Rows
of the meta, files and chunks are read from the file through the session's Connection
(tables.py); vector search, BM25, ranking's rows, symbols and shapes are answered from the
copies every reader derives (copies.py), a Scope turned into the vector copy's row mask here.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC

import numpy as np

from sai.models import ChunkRow, FileRow, Reference
from sai.store.base import IndexReader, IndexSummary, Pending, Scope
from sai.store.duckdb.copies import LEXICON, ROWS, SHAPES, SYMBOLS
from sai.store.duckdb.rows import (
    CHUNK_COLS,
    TEXTS,
    among,
    arrow,
    chunk_cols,
    chunk_rows_of,
    matrix_of,
    text_list,
)
from sai.store.duckdb.tables import VECTORS_COMPLETE, Connection
from sai.store.duckdb.vectors import VectorTable
from sai.store.shapes import ShapeTable
from sai.store.symbols import SymbolTable


class DuckDBReader(IndexReader):
    """Reads one collection through one connection (a lease cursor, or a writer's own)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.copies = conn.copies  # what the session's snapshot derives (tests look at them too)
        self.table = conn.collection
        self._masks: dict[tuple[str, Scope], np.ndarray | None] = {}

    # -- the index and its files
    def has_index(self) -> bool:
        return self.conn.has_index()

    def meta(self) -> dict[str, str]:
        return self.conn.meta()

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        """File rows, all or those of `keys` (from the lease's cache when read-only)."""
        if self.conn.read_only and (keys is None or "files" in self.conn.cache):
            # a copy: callers may change what they get, the lease's cache stays
            every = self.conn.cached("files", lambda: self._files(None))
            return dict(every) if keys is None else {k: every[k] for k in keys if k in every}
        return self._files(keys)  # a few keys after a write: not every file row (58 ms at 32k files)

    def file_hashes(self) -> dict[str, str]:
        # two columns, no FileRow: 4 ms at 5,000 files where every row's cost 10-25 ms
        return dict(self.conn.con.execute(f"SELECT path, file_hash FROM {self.conn.files_table}").fetchall())

    def _files(self, keys: list[str] | None) -> dict[str, FileRow]:
        sql = f"SELECT path, size, mtime_ns, file_hash, chunk_count FROM {self.conn.files_table}"
        if keys is None:
            rows = self.conn.con.execute(sql).fetchall()
        else:
            rows = self.conn.con.execute(
                sql + f" WHERE path IN {TEXTS}", [text_list(keys)]).fetchall()
        return {r[0]: FileRow(*r) for r in rows}

    def chunk_count(self, keys: list[str] | None = None) -> int:
        if keys is None:
            return self._one(f"SELECT count(*) FROM {self.table}")
        return self._one(f"SELECT count(*) FROM {self.table} WHERE path IN {TEXTS}", [text_list(keys)])

    def summary(self) -> IndexSummary:
        languages = self.conn.con.execute(f"SELECT language, count(*) FROM {self.table} WHERE language IS NOT NULL "
                                          "GROUP BY language ORDER BY language").fetchall()
        row = self.conn.con.execute(f"SELECT max(indexed_at) FROM {self.conn.files_table}").fetchone()
        return IndexSummary(meta=self.meta(), files=self.files(), chunk_count=self.chunk_count(),
                            languages={str(name): int(count) for name, count in languages},
                            indexed_at=row[0].replace(tzinfo=UTC).isoformat() if row and row[0] else None,
                            pending=self.pending_count())

    def content_hashes(self) -> set[str]:
        """Hashes of the texts stored with a vector (those without one still need embedding)."""
        if not self.conn.has_vectors():
            return set()
        rows = self.conn.con.execute(f"SELECT DISTINCT content_hash FROM {self.table} WHERE embedding IS NOT NULL")
        return {r[0] for r in rows.fetchall()}

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors for these content hashes (any file), so unchanged text is not re-embedded.

        The rows' ids first, from the hash column alone, then their vectors by id: any test of
        the vector in the scan by hash, `embedding IS NOT NULL` included, reads every vector
        (40 hashes at 1M chunks: 0.66 s, against 0.11 s this way)."""
        if not hashes or not self.conn.has_vectors():
            return {}
        ids = [int(i) for (i,) in self.conn.con.execute(
            f"SELECT id FROM {self.table} WHERE content_hash IN {TEXTS}", [text_list(hashes)]).fetchall()]
        if not ids:
            return {}
        with among(self.conn.con, sorted(ids)) as (where, params):
            table = arrow(self.conn.con, f"SELECT content_hash, embedding FROM {self.table} "
                                         f"WHERE {where} AND embedding IS NOT NULL ORDER BY id", params)
        if table.num_rows == 0:
            return {}
        out: dict[str, np.ndarray] = {}
        for digest, vector in zip(table.column("content_hash").to_pylist(), matrix_of(table.column("embedding")),
                                  strict=True):
            out.setdefault(digest, vector)  # copies share one vector: the first will do
        return out

    # -- search
    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        table = self.copies.vectors()
        return table.nearest(vector, k, mask=self._mask(table, scope), exclude=exclude)

    def nearest_each(self, vectors: np.ndarray, k: int, *, exclude: list[int],
                     floor: float = -1.0) -> list[list[tuple[int, float]]]:
        return self.copies.vectors().nearest_each(vectors, k, exclude=exclude, floor=floor)

    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        """Okapi BM25 (k1 1.2, b 0.75) over the postings of the query's terms only, in numpy
        (postings.py); a scope takes the statistics of its chunks, as an index of only them would."""
        if not lexemes.strip():
            return []
        scoped = None
        if scope is not None and not scope.everything:
            table = self.copies.vectors()
            mask = self._mask(table, scope)
            # a scope keeping every current chunk (a language all of them are in) restricts nothing
            scoped = None if mask is None or int(np.count_nonzero(mask)) == len(table) else table.ids[mask]
        if scoped is not None and not len(scoped):
            return []
        terms = self.conn.postings.query_terms(lexemes)
        if not terms:
            return []
        bm25 = self.copies.get(LEXICON)
        return bm25.search(terms, k, mask=None if scoped is None else bm25.mask_of(scoped))

    def _mask(self, table: VectorTable, scope: Scope | None) -> np.ndarray | None:
        """The rows of `table` in `scope` (None: every row), kept for the session's next question."""
        if scope is None or scope.everything:
            return None
        key = (table.token, scope)
        if not table.token or key not in self._masks:
            self._masks = {key: table.mask(language=scope.language, paths=scope.keys)}
        return self._masks[key]

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        table = self.copies.vectors() if ids else None
        found = ((int(i), table.vector_of(int(i))) for i in ids) if table is not None else ()
        return {i: vector for i, vector in found if vector is not None}

    # -- chunks
    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        """These chunks, in the order of `ids` (missing ids dropped); without `text` from the row
        copy (what ranking asks), with it the copy's rows and only their texts read."""
        if not ids:
            return []
        if not text and not self.conn.dirty:
            return self.copies.get(ROWS).rows(ids, chunk_rows_of)
        held = None if self.conn.dirty else self.copies.held(ROWS)
        if held is not None:  # a search's rows are in memory: only their texts to read
            rows = held.rows(ids, chunk_rows_of)
            texts = self.texts_by_id([r.id for r in rows])
            return [replace(r, text=texts.get(r.id, "")) for r in rows]
        with among(self.conn.con, ids) as (where, params):
            table = arrow(self.conn.con, f"SELECT {chunk_cols(text=text)} FROM {self.table} WHERE {where}", params)
        position = {row.id: row for row in chunk_rows_of(table)}
        return [position[i] for i in ids if i in position]

    def chunks_of_file(self, key: str, *, line: int | None = None) -> list[ChunkRow]:
        if line is None:
            return chunk_rows_of(arrow(self.conn.con, f"SELECT {CHUNK_COLS} FROM {self.table} WHERE path = ? "
                                                      "ORDER BY start_line, end_line, id", [key]))
        return chunk_rows_of(arrow(self.conn.con, f"SELECT {CHUNK_COLS} FROM {self.table} WHERE path = ? AND "
                                  "start_line <= ? AND end_line >= ? ORDER BY end_line - start_line, start_line, id",
                                  [key, int(line), int(line)]))

    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        """Every chunk with its vector, without its text (most of the memory of a large index)."""
        empty: tuple[list[ChunkRow], np.ndarray, list[bytes | None]] = [], np.zeros((0, 0), dtype=np.float32), []
        if not self.conn.has_vectors():
            return empty
        # duplicates compare the chunks that have their vector
        table = arrow(self.conn.con, f"SELECT {chunk_cols(text=False)}, embedding, shape FROM {self.table} "
                                     "WHERE embedding IS NOT NULL ORDER BY path, start_line, end_line, id")
        rows = chunk_rows_of(table)
        if not rows:
            return empty
        return rows, matrix_of(table.column("embedding")), table.column("shape").to_pylist()

    def symbols(self) -> SymbolTable:
        return self.copies.get(SYMBOLS)

    def shapes(self) -> ShapeTable:
        return self.copies.get(SHAPES)

    # -- pending vectors
    def vectors_complete(self) -> bool:
        """Whether the meta records that no chunk waits for a vector: set by an index run whose
        vectors are all written (mark_vectors_complete), unset with the first chunk stored without
        one, in the same transactions. Looking instead reads the whole vector column (60 ms at
        20k chunks, linear)."""
        return self.meta().get(VECTORS_COMPLETE) == "1"

    def pending_count(self) -> int:
        """Chunks stored without a vector yet: none when the meta says so, else from the vector
        copy when it costs nothing to have (a search's, or a current sidecar's), else one count
        (which reads every vector)."""
        if self.vectors_complete():
            return 0
        held = self.copies.current_vectors()
        if held is not None:
            return len(held) - held.vectors
        if not self.conn.has_vectors():
            return self.chunk_count()
        return self._one(f"SELECT count(*) FROM {self.table} WHERE embedding IS NULL")

    def pending(self, after: int = 0) -> list[Pending]:
        """The distinct texts of the chunks of id above `after` without a vector, by first id."""
        if self.vectors_complete():
            return []
        waiting = "AND embedding IS NULL " if self.conn.has_vectors() else ""
        rows = self.conn.con.execute(
            f"SELECT content_hash, min(id) AS first, count(*) FROM {self.table} "
            f"WHERE id > ? {waiting}GROUP BY content_hash ORDER BY first", [int(after)]).fetchall()
        return [Pending(h, int(first), int(n)) for h, first, n in rows]

    def texts_by_id(self, ids: list[int]) -> dict[int, str]:
        """The texts of these chunks: the bounds let the scan skip every stretch of rows outside
        them (ids grow as rows are stored), so reading a group costs the same at any size."""
        if not ids:
            return {}
        with among(self.conn.con, ids) as (where, params):
            rows = self.conn.con.execute(f"SELECT id, text FROM {self.table} WHERE {where}", params).fetchall()
        return {int(i): text for i, text in rows}

    # -- references
    def references(self, names: list[str]) -> list[Reference]:
        return self.conn.references.named(names) if names else []

    def references_in(self, key: str, start: int, end: int) -> list[Reference]:
        return self.conn.references.within(key, start, end)

    def files_using(self, names: list[str]) -> dict[str, set[str]]:
        return self.conn.references.files_using(names)

    def _one(self, sql: str, params: list[object] | None = None) -> int:
        row = self.conn.con.execute(sql, params).fetchone()
        return int(row[0]) if row else 0
