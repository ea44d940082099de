"""Near-duplicate clusters: candidate pairs, duplicate scores, top-k, threshold, union-find.

A pair's duplicate score is a weighted mean of its embedding cosine and its shape similarity
(the Jaccard similarity of the two chunks' token shapes, sai/text/shape.py): the model says the
two do the same thing, the shape says one is a copy of the other. Either alone misleads: a
small model reads names, so a copy renamed by someone else scores anywhere from 0.3 to 0.95
against its original and unrelated code up to 0.8, while boilerplate shares its shape with code
that does something else. How much a shared shape means depends on its size: two getters share
a dozen 3-grams by chance, no two unrelated functions share sixty. So the shape's weight is half
for a shape of SMALL_SHAPE elements or fewer and grows with the logarithm of the smaller shape's
size to SHAPE_WEIGHT_MAX at LARGE_SHAPE: a function whose whole shape is its original's pairs
with it whatever the cosine, and small look-alikes pair only when the model agrees. A chunk
without a shape (too few tokens) never pairs.

Candidates come from two sides. Pairs whose signatures share a locality-sensitive hash band
(shape.band_pairs) cover every pair with shape similarity >= FOUND_FROM but a few percent (at
0.9, all but 4 in 10^8), whatever their cosine; a pair below that reaches min_score only if its
cosine reaches 2 * min_score - FOUND_FROM (the shape weighs at least half), and those pairs are
found exactly by cosine (neighbour_edges), so the cosine pass runs at that floor.

The cosine pass is exact below candidates.BUCKETED_FROM rows (above,
sai/duplicates/candidates.py buckets the rows by random hyperplanes and verifies each bucket's
pairs exactly). Pairs are visited tile by tile (each pair once; an off-diagonal tile serves both
directions), every pair scoring >= the floor becomes a candidate edge, pairs that may never pair
(a chunk and itself, a chunk and one containing it in the same file) are dropped, and each row
keeps its k best. Candidates are cut to each row's k best whenever they pile up, and a tile
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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from sai.text import shape

TILE = 2048  # rows and columns per tile: a 16 MB float32 block
HEAD_DIMS = 64  # principal directions the screen computes exactly
SCREEN_FROM = 4096  # fewer rows than this: every pair is computed in full, no screen
DENSE = 0.01  # a tile whose screen passes more than this fraction of pairs is computed in full
GATHER = 2048  # candidate pairs verified per gathered slice (it stays in cache: ~6x faster)
MARGIN = 1e-4  # allowance for float32 rounding in the screen's bound
COMPACT_AT = 4_000_000  # candidate edges held before they are cut to each row's top k
CUT_AT = 4  # a computed tile keeps only rows' best when over CUT_AT * k * (rows + cols) pass
SMALL_SHAPE = 10  # shape elements up to which cosine and shape weigh the same in a score
LARGE_SHAPE = 60  # shape elements from which the shape weighs SHAPE_WEIGHT_MAX
SHAPE_WEIGHT_MAX = 0.9

Index = slice | np.ndarray  # rows of a tile: a contiguous range, or chosen rows (seeded search)


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


def duplicate_edges(
    matrix: np.ndarray,
    shapes: Shapes,
    *,
    top_k: int,
    min_score: float,
    queries: np.ndarray | None = None,
    nesting: Nesting | None = None,
) -> Edges:
    """For each query row, its top_k partners by duplicate score, with score >= min_score.

    A row without a shape never pairs; drop such rows beforehand (as search.find_duplicates
    does) so that they take no place in another row's top k of the cosine pass.
    """
    n = matrix.shape[0]
    if n < 2 or top_k <= 0:
        return Edges.empty()
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    # a pair whose shape band_pairs may miss (J < FOUND_FROM) needs cosine >= this to score min_score
    floor = max(min_score, 2 * min_score - shape.FOUND_FROM)
    by_cosine = neighbour_edges(matrix, top_k=top_k, min_score=floor, queries=queries, nesting=nesting,
                                shaped_at=min_score)
    # each part scored as it comes and cut to min_score: the candidates are never held together
    parts = [_scored(matrix, shapes, by_cosine.i, by_cosine.j, min_score)]
    asked = None if queries is None else np.isin(np.arange(n), queries)
    for a, b in shape.band_pairs(shapes.sigs, np.flatnonzero(shapes.known), window=2 * top_k):
        if nesting is not None and len(a):
            apart = ~nesting.excluded(a, b)
            a, b = a[apart], b[apart]
        found = _scored(matrix, shapes, a, b, min_score)  # the score is symmetric: both ways below
        parts += [found if asked is None else found.where(asked[found.i]),
                  Edges(found.j, found.i, found.s) if asked is None else Edges(found.j, found.i, found.s).where(
                      asked[found.j])]
    edges = Edges.concat(parts)
    _, first = np.unique(edges.i * n + edges.j, return_index=True)  # a cosine neighbour may share a band too
    return _keep_top_k(edges.where(first), top_k)


def _scored(matrix: np.ndarray, shapes: Shapes, i: np.ndarray, j: np.ndarray, min_score: float) -> Edges:
    """The pairs (i, j) of two shaped rows whose duplicate score reaches min_score, with it."""
    both = shapes.known[i] & shapes.known[j]
    i, j = i[both], j[both]
    score = duplicate_score(_dots(matrix, i, j), shape.similarity(shapes.sigs, i, j),
                            np.minimum(shapes.sizes[i], shapes.sizes[j]))
    keep = score >= min_score
    return Edges(i[keep], j[keep], score[keep].astype(np.float32))


def shape_weight(sizes: np.ndarray) -> np.ndarray:
    """The shape similarity's weight in a pair's score, by the smaller shape's element count:
    half for a small shape, which boilerplate shares by chance, rising to SHAPE_WEIGHT_MAX for a
    shape of LARGE_SHAPE elements or more, which only a copy shares."""
    grown = np.log(np.maximum(sizes, SMALL_SHAPE) / SMALL_SHAPE) / np.log(LARGE_SHAPE / SMALL_SHAPE)
    return 0.5 + (SHAPE_WEIGHT_MAX - 0.5) * np.clip(grown, 0.0, 1.0)


def duplicate_score(cosine: np.ndarray, similarity: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The duplicate score of pairs: their shape similarity and cosine, weighted by shape_weight."""
    weight = shape_weight(np.asarray(sizes, dtype=np.float64))
    return (weight * similarity + (1.0 - weight) * cosine).astype(np.float32)


