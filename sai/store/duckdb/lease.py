"""The one connection a process holds on the index file at a time, as a machine of four named states.

DuckDB lets one writing process hold a file and shuts out every other process, readers included,
so connections are short-lived (docs/design.md, "Locking"):

- CLOSED: no connection.
- LEASED: a read-only connection, kept READ_LEASE_S after its last reader (reopening costs
  ~0.15 s), closed as soon as another process holds `<db>.writer`: an idle lease looks every
  WRITER_POLL_S, a busy one when its last reader leaves.
- WRITING: one write transaction on a read-write connection, under `<db>.writer` (flock,
  exclusive); the writing thread reads its own transaction.
- HOLDING: a run (`holding()`) keeps the read-write connection and `<db>.writer` between its
  transactions: closing checkpoints, which costs seconds at 78k chunks. Threads of this process
  read through cursors of it meanwhile. A reader of another process asks for the file by holding
  `<db>.readers` (flock, shared) while it waits and connects; the run yields to it (HOLDING ->
  CLOSED) when it sees the request, every WRITER_POLL_S and before each transaction, and its
  next transaction waits until the readers are in.

Every connection holds `<db>.open` (flock: shared by a lease, exclusive by the writer) for as long
as it is open, so the writer never opens while a lease of another process is open, whatever else
that process does with the file (`_connect`). Both sides retry a locked file until lock_timeout_s.
A lock dies with its process, so a killed writer never leaves readers waiting.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb

from sai.errors import StoreError, StoreLockedError
from sai.store.cache import TokenCache
from sai.store.duckdb import compaction
from sai.store.duckdb.errors import describe, first_line, translate
from sai.store.duckdb.rows import quote
from sai.store.duckdb.tables import Connection
from sai.store.locks import EXCLUSIVE, SHARED, FileLock, Held, wait_while

log = logging.getLogger(__name__)
READ_LEASE_S = 5.0  # how long an idle reader keeps the file open (reopening costs ~0.15 s)
WRITER_POLL_S = 0.2  # how often an idle lease looks for a writer, and a holding run for readers
KEPT_BLOCKS_MAX = 8 << 20  # bytes of DuckDB's cached blocks an idle lease keeps (`_drop_blocks`)


class State(enum.Enum):
    CLOSED = "closed"
    LEASED = "leased"
    WRITING = "writing"
    HOLDING = "holding"


def lock_file(db: Path, suffix: str) -> FileLock:
    return FileLock(db.with_name(db.name + suffix))


class Lease:
    """The connection of one process on one index file, in one of the states above."""

    def __init__(self, path: Path, *, collection: str, lock_timeout_s: float, derived: TokenCache) -> None:
        self.path = path
        self.collection = collection  # what connections open: `<collection>__rebuild` in a rebuild
        self.lock_timeout_s = lock_timeout_s
        self.derived = derived  # the copies, kept across leases
        self.state = State.CLOSED
        self.conn: Connection | None = None
        self._cond = threading.Condition(threading.RLock())
        self._writer_lock, self._request_lock = lock_file(path, ".writer"), lock_file(path, ".readers")
        self._open_lock = lock_file(path, ".open")
        self._writer: Held | None = None  # `<db>.writer`, held while WRITING or HOLDING
        self._open: Held | None = None  # `<db>.open`, held while a connection is
        self._readers = 0  # threads of this process reading through the connection now
        self._runs = 0  # nested holding() blocks
        self._writing: int | None = None  # the thread inside a write transaction
        self._ticks = 0  # the timer's generation: a tick of an older one does nothing
        self._timer: threading.Timer | None = None  # LEASED: the idle close; HOLDING: the yield
        self._blocks_dropped = True  # since the lease's last reader left (`_drop_blocks`)
        self._loads_seen = 0  # derived.loads when the lease's blocks were last dropped

    # -- the three ways in ------------------------------------------------------------------

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A cursor of the connection (threads read in parallel), or the writing thread's own."""
        with self._cond:
            if self._writing == threading.get_ident():
                assert self.conn is not None
                with translate(self.path):
                    yield self.conn  # the writing thread reads its own transaction
                return
            cursor = self._cursor()
        try:
            with translate(self.path):
                yield cursor
        finally:
            cursor.close()
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()
                    self._last_reader_left()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction (WRITING); then CLOSED, or HOLDING inside holding()."""
        with self._cond:
            self._cond.wait_for(lambda: self._readers == 0)  # this process's readers finish first
            self._cancel_timer()
            with translate(self.path):
                conn = self._writer_connection()
                self._writing, self.state = threading.get_ident(), State.WRITING
                try:
                    conn.begin()
                    yield conn
                    conn.commit()
                except BaseException:
                    conn.rollback()
                    self._release()
                    raise
                finally:
                    self._writing = None
                    if not self._runs:
                        self._release()
                    elif self.state is State.WRITING:
                        self.state = State.HOLDING
                        self._schedule(self._yield_tick)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """The transactions inside keep one connection (one checkpoint at the end, not one per
        transaction); a run that ends cleanly compacts a wasteful file (compaction.py)."""
        with self._cond:
            self._runs += 1
        finished = False
        try:
            yield
            finished = True
        finally:
            with self._cond:
                self._runs -= 1
                if not self._runs and self.state is State.HOLDING:
                    self._cancel_timer()
                    self._cond.wait_for(lambda: self._readers == 0)  # their cursors are on it
                    with translate(self.path):
                        try:
                            if finished:
                                self._compact()
                        finally:
                            self._release()

    def switch(self, collection: str) -> None:
        """Connections open `collection` from now on (the one open on the other closes)."""
        with self._cond:
            self._cond.wait_for(lambda: self._readers == 0)
            self.close()
            self.collection = collection

    def close(self) -> None:
        with self._cond:
            self._cancel_timer()
            with translate(self.path):
                self._release()

    # -- transitions --------------------------------------------------------------------------

    def _cursor(self) -> Connection:
        """A cursor of the lease (opened when CLOSED), or of a holding run's connection."""
        if self.state is State.LEASED:
            self._cancel_timer()
            if self._readers == 0 and self._writer_waiting():
                self._close()
        if self.conn is None:
            if not self.path.is_file():
                raise StoreError(f"no index at {self.path}; run `sai` in the project to build it")
            with self._asking():
                wait_while(self._writer_waiting, self.lock_timeout_s, poll_s=0.05)
                self._connect(read_only=True)
        assert self.conn is not None
        cursor = self.conn.cursor()
        self._readers += 1
        self._blocks_dropped = False
        return cursor

    def _last_reader_left(self) -> None:
        if self.state is not State.LEASED:
            return
        if self._writer_waiting():
            self._close()  # another process wants to write: let it in now
            return
        if self.derived.loads != self._loads_seen:  # a table was read whole: free its blocks now
            self._drop_blocks()
        self._schedule(self._idle_tick, time.monotonic())

    def _writer_connection(self) -> Connection:
        """The held writer connection, or a new one under `<db>.writer`; a held one first yields
        to the readers of other processes that asked for the file."""
        if self.state is State.HOLDING and self.conn is not None:
            if not self._readers_asking():
                return self.conn
            self._release()  # closing checkpoints: the readers see what was committed
        self._close()
        wait_while(self._readers_asking, self.lock_timeout_s, poll_s=0.02)  # until they are connected
        self._writer = self._writer_lock.take(EXCLUSIVE, timeout_s=self.lock_timeout_s)
        if self._writer is None:
            raise self._locked_error()
        try:
            self._connect(read_only=False)
        except BaseException:
            self._release()
            raise
        assert self.conn is not None
        return self.conn

    def _connect(self, *, read_only: bool) -> None:
        """Open a connection (LEASED, or HOLDING until its transaction begins) with `<db>.open`
        held shared or exclusive for as long as it is open, retried while another process holds
        either until lock_timeout_s.

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
                    self.conn = Connection.open(self.path, self.collection, read_only=read_only, derived=self.derived)
                    self._open, self.state = held, State.LEASED if read_only else State.HOLDING
                    return
                except duckdb.Error as exc:
                    held.release()
                    # another process holds the file ("Could not set lock on file … Conflicting lock")
                    if not (isinstance(exc, duckdb.IOException) and "could not set lock" in str(exc).lower()):
                        raise describe(exc, self.path) from exc
            if time.monotonic() >= deadline:
                raise self._locked_error()
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _lock_open(self, *, read_only: bool) -> Held | None:
        """`<db>.open` taken for a connection; None while another process's connection holds a
        conflicting lock. Where no lock file can be made (a read-only directory: no writer can be
        there either) a connection goes ahead without one."""
        try:
            return self._open_lock.take(SHARED if read_only else EXCLUSIVE)
        except OSError:
            return Held(-1)

    def _compact(self) -> None:
        """Copy the file into a fresh one and rename it over the index when it carries too much
        free space (compaction.py); the writer lock is held throughout."""
        compaction.discard(compaction.compact_path(self.path))  # what a killed compaction left
        if self.conn is None or not compaction.wasteful(self.conn):
            return
        copy = compaction.copy_beside(self.conn, self.path)
        self._close()  # a checkpoint: the copy holds everything committed
        if copy is not None:
            compaction.swap_in(copy, self.path)

    def _release(self) -> None:
        """Close the connection (DuckDB checkpoints a writer's) and let `<db>.writer` go."""
        try:
            self._close()
        finally:
            if self._writer is not None:
                held, self._writer = self._writer, None
                held.release()

    def _close(self) -> None:
        if self.conn is not None:
            conn, self.conn, self.state = self.conn, None, State.CLOSED
            try:
                conn.close()
            finally:
                if self._open is not None:
                    held, self._open = self._open, None
                    held.release()  # after DuckDB let go of the file

    # -- the timer: an idle lease's close, a holding run's yield -------------------------------

    def _schedule(self, tick: Callable[..., None], *args: object) -> None:
        self._cancel_timer()
        self._timer = threading.Timer(WRITER_POLL_S, tick, args=(self._ticks, *args))
        self._timer.daemon = True
        self._timer.start()

    def _cancel_timer(self) -> None:
        self._ticks += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _idle_tick(self, generation: int, idle_since: float) -> None:
        """Close an idle lease when a writer waits or the lease is up; else look again soon."""
        with self._cond:
            if generation != self._ticks or self.state is not State.LEASED or self._readers:
                return
            if not self._blocks_dropped:
                self._drop_blocks()
            if self._writer_waiting() or time.monotonic() - idle_since >= READ_LEASE_S:
                self._close()
            else:
                self._schedule(self._idle_tick, idle_since)

    def _yield_tick(self, generation: int) -> None:
        """Between a run's transactions: let in the readers of other processes that asked."""
        with self._cond:
            if generation != self._ticks or self.state is not State.HOLDING:
                return
            if self._readers or not self._readers_asking():
                self._schedule(self._yield_tick)
                return
            try:
                self._release()
            except duckdb.Error as exc:  # the run's next write reopens the file and reports
                log.debug("closing the run's connection for a reader failed: %s", first_line(exc))

    def _drop_blocks(self) -> None:
        """Free the blocks the idle lease holds cached: at once when the last reader leaves after
        a table was read whole (derived.loads moved), else at the lease's first idle tick."""
        assert self.conn is not None
        if not _drop_blocks(self.conn):
            self._close()  # the next read opens a connection with the whole limit
        self._blocks_dropped = True
        self._loads_seen = self.derived.loads

    # -- the other processes ------------------------------------------------------------------

    @contextlib.contextmanager
    def _asking(self) -> Iterator[None]:
        """Hold `<db>.readers` shared while connecting: a holding run sees the request and yields."""
        try:
            held = self._request_lock.take(SHARED, timeout_s=None)
        except OSError:  # a read-only directory: no run can be writing there either
            held = None
        try:
            yield
        finally:
            if held is not None:
                held.release()

    def _readers_asking(self) -> bool:
        return self._request_lock.held_elsewhere(EXCLUSIVE)

    def _writer_waiting(self) -> bool:
        """Whether a process holds `<db>.writer` (this one's writer closes the lease itself)."""
        return self._writer_lock.held_elsewhere(SHARED)

    def _locked_error(self) -> StoreLockedError:
        return StoreLockedError(
            f"the index {self.path} is held by another process for more than "
            f"{self.lock_timeout_s:g}s; wait for it to finish or raise lock_timeout_s"
        )


def _drop_blocks(conn: Connection) -> bool:
    """Let DuckDB give back the blocks an idle read lease holds cached beyond KEPT_BLOCKS_MAX.

    A read of a whole column (the vectors or rows a process copies, a count over the vector
    column) leaves its blocks in DuckDB's buffer pool until the connection closes: 37 MB of a
    `sai mcp` server at 20k chunks, 58 MB with the reads that rebuild the vector sidecar. Lowering
    the memory limit evicts them (unpinned blocks only: with no reader left none is pinned) and
    the limit is set back at once; the next read takes its blocks from the page cache.
    Called with no reader on the lease (the lease's lock held), so no query can meet the low limit.
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
