"""The verbs of the store contract (store/base.py) that `sai copy` uses, over the DuckDB file.

A stand-in: once the DuckDB store implements base.py in full (the store seam), `open_store`
returns that store and this module goes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np

from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk
from sai.store import Store
from sai.store.tables import Connection


class DuckDBSide:
    """The DuckDB file seen through the contract's copy verbs."""

    backend = "duckdb"

    def __init__(self, store: Store) -> None:
        self.store = store
        self.location = str(store.path)

    @property
    def exists(self) -> bool:
        return self.store.exists

    @contextlib.contextmanager
    def read(self) -> Iterator[_Reader]:
        with self.store.read() as conn:
            yield _Reader(conn)

    @contextlib.contextmanager
    def write(self) -> Iterator[_Writer]:
        with self.store.write() as conn:
            yield _Writer(conn)

    def close(self) -> None:
        self.store.close()


class _Reader:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def has_index(self) -> bool:
        return self.conn.has_collection()

    def meta(self) -> dict[str, str]:
        return self.conn.meta()

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        return self.conn.files(keys) if self.has_index() else {}

    def chunk_count(self, keys: list[str] | None = None) -> int:
        return self.conn.chunk_count(keys) if self.has_index() else 0

    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        rows, matrix = self.conn.all_chunks(text=False)
        return rows, matrix, self.conn.all_shapes() if rows else []

    def texts(self, ids: list[int]) -> dict[int, str]:
        return self.conn.chunk_texts(ids)


class _Writer(_Reader):
    def create(self, meta: IndexMeta) -> None:
        self.conn.create_collection(meta)

    def drop(self) -> None:
        self.conn.drop_collection()

    def set_meta(self, values: dict[str, str]) -> None:
        self.conn.set_meta(values)

    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        keys = sorted({f.path for f in files} | {c.path for c in chunks})
        self.conn.delete_chunks(keys)
        rows = [(c.path, c.language, c.start_line, c.end_line, c.symbol, c.text, c.content_hash, c.file_hash,
                 c.no_duplicate, c.lexemes, c.shape, c.kind) for c in chunks]
        self.conn.insert_chunks(rows, vectors)
        self.conn.upsert_files(files)

    def touch_files(self, files: list[FileRow]) -> None:
        self.conn.upsert_files(files)

    def finish_run(self) -> None:
        self.conn.rebuild_fts()
