"""The duplicate score of a pair, the duplicate edges it makes, and the cosine pass they use.

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
found by cosine (neighbour_edges), so the cosine pass runs at that floor.

The cosine pass is exact (sai/duplicates/exact.py) below buckets.BUCKETED_FROM rows or when
seeded; an unseeded pass from there buckets the rows by random hyperplanes and verifies each
bucket's pairs exactly (sai/duplicates/buckets.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sai.duplicates import buckets
from sai.duplicates.edges import Edges, Nesting, Shapes, cosine_floor, keep_top_k
from sai.duplicates.exact import dots, exact_edges
from sai.text import shape

SMALL_SHAPE = 10  # shape elements up to which cosine and shape weigh the same in a score
LARGE_SHAPE = 60  # shape elements from which the shape weighs SHAPE_WEIGHT_MAX
SHAPE_WEIGHT_MAX = 0.9


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


def duplicate_edges(
    matrix: np.ndarray,
    shapes: Shapes,
    *,
    top_k: int,
    min_score: float,
    queries: np.ndarray | None = None,
    nesting: Nesting | None = None,
    semantic: bool = False,
) -> Edges:
    """For each query row, its top_k partners by duplicate score (`semantic`: by semantic score,
    sai/text/shape.py semantic_score, or duplicate score where higher), with score >= min_score.

    A row without a shape never pairs; drop such rows beforehand (as search.find_duplicates
    does) so that they take no place in another row's top k of the cosine pass.
    """
    n = matrix.shape[0]
    if n < 2 or top_k <= 0:
        return Edges.empty()
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    if semantic:  # a plain cosine pass at the lower of the two scores' floors
        floor = min(semantic_floor(min_score), cosine_floor(min_score))
        by_cosine = neighbour_edges(matrix, top_k=top_k, min_score=floor, queries=queries, nesting=nesting)
    else:
        by_cosine = neighbour_edges(matrix, top_k=top_k, min_score=cosine_floor(min_score), queries=queries,
                                    nesting=nesting, shaped_at=min_score)
    scoring = _semantic if semantic else duplicate_score
    # each part scored as it comes and cut to min_score: the candidates are never held together
    parts = [_scored(matrix, shapes, by_cosine.i, by_cosine.j, min_score, scoring)]
    asked = None if queries is None else np.isin(np.arange(n), queries)
    for a, b in shape.band_pairs(shapes.sigs, np.flatnonzero(shapes.known), window=2 * top_k):
        if nesting is not None and len(a):
            apart = ~nesting.excluded(a, b)
            a, b = a[apart], b[apart]
        found = _scored(matrix, shapes, a, b, min_score, scoring)  # the score is symmetric: both ways below
        back = Edges(found.j, found.i, found.s)
        parts += [found, back] if asked is None else [found.where(asked[found.i]), back.where(asked[back.i])]
    edges = Edges.concat(parts)
    _, first = np.unique(edges.i * n + edges.j, return_index=True)  # a cosine neighbour may share a band too
    return keep_top_k(edges.where(first), top_k)


def semantic_floor(min_score: float) -> float:
    """The cosine a pair needs to reach a semantic min_score when band_pairs may miss its shape
    (shape similarity below shape.FOUND_FROM)."""
    return (1.0 + shape.SEMANTIC_SHAPE) * min_score - shape.SEMANTIC_SHAPE * shape.FOUND_FROM


def _semantic(cosine: np.ndarray, similarity: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """A pair's semantic score, or its duplicate score where higher: a copy, renamed or not, does
    the same thing too, and the duplicate score says so of a renamed copy more surely."""
    return np.maximum(shape.semantic_score(cosine, similarity), duplicate_score(cosine, similarity, sizes))


def _scored(
    matrix: np.ndarray, shapes: Shapes, i: np.ndarray, j: np.ndarray, min_score: float,
    scoring: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> Edges:
    """The pairs (i, j) of two shaped rows whose score (duplicate or semantic) reaches min_score, with it."""
    both = shapes.known[i] & shapes.known[j]
    i, j = i[both], j[both]
    score = scoring(dots(matrix, i, j), shape.similarity(shapes.sigs, i, j),
                    np.minimum(shapes.sizes[i], shapes.sizes[j]))
    keep = score >= min_score
    return Edges(i[keep], j[keep], score[keep].astype(np.float32))


def neighbour_edges(
    matrix: np.ndarray,
    *,
    top_k: int,
    min_score: float,
    queries: np.ndarray | None = None,
    nesting: Nesting | None = None,
    shaped_at: float | None = None,
) -> Edges:
    """For each query row, its top_k neighbours (itself excluded) with cosine >= min_score.

    `queries` (row indices) limits the rows that look for neighbours (seeded search); by
    default every row does. Pairs `nesting` excludes are dropped before the top k are chosen.
    From buckets.BUCKETED_FROM rows an unseeded search buckets the rows instead of visiting
    every pair; `shaped_at` is the duplicate score it serves.
    """
    n = matrix.shape[0]
    if n < 2 or top_k <= 0:
        return Edges.empty()
    if queries is None and n >= buckets.BUCKETED_FROM:
        return buckets.bucketed_edges(np.ascontiguousarray(matrix, dtype=np.float32), top_k=top_k,
                                      min_score=float(min_score), nesting=nesting, shaped_at=shaped_at)
    return exact_edges(matrix, top_k=top_k, min_score=min_score, queries=queries, nesting=nesting)
