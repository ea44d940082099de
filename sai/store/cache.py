"""The one copy of each table a process derives from a collection (its vectors, its symbols),
shared by its threads and kept for as long as the index token it was read at is current."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class TokenCache:
    """Holds, per name, the table read at the newest token seen; threads asking at once load it once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, tuple[str, object]] = {}

    def get(self, token: str, load: Callable[[], T], *, name: str = "vectors") -> T:
        with self._lock:
            held = self._held.get(name)
            if held is not None and held[0] == token and token:
                return held[1]  # type: ignore[return-value]
            self._held.pop(name, None)  # let the old copy go before the new one is read
            table = load()
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

