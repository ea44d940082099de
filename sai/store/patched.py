"""Rows read whole plus a patch: the one update model of the copies patched row by row.

A copy of some per-chunk rows (store/duckdb/chunkrows.py's rows without text, store/shapes.py's
signatures) is read whole once, often as a shared file's pages that every process maps, which a
patch must never copy. So a patch leaves those rows as they are and keeps beside them which of
them are still in the index (`alive`) and the rows written since (`added`, one small part, sorted
by id); a later patch drops the rows it removed from both and joins its rows to `added`. A part
is any frozen record with sorted int64 `ids` that can keep a subset of its rows and join parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, Self, TypeVar

import numpy as np


class Part(Protocol):
    @property
    def ids(self) -> np.ndarray:
        """int64, sorted."""
        ...

    def taken(self, keep: np.ndarray) -> Self:
        """The rows where `keep` (a bool per row) holds, in order."""
        ...

    def joined(self, others: Sequence[Self]) -> Self:
        """These rows and the others', sorted by id."""
        ...


P = TypeVar("P", bound=Part)


@dataclass(frozen=True)
class Patched(Generic[P]):
    """`base` (read whole, never copied), the rows of it still in the index (`alive`; None: all)
    and the rows written since (`added`; None: none), at `token`."""

    token: str
    base: P
    alive: np.ndarray | None = None
    added: P | None = None

    def __len__(self) -> int:
        own = len(self.base.ids) if self.alive is None else int(np.count_nonzero(self.alive))
        return own + (0 if self.added is None else len(self.added.ids))

    @property
    def patch_rows(self) -> int:
        """The rows a patch holds apart: those written since and those of `base` removed."""
        dead = 0 if self.alive is None else len(self.base.ids) - int(np.count_nonzero(self.alive))
        return dead + (0 if self.added is None else len(self.added.ids))

    def patched(self, token: str, removed: np.ndarray, added: P) -> Self:
        """At `token`: without the `removed` ids, with the `added` rows (any of them may replace
        a removed one's id)."""
        alive = np.ones(len(self.base.ids), bool) if self.alive is None else self.alive.copy()
        if len(removed):
            alive &= ~np.isin(self.base.ids, removed)
        if self.added is not None:
            added = self.added.taken(~np.isin(self.added.ids, removed)).joined([added])
        return replace(self, token=token, alive=alive, added=added)

    def parts(self) -> list[tuple[P, np.ndarray | None]]:
        """Each part and its live rows (None: all of them)."""
        return [(self.base, self.alive)] + ([(self.added, None)] if self.added is not None else [])

    def where(self, wanted: np.ndarray) -> list[tuple[P, np.ndarray]]:
        """For each part, the row of each wanted id in it (-1: not there, or no longer alive)."""
        out = []
        for part, live in self.parts():
            at = np.full(len(wanted), -1, np.int64)
            if len(part.ids):
                found = np.searchsorted(part.ids, wanted).clip(max=len(part.ids) - 1)
                hit = part.ids[found] == wanted
                if live is not None:
                    hit &= live[found]
                at[hit] = found[hit]
            out.append((part, at))
        return out
