"""The index file: the only module that imports duckdb.

One DuckDB file holds, per collection, a chunk table `<collection>` (with a cosine HNSW index on
`embedding`), a file table `<collection>__files`, and rows in the shared `sai_meta` table.

Connections are short-lived because DuckDB lets one writing process hold a file and shuts out
every other process, readers included. Writers announce themselves with an intent file
(`<db>.writer`, holding their pid); readers close their connection as soon as they see one and
otherwise keep it for a short idle lease. Both sides retry a locked file until `lock_timeout_s`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb

from sai.errors import StoreError, StoreLockedError
from sai.store.tables import Connection, extension_path

READ_LEASE_S = 5.0  # how long an idle reader keeps the file open (reopening costs ~0.15 s)
WRITER_POLL_S = 0.2  # how often an idle reader looks for a writer's intent file


class Store:
    """An index file and the one connection this process holds on it at a time."""

    def __init__(self, path: Path, *, collection: str, lock_timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.collection = collection
        self.lock_timeout_s = lock_timeout_s
        self._lock = threading.Condition(threading.RLock())
        self._conn: Connection | None = None
        self._timer: threading.Timer | None = None
        self._readers = 0  # threads of this process reading through the lease right now

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    @property
    def intent_path(self) -> Path:
        return self.path.with_name(self.path.name + ".writer")

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A cursor on the read-only lease (threads read in parallel), or this thread's writer."""
        with self._lock:
            if self._conn is not None and not self._conn.read_only:
                yield self._conn  # only the writing thread gets here: it holds the lock
                return
            cursor = self._lease_cursor()
        try:
            yield cursor
        finally:
            cursor.close()
            with self._lock:
                self._readers -= 1
                if self._readers == 0:
                    self._lock.notify_all()
                    if self._conn is not None and self._writer_waiting():
                        self._close()  # another process wants to write: let it in now
                    elif self._conn is not None:
                        self._schedule_close()

    def _lease_cursor(self) -> Connection:
        self._cancel_timer()
        if self._conn is not None and self._readers == 0 and self._writer_waiting():
            self._close()
        if self._conn is None:
            if not self.exists:
                raise StoreError(f"no index at {self.path}; run `sai` in the project to build it")
            self._wait_for_writer()
            self._conn = self._connect(read_only=True)
        cursor = self._conn.cursor()
        self._readers += 1
        return cursor

    @contextlib.contextmanager
    def write(self) -> Iterator[Connection]:
        """A read-write connection inside one transaction, released when the block ends."""
        with self._lock:
            self._lock.wait_for(lambda: self._readers == 0)  # this process's readers finish first
            self._cancel_timer()
            self._close()
            self.prepare_dir()
            self.intent_path.write_text(str(os.getpid()))
            try:
                conn = self._connect(read_only=False)
                self._conn = conn
                try:
                    conn.begin()
                    yield conn
                    conn.commit()
                except BaseException:
                    conn.rollback()
                    raise
                finally:
                    self._close()
            finally:
                with contextlib.suppress(OSError):
                    self.intent_path.unlink()

    def close(self) -> None:
        with self._lock:
            self._cancel_timer()
            self._close()

    def _connect(self, *, read_only: bool) -> Connection:
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.02
        while True:
            try:
                return Connection.open(self.path, self.collection, read_only=read_only)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise StoreError(f"cannot open the index {self.path}: {_first_line(exc)}") from exc
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"the index {self.path} is held by another process for more than "
                        f"{self.lock_timeout_s:g}s; wait for it to finish or raise duckdb.lock_timeout_s"
                    ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def prepare_dir(self) -> None:
        """Create the index directory, or fail with one line before any work is done."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
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

    def _writer_waiting(self) -> bool:
        try:
            pid = int(self.intent_path.read_text().strip() or 0)
        except (OSError, ValueError):
            return False
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False  # a writer that died left its intent file behind
        except PermissionError:
            return True
        return True

    def _wait_for_writer(self) -> None:
        deadline = time.monotonic() + self.lock_timeout_s
        while self._writer_waiting() and time.monotonic() < deadline:
            time.sleep(0.05)

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
            if self._writer_waiting() or time.monotonic() - idle_since >= READ_LEASE_S:
                self._close()
            else:
                self._schedule_close(idle_since)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


__all__ = ["Store", "Connection", "extension_path"]
