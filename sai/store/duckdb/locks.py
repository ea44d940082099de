"""Probing and taking the file locks SAI's processes coordinate by (`<db>.writer`, `<db>.readers`,
`<db>.open`, `<db>.run`): a non-blocking `flock` that another process's lock refuses, and a poll
until one is let go."""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from sai.errors import StoreError


def lock_held(path: Path, mode: int) -> bool:
    """Whether another process holds a lock on `path` that `mode` (LOCK_SH, LOCK_EX) conflicts with."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the probe's own lock
    return False


def try_lock(fd: int, mode: int, path: Path) -> bool:
    """Take `mode` (LOCK_SH, LOCK_EX) on `fd`, the open lock file `path`, without waiting: False
    while another descriptor holds a conflicting lock; any other failure is a StoreError."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EAGAIN, errno.EACCES):
            raise StoreError(f"cannot lock {path}: {exc.strerror}") from exc
        return False
    return True


def wait_while(busy: Callable[[], bool], timeout_s: float, *, poll_s: float) -> None:
    """Poll `busy` until it is false or `timeout_s` has passed (the caller looks again after)."""
    deadline = time.monotonic() + timeout_s
    while busy() and time.monotonic() < deadline:
        time.sleep(poll_s)
