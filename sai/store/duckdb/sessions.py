"""The DuckDB backend's sessions: the contract's verbs (store/base.py) over one Connection.

Each verb is the Connection method of the same name (tables.py), answered as an empty index
when the file has no collection. Vector questions are answered by the process's in-memory
VectorTable (vectors.py), with a Scope turned into its row mask here; lexical ones by the BM25
of postings.py, restricted to the scope's chunk ids.
"""

from __future__ import annotations

import numpy as np

from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk, Reference
from sai.store.base import IndexReader, IndexSummary, IndexWriter, Pending, Scope
from sai.store.duckdb import schema
from sai.store.duckdb.tables import Connection
from sai.store.duckdb.vectors import VectorTable
from sai.store.shapes import ShapeTable
from sai.store.symbols import SymbolTable


class DuckDBReader(IndexReader):
    """Reads through one connection (a lease cursor, or the writing thread's own connection)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn  # tests reach the file through it; the core never does
        self._masks: dict[tuple[str, Scope], np.ndarray | None] = {}

    # -- the index and its files
    def has_index(self) -> bool:
        return self.conn.has_index()

    def meta(self) -> dict[str, str]:
        return self.conn.meta()

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        return self.conn.files(keys) if self.has_index() else {}

    def chunk_count(self, keys: list[str] | None = None) -> int:
        return self.conn.chunk_count(keys) if self.has_index() else 0

    def summary(self) -> IndexSummary:
        if not self.has_index():
            return IndexSummary(meta=self.meta())
        return IndexSummary(meta=self.meta(), files=self.conn.files(), chunk_count=self.conn.chunk_count(),
                            languages=self.conn.language_counts(), indexed_at=self.conn.last_indexed_at(),
                            pending=self.conn.pending_count())

    def content_hashes(self) -> set[str]:
        return self.conn.content_hashes() if self.has_index() else set()

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        return self.conn.vectors_by_hash(hashes) if hashes and self.has_index() else {}

    # -- search
    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        if not self.has_index():
            return []
        table = self.conn.vector_table()
        return table.nearest(vector, k, mask=self._mask(table, scope), exclude=exclude)

    def nearest_each(self, vectors: np.ndarray, k: int, *, exclude: list[int]) -> list[list[tuple[int, float]]]:
        if not self.has_index():
            return [[] for _ in exclude]
        return self.conn.vector_table().nearest_each(vectors, k, exclude=exclude)

    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        if not self.has_index():
            return []
        among = None
        if scope is not None and not scope.everything:
            table = self.conn.vector_table()
            mask = self._mask(table, scope)
            # a scope keeping every current chunk (a language all of them are in) restricts nothing
            among = None if mask is None or int(np.count_nonzero(mask)) == len(table) else table.ids[mask]
        return self.conn.lexical(lexemes, k, among=among)

    def _mask(self, table: VectorTable, scope: Scope | None) -> np.ndarray | None:
        """The rows of `table` in `scope` (None: every row), kept for the session's next question."""
        if scope is None or scope.everything:
            return None
        key = (table.token, scope)
        if not table.token or key not in self._masks:
            self._masks = {key: table.mask(language=scope.language, paths=scope.keys)}
        return self._masks[key]

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        if not ids or not self.has_index():
            return {}
        table = self.conn.vector_table()
        found = ((int(i), table.vector_of(int(i))) for i in ids)
        return {i: vector for i, vector in found if vector is not None}

    # -- chunks
    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        return self.conn.chunks(ids, text=text) if ids and self.has_index() else []

    def chunks_of_file(self, key: str, *, line: int | None = None) -> list[ChunkRow]:
        return self.conn.chunks_of_file(key, line=line) if self.has_index() else []

    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        if not self.has_index():
            return [], np.zeros((0, 0), dtype=np.float32), []
        rows, matrix = self.conn.all_chunks(text=False)
        return rows, matrix, self.conn.all_shapes() if rows else []

    def symbols(self) -> SymbolTable:
        return self.conn.symbols() if self.has_index() else SymbolTable("", [])

    def shapes(self) -> ShapeTable:
        return self.conn.shapes() if self.has_index() else super().shapes()

    def pending_count(self) -> int:
        return self.conn.pending_count() if self.has_index() else 0

    def pending(self, after: int = 0) -> list[Pending]:
        return self.conn.pending(after) if self.has_index() else []

    def vectors_complete(self) -> bool:
        return self.conn.vectors_complete() if self.has_index() else True

    def texts_by_id(self, ids: list[int]) -> dict[int, str]:
        return self.conn.texts_by_id(ids) if ids and self.has_index() else {}


    def references(self, names: list[str]) -> list[Reference]:
        return self.conn.references.named(names) if names and self.conn.has_references() else []

    def references_in(self, key: str, start: int, end: int) -> list[Reference]:
        return self.conn.references.within(key, start, end) if self.conn.has_references() else []

    def files_using(self, names: list[str]) -> dict[str, set[str]]:
        if not names or not self.conn.has_references():
            return {name: set() for name in names}
        return self.conn.references.files_using(names)


class DuckDBWriter(DuckDBReader, IndexWriter):
    """A write transaction on the file (store.py opens, commits or rolls it back)."""

    def create(self, meta: IndexMeta) -> None:
        schema.create(self.conn, meta)

    def drop(self) -> None:
        schema.drop(self.conn)

    def set_meta(self, values: dict[str, str]) -> None:
        self.conn.set_meta(values)

    def chunk_hashes(self, keys: list[str]) -> dict[str, list[str]]:
        return self.conn.chunk_hashes(keys) if keys and self.has_index() else {}

    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        keys = [f.path for f in files]
        held = list(self.conn.files(keys)) if keys else []  # a file never written has no chunks to delete
        self.conn.delete_chunks(held)
        self.conn.insert_chunks(chunks, vectors)
        self.conn.touch_files(files)

    def replace_references(self, by_key: dict[str, list[Reference]]) -> None:
        if by_key and self.conn.has_references():
            self.conn.references.replace(by_key)

    def set_vectors(self, hashes: list[str], vectors: np.ndarray, *, ids: tuple[int, int] | None = None) -> int:
        return self.conn.set_vectors(hashes, vectors, ids=ids) if hashes and self.has_index() else 0

    def copy_vectors(self, hashes: list[str]) -> int:
        return self.conn.copy_vectors(hashes) if hashes and self.has_index() else 0

    def mark_vectors_complete(self) -> None:
        if self.has_index():
            self.conn.mark_vectors_complete()

    def touch_files(self, files: list[FileRow]) -> None:
        self.conn.touch_files(files)

    def remove_files(self, keys: list[str]) -> int:
        if not keys or not self.has_index():
            return 0
        removed = self.conn.delete_chunks(keys)
        self.conn.delete_file_rows(keys)
        return removed
