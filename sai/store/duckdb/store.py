"""The DuckDB backend's store: one index file, the lease a process holds on it, its errors translated.

The DuckDB backend (this package) is the only code that imports duckdb. One DuckDB file holds, per
collection, a chunk table `<collection>`, a file table `<collection>__files` and its companions,
and rows in the shared `sai_meta` table; the copies every reader derives from it live beside it
(copies.py). A process holds one connection on the file at a time, by the states of lease.py;
a whole index run holds `<db>.run` (`claim`).

Every database error is translated into a StoreError with one line naming the fix (errors.py,
`translate`); Ctrl-C inside a query becomes KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from sai.errors import StoreCorruptError, StoreError
from sai.store import base
from sai.store.base import EMPTY, IndexReader, IndexWriter
from sai.store.cache import TokenCache
from sai.store.dirs import make_index_dir
from sai.store.duckdb import schema
from sai.store.duckdb.copies import Copies
from sai.store.duckdb.errors import first_line
from sai.store.duckdb.lease import Lease, lock_file
from sai.store.duckdb.reader import DuckDBReader
from sai.store.duckdb.sidecar import Sidecar
from sai.store.duckdb.writer import DuckDBWriter
from sai.store.locks import EXCLUSIVE

log = logging.getLogger(__name__)


class DuckDBStore(base.Store):
    """An index file and the lease this process holds on it."""

    backend = "duckdb"
    transactional = True
    pending_vectors = True
    can_upgrade = True
    references = True
    cheap_shapes = True
    keeps_old_on_recreate = True

    def __init__(self, path: Path, *, collection: str, lock_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.collection = collection
        self.derived = TokenCache()  # the copies (copies.py), kept across leases
        self.lease = Lease(self.path, collection=collection, lock_timeout_s=lock_timeout_s, derived=self.derived)
        self.location = str(self.path)

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    @contextlib.contextmanager
    def claim(self, *, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold `<db>.run` (flock, exclusive) for a whole index run; a second run waits for it
        before reading or embedding anything, for as long as the first lives (the lock dies with
        its process). The writer lock alone could not say this: a run lets it go between batches."""
        self.prepare()
        with lock_file(self.path, ".run").hold(EXCLUSIVE, poll_s=0.1, on_wait=on_wait):
            yield

    @contextlib.contextmanager
    def read(self) -> Iterator[IndexReader]:
        """A reader on the lease (threads read in parallel), or on this thread's write transaction;
        base.EMPTY when the collection does not exist."""
        with self.lease.reading() as conn:
            yield DuckDBReader(conn) if conn.has_index() else EMPTY

    @contextlib.contextmanager
    def write(self) -> Iterator[IndexWriter]:
        """One transaction; the connection closes when the block ends, unless a run() holds it."""
        self.prepare()
        with self.lease.transaction() as conn:
            yield DuckDBWriter(conn)

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        """Keep the writer connection of the writes inside this block open between them (one
        checkpoint when the block ends instead of one per transaction)."""
        with self.lease.holding():
            yield

    def upgrade(self, from_version: int) -> None:
        """Bring a collection of an older format to this one in place (schema.upgrade)."""
        with self.lease.transaction() as conn:
            schema.upgrade(conn)

    @contextlib.contextmanager
    def rebuild(self) -> Iterator[None]:
        """--recreate: the writes inside build `<collection>__rebuild` beside the collection,
        which readers keep reading; when the block ends cleanly, one transaction drops the old
        collection and renames the new one in its place (readers of the next moment see it
        whole). A damaged file (every block is read first) is moved aside as `<db>.damaged` and
        the index built in a new file instead; a leftover of a killed rebuild is dropped."""
        if not self.exists or not self._whole():
            yield
            return
        self.lease.switch(f"{self.collection}__rebuild")
        try:
            with self.write() as writer:
                writer.drop()  # what a killed rebuild left
            yield
            with self.lease.transaction() as conn:
                schema.take_over(conn, self.collection)
        finally:
            self.lease.switch(self.collection)

    def _whole(self) -> bool:
        """Whether the file reads without a damaged block; a damaged one is moved aside."""
        try:
            with self.lease.reading() as conn:
                schema.verify(conn)
        except StoreCorruptError as exc:
            log.warning("the index file %s is damaged (%s); kept as %s.damaged, building a new one",
                        self.path, first_line(exc.__cause__ or exc), self.path)
            self.close()
            self.recreate()
            return False
        return True

    def recreate(self) -> None:
        """Move a damaged index file aside (kept as `<db>.damaged`), so a new one can be built."""
        for path in (self.path, self.path.with_name(self.path.name + ".wal")):
            if path.exists():
                path.replace(path.with_name(path.name + ".damaged"))

    def close(self) -> None:
        self.lease.close()

    def warm(self) -> None:
        """Bring the vector sidecar to the committed token, and the shared row, BM25 and symbol
        copies where a reader would pay for them (copies.Copies.warm): each is patched when a file
        of it is near, else read whole and written, as a first search or look-up would (838k
        chunks: 18 s for a search's, 12 s for a look-up's, once; docs/notebook.md, "How the cost grows").
        Between a run's writes (its chunks stored, their vectors to come), the copies of the rows
        alone: the vectors' writes leave them as they are."""
        if not self.exists:
            return
        with self.lease.reading() as conn:
            if not conn.has_index():
                return
            if conn.read_only:
                conn.copies.warm()
            elif self.lease.collection == self.collection:  # a run's, between its writes (not a rebuild's)
                Copies(conn.reads, conn.derived, Sidecar.beside(self.path, self.collection)).warm(vectors=False)

    def prepare(self) -> None:
        """Create the index directory, or fail with one line before any work is done."""
        try:
            make_index_dir(self.path.parent)
        except OSError as exc:
            raise StoreError(
                f"cannot create the index directory {self.path.parent}: {exc.strerror}; "
                "check permissions or set duckdb.path"
            ) from exc
        if not os.access(self.path.parent, os.W_OK):
            raise StoreError(
                f"the index directory {self.path.parent} is not writable; "
                "check permissions or set duckdb.path"
            )


__all__ = ["DuckDBStore"]
