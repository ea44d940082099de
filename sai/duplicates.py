"""Near-duplicate clusters over a matrix of unit vectors: exact top-k, threshold, union-find.

Exact, not approximate: the similarity matrix is computed tile by tile (each pair once, the
tile mirrored for the other direction), only entries >= min_score survive a tile, each row
keeps its k best, and union-find joins the surviving edges. Memory stays at one tile
(TILE x TILE floats) plus the candidates; time is n^2 * d / 2 multiply-adds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TILE = 4096


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


def neighbour_edges(
    matrix: np.ndarray,
    *,
    top_k: int,
    min_score: float,
    queries: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> Edges:
    """For each query row, its top_k neighbours (itself excluded) with score >= min_score.

    `queries` (row indices) limits the rows that look for neighbours (seeded search); by
    default every row does. `excluded(i, j) -> bool mask` drops pairs that may never pair.
    """
    n = matrix.shape[0]
    if n < 2:
        return Edges.empty()
    if queries is None:
        parts = [_tile_edges(matrix, a, b, min_score) for a in range(0, n, TILE)
                 for b in range(a, n, TILE)]
    else:
        parts = [_row_block_edges(matrix, queries[a:a + TILE], min_score)
                 for a in range(0, len(queries), TILE)]
    edges = Edges.concat(parts)
    if excluded is not None and len(edges.i):
        keep = ~excluded(edges.i, edges.j)
        edges = Edges(edges.i[keep], edges.j[keep], edges.s[keep])
    return _keep_top_k(edges, top_k)


def _tile_edges(matrix: np.ndarray, a: int, b: int, min_score: float) -> Edges:
    block = matrix[a:a + TILE] @ matrix[b:b + TILE].T
    rows, cols = np.nonzero(block >= min_score)
    scores = block[rows, cols]
    gi, gj = rows + a, cols + b
    if a == b:
        off = gi != gj
        return Edges(gi[off], gj[off], scores[off])
    # an off-diagonal tile serves both directions
    return Edges(np.concatenate([gi, gj]), np.concatenate([gj, gi]), np.concatenate([scores, scores]))


def _row_block_edges(matrix: np.ndarray, rows_idx: np.ndarray, min_score: float) -> Edges:
    parts = []
    for b in range(0, matrix.shape[0], TILE):
        block = matrix[rows_idx] @ matrix[b:b + TILE].T
        rows, cols = np.nonzero(block >= min_score)
        gi, gj = rows_idx[rows], cols + b
        off = gi != gj
        parts.append(Edges(gi[off], gj[off], block[rows, cols][off]))
    return Edges.concat(parts)


def _keep_top_k(edges: Edges, top_k: int) -> Edges:
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
