"""The exact cosine pass: every pair of rows, visited tile by tile, with a screen that cannot
miss a pair.

Pairs are visited tile by tile (each pair once; an off-diagonal tile serves both directions),
every pair scoring >= the floor becomes a candidate edge, pairs that may never pair (a chunk
and itself, a chunk and one containing it in the same file) are dropped, and each row keeps its
k best. Candidates are cut to each row's k best whenever they pile up (edges.TopK), and a tile
where most pairs pass (a low threshold) keeps only each row's best few, so memory stays at one
tile plus O(n * k) edges and time near one matrix product whatever the threshold.

On a large matrix most of the n^2 * d multiply-adds are skipped by a screen that cannot miss a
pair: the vectors are rotated onto their principal directions (a rotation keeps every dot
product), and x.y = head(x).head(y) + tail(x).tail(y) <= head(x).head(y) + |tail(x)| |tail(y)|.
That bound is one (HEAD_DIMS + 1)-dimensional product per pair; only pairs whose bound reaches
the floor get their full dot product. Code embeddings put most of their energy in a few dozen
directions (MiniLM on stdlib code: the bound passes ~0.2% of pairs at 0.8), and a tile where the
screen passes too many is computed in full instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from sai.duplicates.edges import Edges, Nesting, TopK

TILE = 2048  # rows and columns per tile: a 16 MB float32 block
HEAD_DIMS = 64  # principal directions the screen computes exactly
SCREEN_FROM = 4096  # fewer rows than this: every pair is computed in full, no screen
DENSE = 0.01  # a tile whose screen passes more than this fraction of pairs is computed in full
GATHER = 2048  # candidate pairs verified per gathered slice (it stays in cache: ~6x faster)
MARGIN = 1e-4  # allowance for float32 rounding in the screen's bound
CUT_AT = 4  # a computed tile keeps only rows' best when over CUT_AT * k * (rows + cols) pass

Index = slice | np.ndarray  # rows of a tile: a contiguous range, or chosen rows (seeded search)


def exact_edges(
    matrix: np.ndarray,
    *,
    top_k: int,
    min_score: float,
    queries: np.ndarray | None = None,
    nesting: Nesting | None = None,
) -> Edges:
    """For each query row (by default every row), its top_k neighbours (itself excluded) with
    cosine >= min_score, among all rows. Pairs `nesting` excludes are dropped before the top k
    are chosen."""
    n = matrix.shape[0]
    if n < 2 or top_k <= 0:
        return Edges.empty()
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    screen = _screen(matrix) if n >= SCREEN_FROM and matrix.shape[1] > 2 * HEAD_DIMS else None
    kept = TopK(top_k, rows=n)
    for rows, cols, mirror in _tiles(n, queries):
        edges = _tile_edges(matrix, screen, _Tile(rows, cols, mirror), float(min_score),
                            top_k=top_k, nesting=nesting)
        if nesting is not None and len(edges):
            edges = edges.where(~nesting.excluded(edges.i, edges.j))
        kept.add(edges)
    return kept.result()


@dataclass(frozen=True)
class _Tile:
    rows: Index
    cols: slice
    mirror: bool  # an off-diagonal tile: it also serves columns -> rows

    @property
    def row_ids(self) -> np.ndarray:
        rows = self.rows
        return np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows

    @property
    def col_ids(self) -> np.ndarray:
        return np.arange(self.cols.start, self.cols.stop)


def _tiles(n: int, queries: np.ndarray | None) -> Iterator[tuple[Index, slice, bool]]:
    if queries is None:
        for a in range(0, n, TILE):
            yield slice(a, min(n, a + TILE)), slice(a, min(n, a + TILE)), False
            for b in range(a + TILE, n, TILE):
                yield slice(a, a + TILE), slice(b, min(n, b + TILE)), True
        return
    queries = np.asarray(queries, dtype=np.int64)
    for a in range(0, len(queries), TILE):
        for b in range(0, n, TILE):
            yield queries[a:a + TILE], slice(b, min(n, b + TILE)), False


def _screen(matrix: np.ndarray) -> np.ndarray:
    """Each row's head (its first HEAD_DIMS principal coordinates) and, last, its tail's norm."""
    basis = _principal_basis(matrix, HEAD_DIMS)
    out = np.empty((matrix.shape[0], HEAD_DIMS + 1), dtype=np.float32)
    for a in range(0, matrix.shape[0], 8192):
        rows = matrix[a:a + 8192].astype(np.float64)
        head = rows @ basis
        out[a:a + 8192, :HEAD_DIMS] = head
        out[a:a + 8192, HEAD_DIMS] = np.linalg.norm(rows - head @ basis.T, axis=1)
    return out


def _principal_basis(matrix: np.ndarray, dims: int) -> np.ndarray:
    """An orthonormal (d, dims) basis near the top principal directions (subspace iteration).

    Any orthonormal basis keeps the screen exact; a better one only makes it pass fewer pairs.
    """
    gram = (matrix.T @ matrix).astype(np.float64)
    basis = np.random.default_rng(0).standard_normal((matrix.shape[1], dims))
    for _ in range(3):
        basis = _orthonormal(gram @ basis)
    return basis


def _orthonormal(columns: np.ndarray) -> np.ndarray:
    """Modified Gram-Schmidt on 1-D products: LAPACK's qr (and eigh), multithreaded on a busy
    2-core machine, took up to seconds for this 384 x 64 job; this takes a few milliseconds.
    A column with nothing left (the vectors span fewer dimensions) becomes zero, which the
    screen's bound tolerates."""
    q = np.array(columns, dtype=np.float64, order="F")
    for j in range(q.shape[1]):
        v = q[:, j]
        scale = np.sqrt(v @ v)
        for i in range(j):
            v -= (q[:, i] @ v) * q[:, i]
        norm = np.sqrt(v @ v)
        if norm <= 1e-9 * scale or norm == 0.0:
            v[:] = 0.0
        else:
            v /= norm
    return q


