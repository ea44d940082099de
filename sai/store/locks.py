"""File locks (`flock`) the store's processes coordinate by: one helper behind every lock file.

A `flock` belongs to the open file description it was taken on, dies with its process (a killed
holder never blocks anyone), and is let go by closing the descriptor. The DuckDB backend's
`<db>.writer`, `<db>.readers`, `<db>.open` and `<db>.run`, the lock of its copies' directory
and Qdrant's local `sai-writer.lock` are all taken here.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sai.errors import StoreError

SHARED, EXCLUSIVE = fcntl.LOCK_SH, fcntl.LOCK_EX
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass
class Held:
    """A lock taken: `release` (closing its descriptor) lets it go."""

    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


@dataclass(frozen=True)
class FileLock:
    """The flock of one lock file (made when missing; opened read-only when another user made it,
    unless the holder writes into it)."""

    path: Path
    writes: bool = False

    def take(self, mode: int, *, timeout_s: float | None = 0.0, poll_s: float = 0.02,
             on_wait: Callable[[], None] | None = None) -> Held | None:
        """Hold `mode` (SHARED, EXCLUSIVE): at once, else polling every `poll_s` until `timeout_s`
        (None: as long as it takes; `on_wait` called once if it has to wait). None when another
        process still holds a conflicting lock; OSError when the file can be neither made nor
        opened; any other failure of the lock is a StoreError."""
        fd = self._open()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            while not self._try(fd, mode):
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    return None
                if on_wait is not None:
                    on_wait()
                    on_wait = None
                time.sleep(poll_s)
        except BaseException:
            os.close(fd)
            raise
        return Held(fd)

    @contextlib.contextmanager
    def hold(self, mode: int, *, poll_s: float = 0.02, on_wait: Callable[[], None] | None = None) -> Iterator[Held]:
        """`mode` held for the block, waited for as long as it takes."""
        held = self.take(mode, timeout_s=None, poll_s=poll_s, on_wait=on_wait)
        assert held is not None  # no deadline: take returns once it holds
        try:
            yield held
        finally:
            held.release()

    def held_elsewhere(self, mode: int) -> bool:
        """Whether another descriptor holds a lock that `mode` conflicts with (a probe: nothing is kept)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | _CLOEXEC)
        except OSError:
            return False  # no lock file: no holder
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # closing drops the probe's own lock
        return False

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o644)
        except OSError:
            if self.writes:
                raise
            return os.open(self.path, os.O_RDONLY | _CLOEXEC)  # flock needs no write

    def _try(self, fd: int, mode: int) -> bool:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise StoreError(f"cannot lock {self.path}: {exc.strerror}") from exc
            return False
        return True


def wait_while(busy: Callable[[], bool], timeout_s: float, *, poll_s: float) -> None:
    """Poll `busy` until it is false or `timeout_s` has passed (the caller looks again after)."""
    deadline = time.monotonic() + timeout_s
    while busy() and time.monotonic() < deadline:
        time.sleep(poll_s)
