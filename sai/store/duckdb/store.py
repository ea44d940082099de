"""The DuckDB backend's store: one index file, its leases and locks, its errors translated.

The DuckDB backend (this module, its sessions in sessions.py, its SQL in tables.py, its
migrations in migrations.py) is the only code that imports duckdb. One DuckDB file holds, per
collection, a chunk table `<collection>`, a file table `<collection>__files`, and rows in the
shared `sai_meta` table; vectors are searched in memory (vectors.py).

Connections are short-lived because DuckDB lets one writing process hold a file and shuts out
every other process, readers included. A writer holds an OS lock (flock) on `<db>.writer` for
as long as it writes; readers close their connection as soon as they see that lock taken and
otherwise keep it for a short idle lease. Every connection holds `<db>.open` (flock: shared by
readers, exclusive by the writer) for as long as it is open, so the writer never opens while a
lease is open, whatever else the reader's process does with the file (`_connect`). Both sides
retry a locked file until `lock_timeout_s`. A lock dies with its process, so a killed writer
never leaves readers waiting.

An index run (`Store.run()`) keeps its writer connection from its first write transaction to its
end: closing a DuckDB file checkpoints it, and that costs seconds at 78k chunks, so a connection
per transaction made the writer the slowest stage (docs/design.md, "Locking"). A reader of another
process that wants the file in the meantime asks for it by holding a shared lock on
`<db>.readers` while it waits and connects; between two transactions the run looks for such a
request (every WRITER_POLL_S, and before each transaction), closes and lets go of
`<db>.writer`; its next transaction waits until the readers are in and takes both again (the
readers leave as soon as their query is done, as they do for any writer).

Every database error is translated into a StoreError with one line naming the fix (errors.py,
`translate`); Ctrl-C inside a query becomes KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb

from sai.errors import StoreCorruptError, StoreError, StoreLockedError
from sai.store import base
from sai.store.base import IndexReader, IndexWriter
from sai.store.cache import TokenCache
from sai.store.dirs import make_index_dir
from sai.store.duckdb import compaction, migrations, schema
from sai.store.duckdb.errors import describe, first_line, is_lock_conflict, translate
from sai.store.duckdb.locks import lock_held, try_lock, wait_while
from sai.store.duckdb.rows import quote
from sai.store.duckdb.sessions import DuckDBReader, DuckDBWriter
from sai.store.duckdb.tables import Connection

log = logging.getLogger(__name__)
READ_LEASE_S = 5.0  # how long an idle reader keeps the file open (reopening costs ~0.15 s)
WRITER_POLL_S = 0.2  # how often an idle reader looks for a writer's intent file
KEPT_BLOCKS_MAX = 8 << 20  # bytes of DuckDB's cached blocks an idle lease keeps (`_drop_blocks`)


class DuckDBStore(base.Store):
    """An index file and the one connection this process holds on it at a time."""

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
        self.sessions_of = collection  # the collection sessions open: `<collection>__rebuild` in a rebuild
        self.lock_timeout_s = lock_timeout_s
        self._lock = threading.Condition(threading.RLock())
        self._conn: Connection | None = None
        self._open_fd: int | None = None  # `<db>.open`, locked while self._conn is open (`_connect`)
        self._timer: threading.Timer | None = None
        self._readers = 0  # threads of this process reading through the lease right now
        self._blocks_dropped = True  # since the lease's last reader left (`_drop_blocks`)
        self._loads_seen = 0  # self.derived.loads when the lease's blocks were last dropped
        self._runs = 0  # nested run() blocks: while > 0 the writer connection stays open
        self._writer_fd: int | None = None  # the held `<db>.writer` lock of a run's connection
        self._writing: int | None = None  # the thread inside a write transaction
        self._yield_timer: threading.Timer | None = None  # a run looking for waiting readers
        self.derived = TokenCache()  # vector and symbol tables, kept across read leases
        self.location = str(self.path)

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    @property
    def intent_path(self) -> Path:
        return self.path.with_name(self.path.name + ".writer")

    @property
    def request_path(self) -> Path:
        return self.path.with_name(self.path.name + ".readers")

    @property
    def open_path(self) -> Path:
        return self.path.with_name(self.path.name + ".open")

    @property
    def run_path(self) -> Path:
        return self.path.with_name(self.path.name + ".run")

    @contextlib.contextmanager
    def claim(self, *, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold `<db>.run` (flock, exclusive) for a whole index run; a second run waits for it
        before reading or embedding anything, for as long as the first lives (the lock dies with
        its process). The writer lock alone could not say this: a run lets it go between batches."""
        self.prepare()
        fd = os.open(self.run_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            waited = False
            while not try_lock(fd, fcntl.LOCK_EX, self.run_path):
                if not waited and on_wait is not None:
                    on_wait()
                waited = True
                time.sleep(0.1)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @contextlib.contextmanager
    def read(self) -> Iterator[IndexReader]:
        """A cursor on the read-only lease (threads read in parallel), or this thread's writer."""
        with self._lock:
            if self._writing == threading.get_ident():
                assert self._conn is not None  # a writing thread holds its connection
                with translate(self.path):
                    yield DuckDBReader(self._conn)  # the writing thread reads its own transaction
                return
            cursor = self._lease_cursor()
        try:
            with translate(self.path):
                yield DuckDBReader(cursor)
        finally:
            cursor.close()
            with self._lock:
                self._readers -= 1
                if self._readers == 0:
                    self._lock.notify_all()
                    if self._leased() and self._writer_waiting():
                        self._close()  # another process wants to write: let it in now
                    elif self._leased():
                        if self.derived.loads != self._loads_seen:  # a table was read whole: now
                            self._drop_blocks()
                        self._schedule_close()

    def _leased(self) -> bool:
        return self._conn is not None and self._conn.read_only

    def _lease_cursor(self) -> Connection:
        """A cursor on the read lease, or on a run's writer connection between its transactions."""
        self._cancel_timer()
        if self._leased() and self._readers == 0 and self._writer_waiting():
            self._close()
        if self._conn is None:
            if not self.exists:
                raise StoreError(f"no index at {self.path}; run `sai` in the project to build it")
            with self._asking():
                self._wait_for_writer()
                self._conn = self._connect(read_only=True)
        cursor = self._conn.cursor()
        self._readers += 1
        self._blocks_dropped = False
        return cursor

    @contextlib.contextmanager
    def write(self) -> Iterator[IndexWriter]:
        """A read-write connection inside one transaction; closed when the block ends, unless a
        run() holds it open for the next transaction."""
        with self._lock:
            self._lock.wait_for(lambda: self._readers == 0)  # this process's readers finish first
            self._cancel_timer()
            with translate(self.path):
                conn = self._writer()
                self._writing = threading.get_ident()
                try:
                    conn.begin()
                    yield DuckDBWriter(conn)
                    conn.commit()
                except BaseException:
                    conn.rollback()
                    self._release()
                    raise
                finally:
                    self._writing = None
                    if not self._runs:
                        self._release()
                    elif self._writer_fd is not None:
                        self._schedule_yield()

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        """Keep the writer connection of the writes inside this block open between them (one
        checkpoint when the block ends instead of one per transaction)."""
        with self._lock:
            self._runs += 1
        finished = False
        try:
            yield
            finished = True
        finally:
            with self._lock:
                self._runs -= 1
                if not self._runs and self._writer_fd is not None:
                    self._cancel_yield()
                    self._lock.wait_for(lambda: self._readers == 0)  # their cursors are on it
                    with translate(self.path):
                        try:
                            if finished:
                                self._compact()
                        finally:
                            self._release()

    def _compact(self) -> None:
        """Copy the file into a fresh one and rename it over the index when it carries too much
        free space (store/compaction.py); the writer lock is held throughout."""
        compaction.discard(compaction.compact_path(self.path))  # what a killed compaction left
        if self._conn is None or not compaction.wasteful(self._conn):
            return
        copy = compaction.copy_beside(self._conn, self.path)
        self._close()  # a checkpoint: the copy holds everything committed
        if copy is not None:
            compaction.swap_in(copy, self.path)

    def _writer(self) -> Connection:
        """The held writer connection, or a new one under the writer lock; a held one first
        lets in the readers of other processes that asked for the file."""
        self._cancel_yield()
        if self._writer_fd is not None and self._conn is not None:
            if not self._readers_asking():
                return self._conn
            self._release()  # closing checkpoints: the readers see what was committed
        self._close()
        self._wait_for_readers()
        self.prepare()
        self._writer_fd = self._lock_writer()
        try:
            self._conn = self._connect(read_only=False)
        except BaseException:
            self._release()
            raise
        return self._conn

    def _schedule_yield(self) -> None:
        """Between a run's transactions, look for readers of other processes every
        WRITER_POLL_S and let them in at once (the run's next write opens the file again)."""
        self._cancel_yield()
        self._yield_timer = threading.Timer(WRITER_POLL_S, self._yield_tick)
        self._yield_timer.daemon = True
        self._yield_timer.start()

    def _yield_tick(self) -> None:
        with self._lock:
            if not self._runs or self._writer_fd is None or self._writing is not None:
                return
            if self._readers or not self._readers_asking():
                self._schedule_yield()
                return
            try:
                self._release()
            except duckdb.Error as exc:  # the run's next write reopens the file and reports
                log.debug("closing the run's connection for a reader failed: %s", first_line(exc))

    def _cancel_yield(self) -> None:
        if self._yield_timer is not None:
            self._yield_timer.cancel()
            self._yield_timer = None

    def _release(self) -> None:
        """Close the writer connection (DuckDB checkpoints) and drop the writer lock."""
        try:
            self._close()
        finally:
            if self._writer_fd is not None:
                fd, self._writer_fd = self._writer_fd, None
                os.close(fd)  # closing releases the lock

    def _lock_writer(self) -> int:
        """Take the OS lock on `<db>.writer` (other processes' readers step aside for it)."""
        fd = os.open(self.intent_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                if try_lock(fd, fcntl.LOCK_EX, self.intent_path):
                    return fd
            except StoreError:
                os.close(fd)
                raise
            if time.monotonic() >= deadline:
                os.close(fd)
                raise self._locked_error()
            time.sleep(0.02)

    @contextlib.contextmanager
    def _asking(self) -> Iterator[None]:
        """Hold a shared lock on `<db>.readers` while connecting: a run holding the file sees
        the request between two transactions and lets this process in."""
        try:
            fd = os.open(self.request_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError:
            yield  # a read-only directory: no run can be writing there either
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            yield
        finally:
            os.close(fd)

    def _readers_asking(self) -> bool:
        """Whether a reader of another process holds `<db>.readers` (waits to connect)."""
        return lock_held(self.request_path, fcntl.LOCK_EX)

    def _wait_for_readers(self) -> None:
        """Until the readers that asked are connected (or lock_timeout_s has passed)."""
        wait_while(self._readers_asking, self.lock_timeout_s, poll_s=0.02)

    def upgrade(self, from_version: int) -> None:
        """Bring a collection of an older format to this one in place (store/migrations.py)."""
        with self.write() as writer:
            assert isinstance(writer, DuckDBWriter)
            migrations.upgrade(writer.conn, from_version)

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
        self._switch(f"{self.collection}__rebuild")
        try:
            with self.write() as writer:
                writer.drop()  # what a killed rebuild left
            yield
            with self.write() as writer:
                assert isinstance(writer, DuckDBWriter)
                schema.take_over(writer.conn, self.collection)
        finally:
            self._switch(self.collection)

    def _whole(self) -> bool:
        """Whether the file reads without a damaged block; a damaged one is moved aside."""
        try:
            with self.read() as reader:
                assert isinstance(reader, DuckDBReader)
                schema.verify(reader.conn)
        except StoreCorruptError as exc:
            log.warning("the index file %s is damaged (%s); kept as %s.damaged, building a new one",
                        self.path, first_line(exc.__cause__ or exc), self.path)
            self.close()
            self.recreate()
            return False
        return True

    def _switch(self, collection: str) -> None:
        """Sessions open `collection` from now on (the connection held on the other one closes)."""
        with self._lock:
            self._lock.wait_for(lambda: self._readers == 0)
            self._cancel_timer()
            self._cancel_yield()
            with translate(self.path):
                self._release()
            self.sessions_of = collection

    def recreate(self) -> None:
        """Move a damaged index file aside (kept as `<db>.damaged`), so a new one can be built."""
        for path in (self.path, self.path.with_name(self.path.name + ".wal")):
            if path.exists():
                path.replace(path.with_name(path.name + ".damaged"))

    def close(self) -> None:
        with self._lock:
            self._cancel_timer()
            self._cancel_yield()
            self._release()

    def _connect(self, *, read_only: bool) -> Connection:
        """A connection, with `<db>.open` held shared (a reader) or exclusive (the writer) for as
        long as it is open, retried while another process holds either until lock_timeout_s.

        DuckDB's own lock on the file is a POSIX record lock, which a process loses when it closes
        *any* descriptor of the file: another DuckDB instance of it in the same process (a second
        store, a script's `duckdb.connect`) closing left a read lease open with no lock, so a
        writer got in and the lease went on answering from the state before it (docs/design.md,
        "Locking"). A `flock` belongs to its own descriptor only."""
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.02
        while True:
            held = self._lock_open(read_only=read_only)
            if held is not None:
                try:
                    conn = Connection.open(self.path, self.sessions_of, read_only=read_only, derived=self.derived)
                    self._open_fd = held if held >= 0 else None
                    return conn
                except duckdb.Error as exc:
                    if held >= 0:
                        os.close(held)
                    if not is_lock_conflict(exc):
                        raise describe(exc, self.path) from exc
            if time.monotonic() >= deadline:
                raise self._locked_error()
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _lock_open(self, *, read_only: bool) -> int | None:
        """`<db>.open` locked for a connection: its descriptor, -1 where no lock file can be made
        (a read-only directory: no writer can be there either), None while another process's
        connection holds a conflicting lock."""
        cloexec = getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.open_path, os.O_RDWR | os.O_CREAT | cloexec, 0o644)
        except OSError:
            try:
                fd = os.open(self.open_path, os.O_RDONLY | cloexec)  # made by another user: flock needs no write
            except OSError:
                return -1
        try:
            if try_lock(fd, fcntl.LOCK_SH if read_only else fcntl.LOCK_EX, self.open_path):
                return fd
        except StoreError:
            os.close(fd)
            raise
        os.close(fd)
        return None

    def warm(self) -> None:
        """Bring the vector sidecar to the committed token, and the shared row, BM25 and symbol
        copies where a reader would pay for them (copies.Copies.warm): each is patched when a file
        of it is near, else read whole and written, as a first search or look-up would (838k
        chunks: 18 s for a search's, 12 s for a look-up's, once; docs/notebook.md, "How the cost grows")."""
        if not self.exists:
            return
        with self.read() as reader:
            conn = reader.conn  # type: ignore[attr-defined]
            if conn.has_index():
                conn.copies.warm()

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

    def _locked_error(self) -> StoreLockedError:
        return StoreLockedError(
            f"the index {self.path} is held by another process for more than "
            f"{self.lock_timeout_s:g}s; wait for it to finish or raise lock_timeout_s"
        )

    def _writer_waiting(self) -> bool:
        """Whether another process holds the writer lock now (this process's writer excluded:
        it closes the lease itself)."""
        return lock_held(self.intent_path, fcntl.LOCK_SH)

    def _wait_for_writer(self) -> None:
        wait_while(self._writer_waiting, self.lock_timeout_s, poll_s=0.05)

    def _schedule_close(self, idle_since: float | None = None) -> None:
        self._cancel_timer()
        since = time.monotonic() if idle_since is None else idle_since
        self._timer = threading.Timer(WRITER_POLL_S, self._idle_tick, args=(since,))
        self._timer.daemon = True
        self._timer.start()

    def _idle_tick(self, idle_since: float) -> None:
        """Close an idle lease when a writer waits or the lease is up; else look again soon."""
        with self._lock:
            if self._conn is None or not self._conn.read_only or self._readers:
                return
            if not self._blocks_dropped:
                self._drop_blocks()
            if self._writer_waiting() or time.monotonic() - idle_since >= READ_LEASE_S:
                self._close()
            else:
                self._schedule_close(idle_since)

    def _drop_blocks(self) -> None:
        """Free the blocks the idle lease holds cached: at once when the last reader leaves after
        a table was read whole (self.derived.loads moved), else at the lease's first idle tick."""
        assert self._conn is not None
        if not _drop_blocks(self._conn):
            self._close()  # the next read opens a connection with the whole limit
        self._blocks_dropped = True
        self._loads_seen = self.derived.loads

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
            finally:
                if self._open_fd is not None:
                    fd, self._open_fd = self._open_fd, None
                    os.close(fd)  # closing releases `<db>.open` (after DuckDB let go of the file)


def _drop_blocks(conn: Connection) -> bool:
    """Let DuckDB give back the blocks an idle read lease holds cached beyond KEPT_BLOCKS_MAX.

    A read of a whole column (the vectors or rows a process copies, a count over the vector
    column) leaves its blocks in DuckDB's buffer pool until the connection closes: 37 MB of a
    `sai mcp` server at 20k chunks, 58 MB with the reads that rebuild the vector sidecar. Lowering
    the memory limit evicts them (unpinned blocks only: with no reader left none is pinned) and
    the limit is set back at once; the next read takes its blocks from the page cache.
    Called with no reader on the lease (the store's lock held), so no query can meet the low limit.
    False when the limit could not be set back: the connection must not serve another read.
    """
    try:
        used = conn.con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()
        if used is None or (used[0] or 0) <= KEPT_BLOCKS_MAX:
            return True
        (limit,) = conn.con.execute("SELECT current_setting('memory_limit')").fetchone() or ("",)
        conn.con.execute("SET memory_limit = '1MB'")  # fails, changing nothing, if it cannot evict
    except duckdb.Error as exc:  # the blocks stay cached: memory, not correctness
        log.debug("kept DuckDB's cached blocks: %s", first_line(exc))
        return True
    try:  # set back by value: RESET restores the setting but leaves the buffer pool at 1 MB (DuckDB 1.5.5)
        conn.con.execute(f"SET memory_limit = '{quote(limit)}'")
        return True
    except duckdb.Error as exc:
        log.debug("DuckDB's memory limit not set back: %s", first_line(exc))
        return False


__all__ = ["DuckDBStore"]
