"""The records the duplicate passes share: candidate edges, the rows' nesting and shapes, each
row's top k, and the union-find that turns edges into groups.

The passes that make edges: sai/duplicates/exact.py (every pair, tile by tile),
sai/duplicates/buckets.py (random-hyperplane buckets, for large matrices) and
sai/duplicates/score.py (the duplicate score, and which of the two cosine passes runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sai.text import shape

COMPACT_AT = 4_000_000  # candidate edges held before they are cut to each row's top k


def cosine_floor(min_score: float) -> float:
    """The cosine a pair needs to reach min_score when band_pairs may miss its shape (shape
    similarity below shape.FOUND_FROM): the shape weighs at least half of a duplicate score
    (score.shape_weight), so such a pair needs cosine >= 2 * min_score - FOUND_FROM. Conversely
    a pair below this cosine reaches min_score only with shape similarity >= 2 * min_score - floor."""
    return max(min_score, 2 * min_score - shape.FOUND_FROM)


@dataclass(frozen=True)
class Edges:
    """Directed candidate edges i -> j with similarity s (parallel arrays)."""

    i: np.ndarray
    j: np.ndarray
    s: np.ndarray

    @staticmethod
    def empty() -> Edges:
        return Edges(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))

    @staticmethod
    def concat(parts: Sequence[Edges]) -> Edges:
        if not parts:
            return Edges.empty()
        return Edges(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("i", "j", "s")))

    def where(self, keep: np.ndarray) -> Edges:
        return Edges(self.i[keep], self.j[keep], self.s[keep])

    def __len__(self) -> int:
        return len(self.i)


@dataclass(frozen=True)
class Nesting:
    """Rows' files and line spans: two rows of one file where one span holds the other never pair."""

    file: np.ndarray  # an integer per row, equal for rows of the same file
    start: np.ndarray
    end: np.ndarray

    @staticmethod
    def of(paths: Sequence[str], starts: Sequence[int], ends: Sequence[int]) -> Nesting:
        _, file = np.unique(np.asarray(paths, dtype=object), return_inverse=True)
        return Nesting(file.ravel(), np.asarray(starts), np.asarray(ends))

    def take(self, rows: np.ndarray) -> Nesting:
        return Nesting(self.file[rows], self.start[rows], self.end[rows])

    def excluded(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        same = self.file[i] == self.file[j]
        i_in_j = (self.start[j] <= self.start[i]) & (self.end[i] <= self.end[j])
        j_in_i = (self.start[i] <= self.start[j]) & (self.end[j] <= self.end[i])
        return same & (i_in_j | j_in_i)

    def most_partners(self, rows: np.ndarray, cols: np.ndarray) -> int:
        """At most how many of `cols` share a file with one of `rows`: a bound on the pairs a
        row may lose to exclusion among them."""
        files, counts = np.unique(self.file[cols], return_counts=True)
        at = np.searchsorted(files, self.file[rows]).clip(max=len(files) - 1)
        shared = files[at] == self.file[rows]
        return int(counts[at[shared]].max()) if shared.any() else 0


@dataclass(frozen=True)
class Shapes:
    """Rows' shape signatures (sai/text/shape.py), their element counts and the mask of rows
    that have one."""

    sigs: np.ndarray
    sizes: np.ndarray
    known: np.ndarray

    @staticmethod
    def of(blobs: Sequence[bytes | None]) -> Shapes:
        return Shapes(*shape.signatures(list(blobs)))

    def take(self, rows: np.ndarray | Sequence[int]) -> Shapes:
        return Shapes(self.sigs[rows], self.sizes[rows], self.known[rows])


class TopK:
    """Candidate edges among `rows` rows, cut to each source row's k best whenever more than
    max(COMPACT_AT, 2 * rows * k) pile up: memory stays O(rows * k) however many are added.

    With `distinct`, a pair added more than once (found in several rounds of
    sai/duplicates/buckets.py) is kept once."""

    def __init__(self, k: int, *, rows: int, distinct: bool = False) -> None:
        self.k, self.rows, self.distinct = k, rows, distinct
        self.limit = max(COMPACT_AT, 2 * rows * k)
        self.parts: list[Edges] = []
        self.held = 0

    def add(self, edges: Edges) -> None:
        if not len(edges):
            return
        self.parts.append(edges)
        self.held += len(edges)
        if self.held > self.limit:
            self.parts = [self.result()]
            self.held = len(self.parts[0])

    def result(self) -> Edges:
        edges = Edges.concat(self.parts)
        if self.distinct:
            _, first = np.unique(edges.i * self.rows + edges.j, return_index=True)
            edges = edges.where(first)
        return keep_top_k(edges, self.k)


def keep_top_k(edges: Edges, top_k: int) -> Edges:
    """Per source row, the top_k edges by score (ties by lower target index: deterministic)."""
    if len(edges.i) == 0:
        return edges
    order = np.lexsort((edges.j, -edges.s, edges.i))
    i, j, s = edges.i[order], edges.j[order], edges.s[order]
    starts = np.r_[0, np.flatnonzero(np.diff(i)) + 1]
    rank = np.arange(len(i)) - np.repeat(starts, np.diff(np.r_[starts, len(i)]))
    keep = rank < top_k
    return Edges(i[keep], j[keep], s[keep])


def union_find_groups(n: int, edges: Edges) -> list[tuple[list[int], float, float]]:
    """Connected components over the edges: (members, min_sim, max_sim) for each with an edge."""
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(edges.i.tolist(), edges.j.tolist(), strict=True):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    sims: dict[int, list[float]] = {}
    members: dict[int, set[int]] = {}
    for a, b, s in zip(edges.i.tolist(), edges.j.tolist(), edges.s.tolist(), strict=True):
        r = root(a)
        sims.setdefault(r, []).append(s)
        members.setdefault(r, set()).update((a, b))
    return [(sorted(m), min(sims[r]), max(sims[r])) for r, m in members.items()]
