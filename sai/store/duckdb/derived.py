"""The tables a process derives from a collection's chunk rows, and the reads they serve.

The vector table (over the shared sidecar, store/duckdb/sidecar.py), the row table
(store/duckdb/chunkrows.py), the symbol table (store/symbols.py) and the BM25 CSR
(store/duckdb/postings.py) are read once per index token and shared by the process's threads
(the rows and the CSR by every process too, as files: store/duckdb/shared_copies.py); after a
write each is patched from its old copy where it can (store/duckdb/sidecar_source.py).
A writer reads its own uncommitted rows, never a shared copy. `DerivedTables` is the part of
tables.Connection that holds these reads; the rest of Connection is the SQL of the tables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TypeVar

import duckdb
import numpy as np
import pyarrow as pa

from sai.store.cache import TokenCache
from sai.store.duckdb import shared_copies, sidecar_source
from sai.store.duckdb.chunkrows import RowTable
from sai.store.duckdb.postings import LexicalTable, Postings
from sai.store.duckdb.rows import ChunkRow, chunk_cols, chunk_rows_of, int_list
from sai.store.duckdb.sidecar import Sidecar
from sai.store.duckdb.vectors import VectorTable
from sai.store.symbols import SYMBOL_COLS, SymbolRow, SymbolTable

T = TypeVar("T")
R = TypeVar("R")
FEW_IDS = 512  # ids bound as one list; more are joined (DerivedTables._among)
VECTORS_COMPLETE = "vectors_complete"  # meta key: "1" when no chunk waits for a vector (vectors_complete)


class DerivedTables:
    """What tables.Connection reads through the process's derived copies."""

    con: duckdb.DuckDBPyConnection
    collection: str
    sidecar: Sidecar | None  # the index file's shared vector copy (None: vectors held in memory)
    derived: TokenCache
    postings: Postings

    @property
    def dirty(self) -> bool:
        raise NotImplementedError

    def meta(self) -> dict[str, str]:
        raise NotImplementedError

    def has_vectors(self) -> bool:
        raise NotImplementedError

    def has_postings(self) -> bool:
        raise NotImplementedError

    def chunk_count(self, keys: list[str] | None = None) -> int:
        raise NotImplementedError

    def _arrow(self, sql: str, params: list[object] | None = None) -> pa.Table:
        """A query's result as one Arrow table (duckdb may hand back a batch reader)."""
        result = self.con.execute(sql, params).arrow()
        return result.read_all() if hasattr(result, "read_all") else result

    @property
    def token(self) -> str:
        """Changes with every write of chunk rows: what a process's vector copy is keyed by."""
        return self.meta().get("token", "")

    def vector_table(self) -> VectorTable:
        """Every chunk's vector, from the shared sidecar when this reads committed rows
        (store/duckdb/sidecar.py), else from a copy in memory (store/duckdb/vectors.py)."""
        token = self.token
        if self.dirty or self.sidecar is None or not token:
            return self._derived("vectors", VectorTable.from_arrow, self.vector_rows)
        return self.derived.get(token, lambda: sidecar_source.mapped_table(self, token), name="vectors")

    def row_table(self) -> RowTable:
        """Every chunk's row without its text, from this process's copy when current (store/chunkrows.py)."""
        return self._derived("rows", RowTable.from_arrow, self.row_rows, patch=sidecar_source.patch_rows, shared=True)

    def row_rows(self, ids: np.ndarray | None = None) -> pa.Table:
        """The rows of RowTable (of these chunk ids; None: all), by id."""
        if ids is None:
            return self._arrow(f"SELECT {chunk_cols(text=False)} FROM {self.collection} ORDER BY id")
        self.con.register("sai_wanted", pa.table({"id": pa.array(ids, pa.int64())}))
        try:
            return self._arrow(f"SELECT {chunk_cols(text=False)} FROM {self.collection} "
                               "WHERE id IN (SELECT id FROM sai_wanted) ORDER BY id")
        finally:
            self.con.unregister("sai_wanted")

    def symbols(self) -> SymbolTable:
        """Chunk ids and definitions, from this process's copy when current (store/symbols.py)."""
        return self._derived("symbols", SymbolTable.from_arrow, self._symbol_rows, patch=sidecar_source.patch_symbols,
                             shared=True)

    def _derived(self, name: str, build: Callable[[str, R], T], rows: Callable[[], R], *,
                 patch: Callable[..., T | None] | None = None, shared: bool = False) -> T:
        """A table derived from the chunk rows, shared by the process's threads until the token
        changes; then patched from its old copy by `patch` when it can (store/duckdb/sidecar_source.py).
        A `shared` table is first sought in the file other processes map (store/duckdb/shared_copies.py)."""
        if self.dirty:  # a writer reads its own uncommitted rows: never from the shared copy
            return build("", rows())
        token = self.token
        if patch is not None and self.sidecar is not None:
            self.vector_table()  # the sidecar's mark at this token: what the next write's patch starts from
        renew = None if patch is None else (lambda old: patch(self, old, token))

        def load() -> T:
            if shared and patch is not None and self.sidecar is not None:
                return shared_copies.load(self, name, token, build=lambda: build(token, rows()), patch=patch)
            return build(token, rows())

        return self.derived.get(token, load, name=name, patch=renew)

    def _symbol_rows(self) -> pa.Table:
        return self._arrow(f"SELECT {SYMBOL_COLS} FROM {self.collection} ORDER BY id")

    def symbol_rows_of(self, files: frozenset[str]) -> list[SymbolRow]:
        """The symbol rows of every chunk of these files, by id."""
        return [tuple(r) for r in self.con.execute(
            f"SELECT {SYMBOL_COLS} FROM {self.collection} WHERE path IN (SELECT unnest(?::VARCHAR[])) ORDER BY id",
            [sorted(files)]).fetchall()]

    def files_of(self, ids: np.ndarray) -> set[str]:
        """The files of these chunk ids."""
        rows = self.con.execute(f"SELECT DISTINCT path FROM {self.collection} WHERE id IN "
                                "(SELECT unnest(CAST(?::VARCHAR AS BIGINT[])))", [int_list(ids.tolist())]).fetchall()
        return {path for (path,) in rows}

    def vector_rows(self) -> pa.Table:
        vectors = "embedding" if self.has_vectors() else "NULL::FLOAT[1] AS embedding"
        # Unordered: DuckDB's sort of the vectors cost ~40 MB more at 20k chunks; from_arrow orders by id.
        return self._arrow(f"SELECT id, path, language, {vectors} FROM {self.collection}")

    def vectors_complete(self) -> bool:
        """Whether the meta records that no chunk waits for a vector: set by an index run whose
        vectors are all written (mark_vectors_complete), unset with the first chunk stored without
        one (insert_chunks), in the same transactions. Looking instead reads the whole vector
        column (60 ms at 20k chunks, linear)."""
        return self.meta().get(VECTORS_COMPLETE) == "1"

    def pending_count(self) -> int:
        """Chunks stored without a vector yet: none when the meta says so, else from this process's
        vector table when it holds a current one (a search does) or the sidecar does, else one
        count (which reads every vector)."""
        if self.vectors_complete():
            return 0
        held = None if self.dirty else self.derived.peek(self.token, name="vectors")
        if held is None and not self.dirty:
            held = sidecar_source.current_table(self, self.token)
        if isinstance(held, VectorTable):
            return len(held) - held.vectors
        if not self.has_vectors():
            return self.chunk_count()
        row = self.con.execute(f"SELECT count(*) FROM {self.collection} WHERE embedding IS NULL").fetchone()
        return int(row[0]) if row else 0

    def lexical_table(self) -> LexicalTable:
        """Every chunk's postings, from this process's copy when it is current (store/duckdb/postings.py)."""
        return self._derived("lexicon", LexicalTable.from_arrow, self.postings.rows,
                             patch=sidecar_source.patch_lexicon, shared=True)

    def lexical(self, query_lexemes: str, limit: int, *, among: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) of the best lexical matches, best first (ties by id).

        Okapi BM25 (k1 1.2, b 0.75) over the postings of the query's terms only, in numpy
        (store/duckdb/postings.py). `among` (chunk ids) restricts the search to those chunks, with the
        statistics (document count, mean length, document frequencies) of that subset: the
        answer an index holding only them would give.
        """
        if not query_lexemes.strip() or not self.has_postings() or (among is not None and not len(among)):
            return []
        terms = self.postings.query_terms(query_lexemes)
        if not terms:
            return []
        table = self.lexical_table()
        return table.search(terms, limit, mask=None if among is None else table.mask_of(among))

    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        """These chunks, in the order of `ids` (missing ids dropped).

        Without `text` the rows carry an empty text: the text column is the costly one to read.
        """
        if not ids:
            return []
        if not text and not self.dirty:  # what ranking asks: from memory
            return self.row_table().rows(ids, chunk_rows_of)
        held = None if self.dirty else self.derived.peek(self.token, name="rows")
        if isinstance(held, RowTable):  # a search's rows are in memory: only their texts to read
            rows = held.rows(ids, chunk_rows_of)
            with self._among([r.id for r in rows]) as (where, params):
                found = self.con.execute(
                    f"SELECT id, text FROM {self.collection} WHERE {where}", params).fetchall() if rows else []
            texts = dict(found)
            return [replace(r, text=texts.get(r.id, "")) for r in rows]
        with self._among(ids) as (where, params):
            table = self._arrow(f"SELECT {chunk_cols(text=text)} FROM {self.collection} WHERE {where}", params)
        position = {row.id: row for row in chunk_rows_of(table)}
        return [position[i] for i in ids if i in position]

    @contextlib.contextmanager
    def _among(self, ids: list[int]) -> Iterator[tuple[str, list[object]]]:
        """A condition on `id` holding for these ids, and its parameters: a bound list for a
        few (a search's hits), a join with a registered table for many (duplicates' texts of
        every small unit: a list tested against each row grew with both, 60 s and more at 838k)."""
        within = f"id BETWEEN {int(min(ids))} AND {int(max(ids))}" if ids else "false"  # zone maps skip the rest
        if len(ids) <= FEW_IDS:
            yield f"{within} AND list_contains(CAST(?::VARCHAR AS BIGINT[]), id)", [int_list(ids)]
            return
        self.con.register("sai_among", pa.table({"id": pa.array(ids, pa.int64())}))
        try:
            yield f"{within} AND id IN (SELECT id FROM sai_among)", []
        finally:
            self.con.unregister("sai_among")