def neighbour_edges(
    matrix: np.ndarray,
    *,
    top_k: int,
    min_score: float,
    queries: np.ndarray | None = None,
    nesting: Nesting | None = None,
    shaped_at: float | None = None,
) -> Edges:
    """For each query row, its top_k neighbours (itself excluded) with score >= min_score.

    `queries` (row indices) limits the rows that look for neighbours (seeded search); by
    default every row does. Pairs `nesting` excludes are dropped before the top k are chosen.
    From candidates.BUCKETED_FROM rows an unseeded search buckets the rows instead of visiting
    every pair (sai/duplicates/candidates.py); `shaped_at` is the duplicate score it serves.
    """
    from sai.duplicates import candidates  # it builds on this module

    n = matrix.shape[0]
    if n < 2 or top_k <= 0:
        return Edges.empty()
    if queries is None and n >= candidates.BUCKETED_FROM:
        return candidates.bucketed_edges(np.ascontiguousarray(matrix, dtype=np.float32), top_k=top_k,
                                         min_score=float(min_score), nesting=nesting, shaped_at=shaped_at)
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    screen = _screen(matrix) if n >= SCREEN_FROM and matrix.shape[1] > 2 * HEAD_DIMS else None
    kept = _TopK(top_k, limit=max(COMPACT_AT, 2 * n * top_k))
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
        s = _dots(matrix, ri[r], ci[c])
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


def _dots(matrix: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
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


class _TopK:
    """Candidate edges, cut to each source row's k best whenever more than `limit` pile up.

    With `distinct_in` (the row count), a pair added more than once (found in several rounds of
    sai/duplicates/candidates.py) is kept once."""

    def __init__(self, k: int, *, limit: int, distinct_in: int | None = None) -> None:
        self.k, self.limit, self.distinct_in = k, limit, distinct_in
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
        if self.distinct_in is not None:
            _, first = np.unique(edges.i * self.distinct_in + edges.j, return_index=True)
            edges = edges.where(first)
        return _keep_top_k(edges, self.k)


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
