"""Cosine neighbours without all pairs: random-hyperplane (SimHash) buckets, verified exactly.

Above BUCKETED_FROM rows the exact pass of sai/duplicates/exact.py, whose work grows with n^2,
gives way to this one (the choice: sai/duplicates/score.py). Each of `tables` rounds draws
`bits` random Gaussian hyperplanes and puts every row in the bucket of its sign pattern; within
each bucket every pair is computed exactly (a bucket of about BUCKET_ROWS rows is one matrix
product; a larger one, a tight group of near-copies, goes through the exact tiled pass; a
bucket of ~1,000 rows keeps BLAS's threads busy, where products of ~200 rows spent more time
waiting for them on a loaded machine than computing), so every edge reported carries its true
cosine and only recall can be lost. Two rows at angle t fall on the same side of one
random hyperplane with probability 1 - t/pi, so they share a bucket in one round with
probability p^bits and are missed by all rounds with probability (1 - p^bits)^tables.

`bits` is set from the row count so that a bucket holds about BUCKET_ROWS rows (the work is
then ~ n * BUCKET_ROWS per round, not n^2), and `tables` from the threshold:

- for plain cosine, enough rounds to catch a pair at the threshold with probability RECALL;
- for the duplicate score, the cosine side is not alone: a pair with shape similarity J is also
  a candidate through shape.band_pairs unless its bands all differ, (1 - J^4)^16. A pair scoring
  min_score needs cosine >= 2 * min_score - J when J < min_score (the shape weighs at least half,
  sai/duplicates/score.py), so the rounds are enough when, for every J, missing it on both
  sides, (1 - J^4)^16 * (1 - p(c)^bits)^tables at that cosine c, stays within 1 - RECALL.
  At min_score 0.75 and 1M rows (10 bits) that is 11 rounds, where cosine alone at 0.8 takes 44.
"""

from __future__ import annotations

import math

import numpy as np

from sai.duplicates.edges import Edges, Nesting, TopK, cosine_floor, keep_top_k
from sai.duplicates.exact import TILE, exact_edges
from sai.text import shape

BUCKETED_FROM = 200_000  # rows from which buckets replace the exact pass (measured: docs/design.md)
BUCKET_ROWS = 1024  # rows a bucket holds on average: products large enough for BLAS threads
RECALL = 0.99  # chance of catching a pair at the threshold
MAX_TABLES = 256  # rounds at most (a low threshold would need thousands): recall falls instead
SEED = 20_260_401  # fixed hyperplanes: the same answer every run
_HASH_ROWS = 65_536  # rows hashed per step (bounds the projection's memory)


def hash_bits(rows: int) -> int:
    """Hyperplanes per round: about BUCKET_ROWS rows to a bucket."""
    return max(1, min(63, round(math.log2(max(rows, 2) / BUCKET_ROWS))))


def caught(cosine: float, *, bits: int, tables: int) -> float:
    """The chance that two rows at this cosine share a bucket in at least one round."""
    same_side = 1.0 - math.acos(max(-1.0, min(1.0, cosine))) / math.pi
    return 1.0 - (1.0 - same_side ** bits) ** tables


def tables_needed(min_score: float, *, bits: int, shaped: bool) -> int:
    """Rounds that catch a pair at the threshold with probability RECALL (see the module doc);
    `shaped`: min_score is a duplicate score, whose shape side finds pairs too."""
    miss = 1.0 - RECALL
    if not shaped:
        return _rounds(min_score, bits, miss)
    floor = cosine_floor(min_score)
    needed = 1
    for similarity in np.linspace(0.0, 1.0, 201):
        cosine = max(floor, 2 * min_score - similarity) if similarity < min_score else floor
        shape_miss = (1.0 - similarity ** shape.BAND_ROWS) ** shape.BANDS
        if cosine <= 1.0 and shape_miss > miss:
            needed = max(needed, _rounds(cosine, bits, miss / shape_miss))
    return needed


def _rounds(cosine: float, bits: int, miss: float) -> int:
    one = caught(cosine, bits=bits, tables=1)
    if one >= 1.0:
        return 1
    if one <= 0.0:
        return MAX_TABLES
    return max(1, min(MAX_TABLES, math.ceil(math.log(miss) / math.log(1.0 - one))))


def bucketed_edges(
    matrix: np.ndarray, *, top_k: int, min_score: float, nesting: Nesting | None = None,
    shaped_at: float | None = None,
) -> Edges:
    """For each row, its top_k neighbours (itself excluded) with cosine >= min_score among the
    rows it shares a bucket with; `shaped_at`: the duplicate score this cosine pass serves."""
    n, dim = matrix.shape
    bits = hash_bits(n)
    tables = tables_needed(min_score if shaped_at is None else shaped_at, bits=bits, shaped=shaped_at is not None)
    kept = TopK(top_k, rows=n, distinct=True)
    for table in range(tables):
        planes = np.random.default_rng(SEED + table).standard_normal((dim, bits)).astype(np.float32)
        for rows in _buckets(_keys(matrix, planes)):
            kept.add(_bucket_edges(matrix, rows, min_score, top_k=top_k, nesting=nesting))
    return kept.result()


def _keys(matrix: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """Each row's sign pattern against the hyperplanes, as one integer."""
    weights = np.left_shift(np.uint64(1), np.arange(planes.shape[1], dtype=np.uint64))
    keys = np.empty(len(matrix), dtype=np.uint64)
    for a in range(0, len(matrix), _HASH_ROWS):
        signs = (matrix[a:a + _HASH_ROWS] @ planes) > 0
        keys[a:a + _HASH_ROWS] = signs.astype(np.uint64) @ weights
    return keys


def _buckets(keys: np.ndarray) -> list[np.ndarray]:
    """The rows of each bucket holding two or more, each in row order."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    return [order[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True) if b - a > 1]


def _bucket_edges(
    matrix: np.ndarray, rows: np.ndarray, min_score: float, *, top_k: int, nesting: Nesting | None
) -> Edges:
    """Every pair of the bucket at cosine >= min_score, cut to each row's top_k."""
    sub = None if nesting is None else nesting.take(rows)
    if len(rows) > TILE:  # a tight group: the exact tiled pass keeps its memory to a tile
        edges = exact_edges(matrix[rows], top_k=top_k, min_score=min_score, nesting=sub)
        return Edges(rows[edges.i], rows[edges.j], edges.s)
    vectors = matrix[rows]
    block = vectors @ vectors.T
    np.fill_diagonal(block, -np.inf)
    r, c = np.divmod(np.flatnonzero(block >= min_score), len(rows))
    if sub is not None and len(r):
        keep = ~sub.excluded(r, c)
        r, c = r[keep], c[keep]
    edges = Edges(rows[r], rows[c], block[r, c])
    return keep_top_k(edges, top_k) if len(edges) > top_k * len(rows) else edges