def _tile_edges(
    matrix: np.ndarray, screen: np.ndarray | None, tile: _Tile, min_score: float,
    *, top_k: int, nesting: Nesting | None,
) -> Edges:
    ri, ci = tile.row_ids, tile.col_ids
    r = c = None
    if screen is not None:
        r, c = _screened(screen[tile.rows], screen[tile.cols], min_score)
    if r is None or c is None:
        block = matrix[tile.rows] @ matrix[tile.cols].T
        r, c = _positions(block >= min_score, block.shape[1])
        if len(r) > CUT_AT * top_k * (len(ri) + len(ci)):  # a low threshold
            return _best_of_block(block, tile, min_score, top_k=top_k, nesting=nesting)
        s = block[r, c]
    else:
        s = dots(matrix, ri[r], ci[c])
        passed = s >= min_score
        r, c, s = r[passed], c[passed], s[passed]
    gi, gj = ri[r], ci[c]
    off = gi != gj
    gi, gj, s = gi[off], gj[off], s[off]
    if tile.mirror:
        return Edges(np.concatenate([gi, gj]), np.concatenate([gj, gi]), np.concatenate([s, s]))
    return Edges(gi, gj, s)


def _screened(
    head_rows: np.ndarray, head_cols: np.ndarray, min_score: float
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Tile positions whose bound reaches min_score, or (None, None) when too many do."""
    bound = head_rows @ head_cols.T  # head.head + |tail| |tail|, by the appended norm column
    flat = np.flatnonzero(bound >= min_score - MARGIN)
    if len(flat) > DENSE * bound.size:
        return None, None
    return np.divmod(flat, bound.shape[1])


def _positions(mask: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the True entries; flatnonzero is ~15x faster than 2-D nonzero."""
    return np.divmod(np.flatnonzero(mask), width)


def dots(matrix: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """matrix[i[n]] . matrix[j[n]] for each n."""
    out = np.empty(len(i), dtype=np.float32)
    for a in range(0, len(i), GATHER):
        out[a:a + GATHER] = np.einsum("ij,ij->i", matrix[i[a:a + GATHER]], matrix[j[a:a + GATHER]])
    return out


def _best_of_block(
    block: np.ndarray, tile: _Tile, min_score: float, *, top_k: int, nesting: Nesting | None
) -> Edges:
    """Each row's (and, mirrored, each column's) entries that can still be among its top k.

    A row keeps what reaches its (k + e)-th largest entry, e bounding the partners exclusion may
    take from it here: its true top k within this tile is always among them.
    """
    ri, ci = tile.row_ids, tile.col_ids
    inside = (ri >= ci[0]) & (ri <= ci[-1])
    block[np.flatnonzero(inside), ri[inside] - ci[0]] = -np.inf  # itself
    extra = nesting.most_partners(ri, ci) if nesting is not None else 0
    floor = np.maximum(_kth_largest(block, top_k + extra, axis=1), min_score)
    r, c = _positions(block >= floor[:, None], block.shape[1])
    parts = [Edges(ri[r], ci[c], block[r, c])]
    if tile.mirror:
        extra = nesting.most_partners(ci, ri) if nesting is not None else 0
        floor = np.maximum(_kth_largest(block, top_k + extra, axis=0), min_score)
        r, c = _positions(block >= floor[None, :], block.shape[1])
        parts.append(Edges(ci[c], ri[r], block[r, c]))
    return Edges.concat(parts)


def _kth_largest(block: np.ndarray, k: int, *, axis: int) -> np.ndarray:
    size = block.shape[axis]
    if k >= size:
        return np.full(block.shape[1 - axis], -np.inf, dtype=block.dtype)
    return np.take(np.partition(block, size - k, axis=axis), size - k, axis=axis)
