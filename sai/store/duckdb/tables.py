"""`Connection`: one DuckDB connection to one collection of an index file, and its state: the
transaction, the token it commits, the metadata rows, what it knows of the schema.

It composes what every session uses: the postings (postings.py), the references
(references.py), the reads of chunk rows the derived copies are made of (chunk_reads.py) and the
copies' owner (copies.py). The verbs of the contract and their SQL are the reader's and the
writer's (reader.py, writer.py); the schema's create, drop, take-over and verify are schema.py's.

User input reaches SQL only as bound parameters; the one identifier (the collection) is
validated (check_collection) before use.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb
import numpy as np

from sai.store.cache import TokenCache
from sai.store.duckdb import changelog, postings
from sai.store.duckdb.chunk_reads import ChunkReads
from sai.store.duckdb.copies import Copies
from sai.store.duckdb.references import References
from sai.store.duckdb.rows import check_collection, quote
from sai.store.duckdb.sidecar import Sidecar

T = TypeVar("T")
WRITER_MEMORY = "320MB"  # DuckDB's buffer pool of a writing connection
CHECKPOINT_AT = "64MB"  # a writing connection's log checkpointed past this (a kill replays it at the next open)
# Rows a row group holds in what a writer writes (DuckDB's default is 122,880). DuckDB 1.5.5
# compresses a float column well (ALPRD: ~28 bits a model's value) only while a row group holds
# fewer than ~29.4M of its values; past that each value takes ~50 bits. A 384-d vector column
# passes it at ~77k rows, so a row group of the default size stored a vector in ~2,430 bytes
# instead of ~1,370 (docs/design.md, "Storage layout"). 24,576 rows keep vectors of up to 1,194
# dimensions under it; smaller groups cost the other columns ~2 % more.
ROW_GROUP_ROWS = 24_576
VECTORS_COMPLETE = "vectors_complete"  # meta key: "1" when no chunk waits for a vector (reader.vectors_complete)


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
        self.dirty = False  # this write changed chunk rows: a new token at commit
        # the chunk ids this transaction changed, for the change log (changelog.py); None: not
        # known (no transaction begun here, a migration), so the write logs nothing
        self.touched: list[np.ndarray] | None = None
        self.rows_touched = False  # this transaction changed more than chunks' vectors
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
        config: dict[str, str | bool | int | float | list[str]] = {}
        if not read_only:
            # A run keeps its writer open from start to end (store.py): without a cap,
            # DuckDB keeps every block it wrote cached (1.4 GB after the whole stdlib); above
            # the cap it drops clean blocks and spills the rest next to the index. Its log is
            # checkpointed every CHECKPOINT_AT, not DuckDB's 16 MB: a write of 4,096 vectors of 768
            # floats logs 12.6 MB, and every second one checkpointed, 0.9-2.5 s each at 72k chunks.
            config |= {"memory_limit": WRITER_MEMORY, "temp_directory": f"{path}.tmp",
                       "checkpoint_threshold": CHECKPOINT_AT}
        con = duckdb.connect(":memory:", config=config)
        try:
            mode = " (READ_ONLY)" if read_only else f" (ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
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

    def unlogged(self) -> None:
        """This write changed chunk rows without naming them: a new token at commit, and no log
        row (the change log cannot serve it: readers read their copies whole)."""
        self.dirty, self.touched, self.rows_touched = True, None, True

    def touch(self, ids: np.ndarray, *, vectors_only: bool = False) -> None:
        """Chunk rows of these ids changed in this transaction (their vectors alone when
        `vectors_only`): a new token at commit, and a log row."""
        if len(ids):
            self.dirty = True
            self.rows_touched |= not vectors_only
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
        self.touched, self.rows_touched = [], False

    def commit(self) -> None:
        if self.dirty and self.has_index():
            self._next_token()  # readers reload their vector and symbol tables
        self.con.execute("COMMIT")
        self.dirty, self.touched, self.rows_touched = False, None, False

    def rollback(self) -> None:
        self.dirty, self.touched, self.rows_touched = False, None, False
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:
            pass  # nothing to roll back: the transaction never started or already failed

    # -- metadata ---------------------------------------------------------------------------

    def cached(self, key: str, compute: Callable[[], T]) -> T:
        if not self.read_only:
            return compute()
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]  # type: ignore[return-value]  # each key holds what its compute gives

    def _catalog_has(self, key: str, sql: str, params: list[object]) -> bool:
        """Whether a count over DuckDB's catalog is non-zero (cached by `key` on a lease)."""
        def count() -> bool:
            row = self.con.execute(f"SELECT count(*) FROM {sql}", params).fetchone()
            return bool(row and row[0])

        return self.cached(key, count)

    def table_exists(self, name: str) -> bool:
        return self._catalog_has(f"table:main.{name}", "duckdb_tables() WHERE database_name = 'sai' "
                                 "AND schema_name = 'main' AND table_name = ?", [name])

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

        return dict(self.cached("meta", rows))

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
        return self._catalog_has("column:embedding", "duckdb_columns() WHERE database_name = 'sai' AND "
                                 "schema_name = 'main' AND table_name = ? AND column_name = 'embedding'",
                                 [self.collection])

    def add_vector_column(self, dim: int) -> None:
        self.con.execute(f"ALTER TABLE {self.collection} ADD COLUMN embedding FLOAT[{dim}]")
        self.cache.pop("column:embedding", None)
        self.set_meta({"vector_dim": str(dim)})

    def touching(self, sql: str, params: list[object] | None = None, *, vectors_only: bool = False) -> int:
        """Run an UPDATE or DELETE that returns the ids of the chunks it changed; note them for
        the change log and return how many."""
        ids = self.con.execute(sql, params).fetchnumpy()["id"].astype(np.int64)
        self.touch(ids, vectors_only=vectors_only)
        return len(ids)

    def _next_token(self) -> None:
        """Replace the token (this transaction changed chunk rows), logging the chunks it changed."""
        token, previous = uuid.uuid4().hex, self.meta().get("token") or ""
        self.set_meta({"token": token})
        if self.touched is not None and previous:
            changelog.record(self.con, self.collection, previous=previous, token=token,
                             ids=np.concatenate([np.zeros(0, np.int64), *self.touched]),
                             vectors_only=not self.rows_touched)
