"""`Connection`: one DuckDB connection to one collection, and the SQL of its metadata, file and
chunk rows (the schema's create, drop, take-over and verify are schema.py's). It composes the
postings (postings.py), the references (references.py), the reads of chunk rows the derived copies
are made of (chunk_reads.py) and the copies' owner (copies.py), which serves ranking, BM25, symbol
look-ups and vector search from memory.

User input reaches SQL only as bound parameters; the one identifier (the collection) is
validated (check_collection) before use. Vectors are bound as VARCHAR and cast to FLOAT[d]:
binding a Python list costs ~35 ms per query, the whole cast query ~4 ms (docs/notebook.md,
"Measured figures of earlier versions").
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import TypeVar

import duckdb
import numpy as np
import pyarrow as pa

from sai.models import NewChunk
from sai.store.base import Pending
from sai.store.cache import TokenCache
from sai.store.duckdb import changelog, postings
from sai.store.duckdb.chunk_reads import ChunkReads
from sai.store.duckdb.chunkrows import RowTable
from sai.store.duckdb.copies import LEXICON, ROWS, SHAPES, SYMBOLS, Copies
from sai.store.duckdb.postings import LexicalTable
from sai.store.duckdb.references import References
from sai.store.duckdb.rows import (
    CHUNK_COLS,
    ChunkRow,
    FileRow,
    arrow,
    check_collection,
    chunk_cols,
    chunk_rows_of,
    id_table,
    int_list,
    matrix_of,
    quote,
    registered,
    utc_now,
    vector_column,
)
from sai.store.duckdb.sidecar import Sidecar
from sai.store.duckdb.vectors import VectorTable
from sai.store.shapes import ShapeTable
from sai.store.symbols import SymbolTable

T = TypeVar("T")
WRITER_MEMORY = "320MB"  # DuckDB's buffer pool of a writing connection
_ALL_ORDER = "ORDER BY path, start_line, end_line, id"  # all_chunks() and all_shapes() align on it
_WITH_VECTORS = "WHERE embedding IS NOT NULL"  # duplicates compare chunks that have their vector
FEW_IDS = 512  # ids bound as one list; more are joined (Connection._among)
VECTORS_COMPLETE = "vectors_complete"  # meta key: "1" when no chunk waits for a vector (vectors_complete)

__all__ = ["Connection"]


class Connection:
    """One DuckDB connection to one collection of an index file."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, collection: str, *, read_only: bool,
        cache: dict[str, object] | None = None, derived: TokenCache | None = None,
        sidecar: Sidecar | None = None,
    ) -> None:
        check_collection(collection)
        self.con = con
        self.read_only = read_only
        self.derived = derived if derived is not None else TokenCache()  # vector and symbol tables
        self.sidecar = sidecar  # the index file's shared vector copy (None: vectors held in memory)
        self._dirty = False  # this write changed chunk rows: a new token at commit
        # the chunk ids this transaction changed, for the change log (changelog.py); None: not
        # known (no transaction begun here, a migration), so the write logs nothing
        self.touched: list[np.ndarray] | None = None
        # A read-only attach never sees another process's writes, so what it learns about the
        # schema holds for the lease's life: cursors share their parent's cache.
        self.cache: dict[str, object] = {} if cache is None else cache
        self.collection = collection
        self.files_table = f"{collection}__files"
        self.postings = postings.Postings(con, collection)
        self.references = References(con, collection)
        self.reads = ChunkReads(con, self.postings, token=lambda: "" if self.dirty else self.token,
                                meta=self.meta, has_vectors=self.has_vectors)
        self.copies = Copies(self.reads, self.derived, sidecar)

    @classmethod
    def open(
        cls, path: Path, collection: str, *, read_only: bool, derived: TokenCache | None = None
    ) -> Connection:
        """The file attached as `sai` (IOException while another process holds it)."""
        check_collection(collection)
        config: dict[str, str | bool | int | float | list[str]] = {}
        if not read_only:
            # A run keeps its writer open from start to end (store.py): without a cap,
            # DuckDB keeps every block it wrote cached (1.4 GB after the whole stdlib); above
            # the cap it drops clean blocks and spills the rest next to the index.
            config |= {"memory_limit": WRITER_MEMORY, "temp_directory": f"{path}.tmp"}
        con = duckdb.connect(":memory:", config=config)
        try:
            mode = " (READ_ONLY)" if read_only else ""
            con.execute(f"ATTACH '{quote(str(path))}' AS sai{mode}")
            con.execute("USE sai")
        except duckdb.Error:
            con.close()
            raise  # Store._connect retries a lock and translates the rest
        # Only readers map the sidecar: a writer's reads between its writes keep their own copy
        # (the sidecar of a collection being rebuilt would outlive it).
        sidecar = Sidecar.beside(path, collection) if read_only else None
        return cls(con, collection, read_only=read_only, derived=derived, sidecar=sidecar)

    def close(self) -> None:
        self.con.close()

    @property
    def dirty(self) -> bool:
        return self._dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        """Set by a write that does not name the chunks it changed: the change log cannot serve it."""
        self._dirty = value
        if value:
            self.touched = None

    def _touch(self, ids: np.ndarray) -> None:
        """Chunk rows of these ids changed in this transaction: a new token at commit, and a log row."""
        if len(ids):
            self._dirty = True
            if self.touched is not None:
                self.touched.append(ids)

    def cursor(self) -> Connection:
        """Another connection to the same open database, for use by one more thread."""
        cursor = self.con.cursor()
        cursor.execute("USE sai")
        return Connection(cursor, self.collection, read_only=self.read_only, cache=self.cache,
                          derived=self.derived, sidecar=self.sidecar)

    def begin(self) -> None:
        self.con.execute("BEGIN TRANSACTION")
        self.touched = []

    def commit(self) -> None:
        if self.dirty and self.has_index():
            self._next_token()  # readers reload their vector and symbol tables
        self.con.execute("COMMIT")
        self.dirty, self.touched = False, None

    def rollback(self) -> None:
        self.dirty, self.touched = False, None
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:
            pass  # nothing to roll back: the transaction never started or already failed

    # -- metadata ---------------------------------------------------------------------------

    def _cached(self, key: str, compute: Callable[[], T]) -> T:
        if not self.read_only:
            return compute()
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]  # type: ignore[return-value]  # each key holds what its compute gives

    def table_exists(self, name: str, schema: str = "main") -> bool:
        def count() -> bool:
            row = self.con.execute(
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = 'sai' "
                "AND schema_name = ? AND table_name = ?",
                [schema, name],
            ).fetchone()
            return bool(row and row[0])

        return self._cached(f"table:{schema}.{name}", count)

    def has_index(self) -> bool:
        return self.table_exists(self.collection)

    @property
    def token(self) -> str:
        """Changes with every write of chunk rows: what a process's copies are keyed by."""
        return self.meta().get("token", "")

    def meta(self) -> dict[str, str]:
        """This collection's metadata rows (empty when the collection does not exist)."""
        if not self.table_exists("sai_meta"):
            return {}

        def rows() -> dict[str, str]:
            found = self.con.execute(
                "SELECT key, value FROM sai_meta WHERE collection = ?", [self.collection]
            ).fetchall()
            return dict(found)

        return dict(self._cached("meta", rows))

    def set_meta(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self.con.execute(
                "DELETE FROM sai_meta WHERE collection = ? AND key = ?", [self.collection, key]
            )
            self.con.execute(
                "INSERT INTO sai_meta VALUES (?, ?, ?)", [self.collection, key, str(value)]
            )

    def has_vectors(self) -> bool:
        """Whether the chunk table has its `embedding` column (added with the first vectors)."""
        def column() -> bool:
            row = self.con.execute(
                "SELECT count(*) FROM duckdb_columns() WHERE database_name = 'sai' AND schema_name = 'main' "
                "AND table_name = ? AND column_name = 'embedding'", [self.collection],
            ).fetchone()
            return bool(row and row[0])

        return self._cached("column:embedding", column)

    def mark_vectors_complete(self) -> None:
        self.set_meta({VECTORS_COMPLETE: "1"})

    def pending(self, after: int = 0) -> list[Pending]:
        """The distinct texts of the chunks of id above `after` without a vector, by first id."""
        if self.vectors_complete():
            return []
        waiting = "AND embedding IS NULL " if self.has_vectors() else ""
        rows = self.con.execute(
            f"SELECT content_hash, min(id) AS first, count(*) FROM {self.collection} "
            f"WHERE id > ? {waiting}GROUP BY content_hash ORDER BY first", [int(after)],
        ).fetchall()
        return [Pending(h, int(first), int(n)) for h, first, n in rows]

    def texts_by_id(self, ids: list[int]) -> dict[int, str]:
        """The texts of these chunks: the bounds let the scan skip every stretch of rows outside
        them (ids grow as rows are stored), so reading a group costs the same at any size."""
        if not ids:
            return {}
        rows = self.con.execute(
            f"SELECT id, text FROM {self.collection} WHERE id BETWEEN ? AND ? "
            "AND list_contains(CAST(?::VARCHAR AS BIGINT[]), id)", [min(ids), max(ids), int_list(ids)],
        ).fetchall()
        return {int(i): text for i, text in rows}

    def _add_vector_column(self, dim: int) -> None:
        self.con.execute(f"ALTER TABLE {self.collection} ADD COLUMN embedding FLOAT[{dim}]")
        self.cache.pop("column:embedding", None)
        self.set_meta({"vector_dim": str(dim)})

    def set_vectors(self, hashes: list[str], vectors: np.ndarray, *, ids: tuple[int, int] | None = None) -> int:
        """Give every chunk of these content hashes that has no vector its vector (row-aligned
        with `hashes`), among chunk ids lo..hi only when `ids` is (lo, hi); the first vectors
        add the `embedding` column. Returns the rows set."""
        if not hashes:
            return 0
        if not self.has_vectors():
            self._add_vector_column(int(vectors.shape[1]))
        t = self.collection
        within = f" AND {t}.id BETWEEN {int(ids[0])} AND {int(ids[1])}" if ids else ""
        batch = pa.table({"content_hash": pa.array(hashes, pa.string()), "embedding": vector_column(vectors)})
        with registered(self.con, "sai_vectors", batch):
            return self._touching(
                f"UPDATE {t} SET embedding = v.embedding FROM sai_vectors v "
                f"WHERE {t}.content_hash = v.content_hash AND {t}.embedding IS NULL{within} RETURNING {t}.id"
            )

    def copy_vectors(self, hashes: list[str]) -> int:
        """Give each chunk of these content hashes without a vector the one its hash has in
        another chunk. The vectors gathered are those of `hashes` only: gathering every waiting
        hash's at once ran out of the writer's memory at 960k chunks (77k hashes waiting)."""
        if not hashes or self.vectors_complete() or not self.has_vectors():
            return 0
        t = self.collection
        with registered(self.con, "sai_copying", pa.table({"content_hash": pa.array(hashes, pa.string())})):
            return self._touching(
                f"UPDATE {t} SET embedding = s.embedding FROM (SELECT content_hash, any_value(embedding) AS embedding "
                f"FROM {t} WHERE content_hash IN (SELECT content_hash FROM sai_copying) AND embedding IS NOT NULL "
                f"GROUP BY content_hash) s "
                f"WHERE {t}.content_hash = s.content_hash AND {t}.embedding IS NULL RETURNING {t}.id"
            )

    def _touching(self, sql: str, params: list[object] | None = None) -> int:
        """Run an UPDATE or DELETE that returns the ids of the chunks it changed; note them for
        the change log and return how many."""
        ids = self.con.execute(sql, params).fetchnumpy()["id"].astype(np.int64)
        self._touch(ids)
        return len(ids)

    def _next_token(self) -> str:
        """The token this transaction commits with (a new one when it changed chunk rows)."""
        if self.dirty:
            token, previous = uuid.uuid4().hex, self.meta().get("token") or ""
            self.set_meta({"token": token})
            if self.touched is not None and previous:
                changelog.record(self.con, self.collection, previous=previous, token=token,
                                 ids=np.concatenate([np.zeros(0, np.int64), *self.touched]))
            self.dirty, self.touched = False, [] if self.touched is not None else None
        token = self.meta().get("token") or ""
        if not token:
            token = uuid.uuid4().hex
            self.set_meta({"token": token})
        return token

    def has_references(self) -> bool:
        """Whether the collection has its references table (format 6 on)."""
        return self.table_exists(self.references.table)

    # -- files ------------------------------------------------------------------------------

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        """File rows, all or those of `keys` (from the lease's cache when read-only)."""
        if self.read_only and (keys is None or "files" in self.cache):
            # a copy: callers may change what they get, the lease's cache stays
            every = self._cached("files", lambda: self._files(None))
            return dict(every) if keys is None else {k: every[k] for k in keys if k in every}
        return self._files(keys)  # a few keys after a write: not every file row (58 ms at 32k files)

    def _files(self, keys: list[str] | None) -> dict[str, FileRow]:
        sql = f"SELECT path, size, mtime_ns, file_hash, chunk_count FROM {self.files_table}"
        if keys is None:
            rows = self.con.execute(sql).fetchall()
        else:
            rows = self.con.execute(
                sql + " WHERE list_contains(json_extract_string(?::VARCHAR, '$[*]'), path)",
                [json.dumps(list(keys))],
            ).fetchall()
        return {r[0]: FileRow(*r) for r in rows}

    def last_indexed_at(self) -> str | None:
        row = self.con.execute(f"SELECT max(indexed_at) FROM {self.files_table}").fetchone()
        return row[0].replace(tzinfo=UTC).isoformat() if row and row[0] else None

    def touch_files(self, rows: list[FileRow]) -> None:
        if not rows:
            return
        # one Arrow insert: executemany ran a statement per row (~1 s for 70 files at 78k chunks)
        batch = pa.table({
            "path": pa.array([r.path for r in rows], pa.string()),
            "size": pa.array([r.size for r in rows], pa.int64()),
            "mtime_ns": pa.array([r.mtime_ns for r in rows], pa.int64()),
            "file_hash": pa.array([r.file_hash for r in rows], pa.string()),
            "chunk_count": pa.array([r.chunk_count for r in rows], pa.int32()),
            "indexed_at": pa.array([utc_now()] * len(rows), pa.timestamp("us")),
        })
        with registered(self.con, "sai_files", batch):
            self.con.execute(f"DELETE FROM {self.files_table} WHERE path IN (SELECT path FROM sai_files)")
            self.con.execute(f"INSERT INTO {self.files_table} BY NAME SELECT * FROM sai_files")

    def delete_file_rows(self, keys: list[str]) -> None:
        self.con.execute(
            f"DELETE FROM {self.files_table} WHERE path IN (SELECT unnest(?::VARCHAR[]))", [keys]
        )

    def delete_chunks(self, keys: list[str]) -> int:
        """Remove every chunk of these files; returns how many were removed."""
        if not keys:
            return 0
        self.postings.remove("SELECT unnest(?::VARCHAR[])", [keys])
        if self.has_references():
            self.references.delete(keys)
        return self._touching(
            f"DELETE FROM {self.collection} WHERE path IN (SELECT unnest(?::VARCHAR[])) RETURNING id", [keys]
        )

    # -- chunks -----------------------------------------------------------------------------

    def chunk_count(self, keys: list[str] | None = None) -> int:
        if keys is None:
            row = self.con.execute(f"SELECT count(*) FROM {self.collection}").fetchone()
        else:
            row = self.con.execute(
                f"SELECT count(*) FROM {self.collection} "
                "WHERE path IN (SELECT unnest(?::VARCHAR[]))",
                [keys],
            ).fetchone()
        return int(row[0]) if row else 0

    def language_counts(self) -> dict[str, int]:
        """Chunks per language (chunks of files SAI has no grammar for are left out)."""
        rows = self.con.execute(
            f"SELECT language, count(*) FROM {self.collection} WHERE language IS NOT NULL "
            "GROUP BY language ORDER BY language"
        ).fetchall()
        return {str(name): int(count) for name, count in rows}

    def chunk_hashes(self, keys: list[str]) -> dict[str, list[str]]:
        rows = self.con.execute(
            f"SELECT path, content_hash FROM {self.collection} "
            "WHERE path IN (SELECT unnest(?::VARCHAR[]))",
            [keys],
        ).fetchall()
        out: dict[str, list[str]] = {}
        for path, digest in rows:
            out.setdefault(path, []).append(digest)
        return out

    def content_hashes(self) -> set[str]:
        """Hashes of the texts stored with a vector (those without one still need embedding)."""
        if not self.has_vectors():
            return set()
        rows = self.con.execute(
            f"SELECT DISTINCT content_hash FROM {self.collection} WHERE embedding IS NOT NULL").fetchall()
        return {r[0] for r in rows}

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors for these content hashes (any file), so unchanged text is not re-embedded.

        The rows' ids first, from the hash column alone, then their vectors by id: any test of
        the vector in the scan by hash, `embedding IS NOT NULL` included, reads every vector
        (40 hashes at 1M chunks: 0.66 s, against 0.11 s this way)."""
        if not hashes or not self.has_vectors():
            return {}
        ids = [int(i) for (i,) in self.con.execute(
            f"SELECT id FROM {self.collection} WHERE content_hash IN (SELECT unnest(?::VARCHAR[]))",
            [hashes]).fetchall()]
        if not ids:
            return {}
        with self._among(sorted(ids)) as (where, params):
            table = arrow(self.con, f"SELECT content_hash, embedding FROM {self.collection} "
                                f"WHERE {where} AND embedding IS NOT NULL ORDER BY id", params)
        if table.num_rows == 0:
            return {}
        matrix = matrix_of(table.column("embedding"))
        out: dict[str, np.ndarray] = {}
        for digest, vector in zip(table.column("content_hash").to_pylist(), matrix, strict=True):
            out.setdefault(digest, vector)  # copies share one vector: the first will do
        return out

    def insert_chunks(self, chunks: list[NewChunk], vectors: np.ndarray) -> None:
        """Insert these chunks, row-aligned with their vectors, under new ids; a row of NaN (or a
        matrix of no columns) stores its chunk without a vector, for set_vectors to fill."""
        if not chunks:
            return
        first = self.con.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {self.collection}").fetchone()
        start_id = int(first[0]) if first else 1
        self._touch(np.arange(start_id, start_id + len(chunks), dtype=np.int64))
        given = vectors.shape[1] > 0 and not np.isnan(vectors[:, 0]).all()
        if not given or np.isnan(vectors[:, 0]).any():
            self.set_meta({VECTORS_COMPLETE: "0"})
        if given and not self.has_vectors():
            self._add_vector_column(int(vectors.shape[1]))

        def column(name: str, kind: pa.DataType) -> pa.Array:
            return pa.array([getattr(c, name) for c in chunks], kind)

        batch = pa.table({
            "id": pa.array(range(start_id, start_id + len(chunks)), pa.int64()),
            "path": column("path", pa.string()),
            "language": column("language", pa.string()),
            "start_line": column("start_line", pa.int32()),
            "end_line": column("end_line", pa.int32()),
            "symbol": column("symbol", pa.string()),
            "text": column("text", pa.string()),
            "content_hash": column("content_hash", pa.string()),
            "file_hash": column("file_hash", pa.string()),
            **({"embedding": vector_column(vectors)} if self.has_vectors() and vectors.shape[1] else {}),
            "no_duplicate": column("no_duplicate", pa.bool_()),
            "indexed_at": pa.array([utc_now()] * len(chunks), pa.timestamp("us")),
            "lexemes": column("lexemes", pa.string()),
            "shape": column("shape", pa.binary()),
            "kind": column("kind", pa.string()),
        })
        with registered(self.con, "sai_batch", batch):
            # by name: columns an upgrade added (shape, kind) sit in the order they were added
            self.con.execute(f"INSERT INTO {self.collection} BY NAME SELECT * FROM sai_batch")
            self.postings.add("sai_batch")

    def chunks_of_file(self, path: str, *, line: int | None = None) -> list[ChunkRow]:
        """Every chunk of one file with its text, in (start_line, end_line) order; with `line`,
        those whose range holds it, innermost (shortest range) first."""
        if line is None:
            return chunk_rows_of(arrow(self.con,
                f"SELECT {CHUNK_COLS} FROM {self.collection} WHERE path = ? ORDER BY start_line, end_line, id",
                [path],
            ))
        rows = self.con.execute(
            f"SELECT {CHUNK_COLS} FROM {self.collection} WHERE path = ? AND start_line <= ? "
            "AND end_line >= ? ORDER BY end_line - start_line, start_line, id",
            [path, int(line), int(line)],
        ).fetchall()
        return [ChunkRow(*r) for r in rows]

    def all_chunks(self, *, text: bool = True) -> tuple[list[ChunkRow], np.ndarray]:
        """Every chunk (path, start order) and the matrix of their vectors, row-aligned.

        Without `text` the rows carry an empty text (duplicates need none: it is most of the
        memory of a large index).
        """
        cols = chunk_cols(text=text)
        if not self.has_vectors():
            return [], np.zeros((0, 0), dtype=np.float32)
        table = arrow(self.con, f"SELECT {cols}, embedding FROM {self.collection} {_WITH_VECTORS} {_ALL_ORDER}")
        rows = chunk_rows_of(table)
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return rows, matrix_of(table.column("embedding"))

    def all_shapes(self) -> list[bytes | None]:
        """Every chunk's shape signature, in the order of all_chunks() (~0.1 s at 100,000 chunks)."""
        table = arrow(self.con, f"SELECT shape FROM {self.collection} {_WITH_VECTORS} {_ALL_ORDER}")
        return table.column("shape").to_pylist()

    # -- reads served from the derived copies (copies.py) -----------------------------------

    def vector_table(self) -> VectorTable:
        return self.copies.vectors()

    def row_table(self) -> RowTable:
        return self.copies.get(ROWS)

    def lexical_table(self) -> LexicalTable:
        return self.copies.get(LEXICON)

    def symbols(self) -> SymbolTable:
        return self.copies.get(SYMBOLS)

    def shapes(self) -> ShapeTable:
        return self.copies.get(SHAPES)

    def vectors_complete(self) -> bool:
        """Whether the meta records that no chunk waits for a vector: set by an index run whose
        vectors are all written (mark_vectors_complete), unset with the first chunk stored without
        one (insert_chunks), in the same transactions. Looking instead reads the whole vector
        column (60 ms at 20k chunks, linear)."""
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
        if not self.has_vectors():
            return self.chunk_count()
        row = self.con.execute(f"SELECT count(*) FROM {self.collection} WHERE embedding IS NULL").fetchone()
        return int(row[0]) if row else 0

    def lexical(self, query_lexemes: str, limit: int, *, among: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) of the best lexical matches, best first (ties by id).

        Okapi BM25 (k1 1.2, b 0.75) over the postings of the query's terms only, in numpy
        (store/duckdb/postings.py). `among` (chunk ids) restricts the search to those chunks, with the
        statistics (document count, mean length, document frequencies) of that subset: the
        answer an index holding only them would give.
        """
        if not query_lexemes.strip() or (among is not None and not len(among)):
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
        held = None if self.dirty else self.copies.held(ROWS)
        if held is not None:  # a search's rows are in memory: only their texts to read
            rows = held.rows(ids, chunk_rows_of)
            with self._among([r.id for r in rows]) as (where, params):
                found = self.con.execute(
                    f"SELECT id, text FROM {self.collection} WHERE {where}", params).fetchall() if rows else []
            texts = dict(found)
            return [replace(r, text=texts.get(r.id, "")) for r in rows]
        with self._among(ids) as (where, params):
            table = arrow(self.con, f"SELECT {chunk_cols(text=text)} FROM {self.collection} WHERE {where}", params)
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
        with registered(self.con, "sai_among", id_table(ids)):
            yield f"{within} AND id IN (SELECT id FROM sai_among)", []
