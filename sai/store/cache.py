"""The one copy of a collection's vectors a process keeps, shared by its threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sai.store.vectors import VectorTable


class VectorCache:
    """Holds the VectorTable of the newest token seen; threads asking at once load it once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: VectorTable | None = None

    def get(self, token: str, load: Callable[[], VectorTable]) -> VectorTable:
        with self._lock:
            if self._table is None or self._table.token != token or not token:
                self._table = None  # let the old copy go before the new one is read
                self._table = load()
            return self._table

    def clear(self) -> None:
        with self._lock:
            self._table = None
