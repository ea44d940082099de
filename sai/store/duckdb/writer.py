"""The DuckDB backend's writer: every write verb of the contract (store/base.py), with its SQL.

A writer is one transaction (lease.py opens, commits or rolls it back) and reads what it wrote
(reader.py's verbs, over its own uncommitted rows). Every statement that changes chunk rows
returns the ids it touched, which the Connection logs with the transaction's new token
(changelog.py): what every reader's copies are patched from.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sai.models import FileRow, IndexMeta, NewChunk
from sai.store.base import IndexWriter
from sai.store.duckdb import schema
from sai.store.duckdb.reader import DuckDBReader
from sai.store.duckdb.rows import TEXTS, registered, text_list, utc_now, vector_column
from sai.store.duckdb.tables import VECTORS_COMPLETE

_IN_KEYS = f"path IN {TEXTS}"  # bound: text_list(keys)


class DuckDBWriter(DuckDBReader, IndexWriter):
    """A write transaction on one collection."""

    def create(self, meta: IndexMeta) -> None:
        schema.create(self.conn, meta)

    def drop(self) -> None:
        schema.drop(self.conn)

    def set_meta(self, values: dict[str, str]) -> None:
        self.conn.set_meta(values)

    def chunk_hashes(self, keys: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if keys:
            for path, digest in self.conn.con.execute(
                    f"SELECT path, content_hash FROM {self.table} WHERE {_IN_KEYS}", [text_list(keys)]).fetchall():
                out.setdefault(path, []).append(digest)
        return out

    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        keys = [f.path for f in files]
        self._delete_chunks(list(self.files(keys)) if keys else [])  # a file never written has no chunks
        self._insert_chunks(chunks, vectors)
        self.touch_files(files)

    def replace_references(self, by_key: dict[str, pa.Table]) -> None:
        self.conn.references.replace(by_key)

    def touch_files(self, files: list[FileRow]) -> None:
        if not files:
            return
        # one Arrow insert: executemany ran a statement per row (~1 s for 70 files at 78k chunks)
        batch = pa.table({
            "path": pa.array([r.path for r in files], pa.string()),
            "size": pa.array([r.size for r in files], pa.int64()),
            "mtime_ns": pa.array([r.mtime_ns for r in files], pa.int64()),
            "file_hash": pa.array([r.file_hash for r in files], pa.string()),
            "chunk_count": pa.array([r.chunk_count for r in files], pa.int32()),
            "indexed_at": pa.array([utc_now()] * len(files), pa.timestamp("us")),
        })
        with registered(self.conn.con, "sai_files", batch):
            self.conn.con.execute(f"DELETE FROM {self.conn.files_table} WHERE path IN (SELECT path FROM sai_files)")
            self.conn.con.execute(f"INSERT INTO {self.conn.files_table} BY NAME SELECT * FROM sai_files")

    def remove_files(self, keys: list[str]) -> int:
        if not keys:
            return 0
        removed = self._delete_chunks(keys)
        self.conn.con.execute(f"DELETE FROM {self.conn.files_table} WHERE {_IN_KEYS}", [text_list(keys)])
        return removed

    def set_vectors(self, hashes: list[str], vectors: np.ndarray, *, ids: tuple[int, int] | None = None) -> int:
        """Give every chunk of these content hashes that has no vector its vector (row-aligned
        with `hashes`), among chunk ids lo..hi only when `ids` is (lo, hi); the first vectors
        add the `embedding` column."""
        if not hashes:
            return 0
        if not self.conn.has_vectors():
            self.conn.add_vector_column(int(vectors.shape[1]))
        t = self.table
        within = f" AND {t}.id BETWEEN {int(ids[0])} AND {int(ids[1])}" if ids else ""
        batch = pa.table({"content_hash": pa.array(hashes, pa.string()), "embedding": vector_column(vectors)})
        with registered(self.conn.con, "sai_vectors", batch):
            return self.conn.touching(
                f"UPDATE {t} SET embedding = v.embedding FROM sai_vectors v "
                f"WHERE {t}.content_hash = v.content_hash AND {t}.embedding IS NULL{within} RETURNING {t}.id",
                vectors_only=True)

    def copy_vectors(self, hashes: list[str]) -> int:
        """Give each chunk of these content hashes without a vector the one its hash has in
        another chunk. The vectors gathered are those of `hashes` only: gathering every waiting
        hash's at once ran out of the writer's memory at 960k chunks (77k hashes waiting)."""
        if not hashes or self.vectors_complete() or not self.conn.has_vectors():
            return 0
        t = self.table
        with registered(self.conn.con, "sai_copying", pa.table({"content_hash": pa.array(hashes, pa.string())})):
            return self.conn.touching(
                f"UPDATE {t} SET embedding = s.embedding FROM (SELECT content_hash, any_value(embedding) AS embedding "
                f"FROM {t} WHERE content_hash IN (SELECT content_hash FROM sai_copying) AND embedding IS NOT NULL "
                f"GROUP BY content_hash) s "
                f"WHERE {t}.content_hash = s.content_hash AND {t}.embedding IS NULL RETURNING {t}.id",
                vectors_only=True)

    def mark_vectors_complete(self) -> None:
        self.set_meta({VECTORS_COMPLETE: "1"})

    def _delete_chunks(self, keys: list[str]) -> int:
        """Remove every chunk of these files, with its postings and the files' references."""
        if not keys:
            return 0
        self.conn.postings.remove(TEXTS, [text_list(keys)])
        self.conn.references.delete(keys)
        return self.conn.touching(f"DELETE FROM {self.table} WHERE {_IN_KEYS} RETURNING id", [text_list(keys)])

    def _insert_chunks(self, chunks: list[NewChunk], vectors: np.ndarray) -> None:
        """Insert these chunks, row-aligned with their vectors, under new ids, with their postings;
        a row of NaN (or a matrix of no columns) stores its chunk without a vector, for set_vectors."""
        if not chunks:
            return
        start = self._one(f"SELECT coalesce(max(id), 0) + 1 FROM {self.table}")
        self.conn.touch(np.arange(start, start + len(chunks), dtype=np.int64))
        given = vectors.shape[1] > 0 and not np.isnan(vectors[:, 0]).all()
        if not given or np.isnan(vectors[:, 0]).any():
            self.set_meta({VECTORS_COMPLETE: "0"})
        if given and not self.conn.has_vectors():
            self.conn.add_vector_column(int(vectors.shape[1]))

        def column(name: str, kind: pa.DataType) -> pa.Array:
            return pa.array([getattr(c, name) for c in chunks], kind)

        batch = pa.table({
            "id": pa.array(range(start, start + len(chunks)), pa.int64()),
            "path": column("path", pa.string()), "language": column("language", pa.string()),
            "start_line": column("start_line", pa.int32()), "end_line": column("end_line", pa.int32()),
            "symbol": column("symbol", pa.string()), "text": column("text", pa.string()),
            "content_hash": column("content_hash", pa.string()), "file_hash": column("file_hash", pa.string()),
            **({"embedding": vector_column(vectors)} if self.conn.has_vectors() and vectors.shape[1] else {}),
            "no_duplicate": column("no_duplicate", pa.bool_()),
            "indexed_at": pa.array([utc_now()] * len(chunks), pa.timestamp("us")),
            "lexemes": column("lexemes", pa.string()), "shape": column("shape", pa.binary()),
            "kind": column("kind", pa.string()),
        })
        with registered(self.conn.con, "sai_batch", batch):
            # by name: columns an upgrade added (shape, kind) sit in the order they were added; the
            # lexemes go into the postings only (the column is what an upgrade from FTS reads)
            self.conn.con.execute(f"INSERT INTO {self.table} BY NAME SELECT * EXCLUDE (lexemes) FROM sai_batch")
            self.conn.postings.add("sai_batch")
