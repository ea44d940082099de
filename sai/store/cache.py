"""The one copy of each table a process derives from a collection (its vectors, its symbols),
shared by its threads and kept for as long as the index token it was read at is current; a
table that can be patched is brought to a new token from its old copy instead of read again."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa

T = TypeVar("T")


def _malloc_trim() -> Any:
    """glibc's malloc_trim, or None where the C library has none (macOS, musl)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()
# glibc's mallopt parameters, and the values its own dynamic thresholds reach once a process has
# freed a block of 16 MB (as one that builds its tables does): below it, a query's numpy
# temporaries (the scan's scores, BM25's, the masks) reuse freed heap memory; a process that
# maps its tables instead would mmap and fault in every one of them afresh (~480 page faults a
# semantic query at 84k chunks). Freed memory is still given back after each table load.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_KEEP_BELOW = 16 << 20


def _keep_query_temporaries() -> None:
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return  # not glibc
    mallopt(_M_MMAP_THRESHOLD, _KEEP_BELOW)
    mallopt(_M_TRIM_THRESHOLD, 2 * _KEEP_BELOW)


def _give_back_freed_memory() -> None:
    """Return to the system the pages the allocators keep after a table is read: the Arrow
    results it was built from are gone, but Arrow's allocator keeps their pages (~120 MB of a
    searching process at 97k chunks), and glibc keeps the freed memory of each thread's arena
    (a server reads in worker threads: 24 MB of a `sai mcp` server at 20k chunks)."""
    pa.default_memory_pool().release_unused()
    if _TRIM is not None:
        _TRIM(0)


class TokenCache:
    """Holds, per name, the table read at the newest token seen; threads asking at once load it once."""

    def __init__(self) -> None:
        _keep_query_temporaries()
        self._lock = threading.RLock()
        self._held: dict[str, tuple[str, object]] = {}
        self.loads = 0  # tables read or patched so far (a store frees what their reads left cached)

    def get(self, token: str, load: Callable[[], T], *, name: str = "vectors",
            patch: Callable[[T], T | None] | None = None) -> T:
        """The table `name` at `token`: the copy held, else the held copy of an older token
        patched (when `patch` can: it answers None when it cannot), else `load()`."""
        with self._lock:
            held = self._held.get(name)
            if held is not None and held[0] == token and token:
                return held[1]  # type: ignore[return-value]
            old = self._held.pop(name, None)  # let the old copy go before the new one is read
            table = patch(old[1]) if patch is not None and old is not None and token else None  # type: ignore[arg-type]
            if table is None:
                old = None
                table = load()
            self.loads += 1
            _give_back_freed_memory()
            self._held[name] = (token, table)
            return table

    def peek(self, token: str, *, name: str = "vectors") -> object | None:
        """The table held for `name` if it was read at `token`, else None (nothing is loaded)."""
        with self._lock:
            held = self._held.get(name)
            return held[1] if held is not None and held[0] == token and token else None

    def clear(self) -> None:
        with self._lock:
            self._held.clear()

