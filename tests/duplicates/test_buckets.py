"""The bucketed cosine pass (sai/duplicates/buckets.py): what it finds, that every edge it
reports is exact, the rounds its threshold needs, and where it takes over from the exact pass."""

from __future__ import annotations

import numpy as np
import pytest

from sai.duplicates import buckets
from sai.duplicates import score as duplicates
from sai.duplicates.edges import Edges, Nesting, Shapes
from sai.text import shape


def _pairs(edges: Edges) -> set[tuple[int, int]]:
    return set(zip(edges.i.tolist(), edges.j.tolist(), strict=True))


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _planted(n: int, dim: int, pairs: int, cosine: float, seed: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """n random unit vectors, the first 2 * pairs of them in pairs at about this cosine."""
    rng = np.random.default_rng(seed)
    matrix = _unit(rng.standard_normal((n, dim)))
    noise = _unit(rng.standard_normal((pairs, dim)))
    sine = np.sqrt(1 - cosine**2)
    for k in range(pairs):  # a twin: cosine * original + sine * a direction orthogonal to it
        away = noise[k] - (noise[k] @ matrix[2 * k]) * matrix[2 * k]
        matrix[2 * k + 1] = cosine * matrix[2 * k] + sine * away / np.linalg.norm(away)
    return _unit(matrix), [(2 * k, 2 * k + 1) for k in range(pairs)]


def test_bucketed_pass_finds_planted_near_duplicates_among_many_random_vectors():
    matrix, planted = _planted(12_000, 64, pairs=300, cosine=0.9, seed=5)
    # rows 600 and 601 are a planted pair in one file, one holding the other: never a pair
    files, starts, ends = [f"f{i}.py" for i in range(len(matrix))], [1] * len(matrix), [9] * len(matrix)
    files[601], starts[601], ends[601] = files[600], 2, 5
    nesting = Nesting.of(files, starts, ends)
    extra, _ = _planted(2, 64, pairs=1, cosine=0.9, seed=9)
    matrix[600:602] = extra
    edges = buckets.bucketed_edges(matrix, top_k=5, min_score=0.8, nesting=nesting)
    found = _pairs(edges)
    assert all((a, b) in found and (b, a) in found for a, b in planted)
    assert (600, 601) not in found and (601, 600) not in found
    # every edge is exact: its true cosine, at the threshold or above (random 64-d pairs are far below)
    exact = np.einsum("ij,ij->i", matrix[edges.i], matrix[edges.j])
    np.testing.assert_allclose(edges.s, exact, atol=1e-5)
    assert (edges.s >= 0.8).all() and not (edges.i == edges.j).any()
    assert len(found) == len(edges) == 2 * len(planted)


def test_bucketed_pass_agrees_with_the_exact_one_on_clustered_vectors(monkeypatch):
    # groups of near-copies, a bucket of identical rows larger than a tile, and top_k cuts
    monkeypatch.setattr(buckets, "TILE", 256)
    rng = np.random.default_rng(11)
    centres = _unit(rng.standard_normal((200, 32)))
    matrix = _unit(np.repeat(centres, 10, axis=0) + 0.05 * rng.standard_normal((2000, 32)))
    matrix = np.vstack([matrix, np.repeat(matrix[:1], 300, axis=0)])
    exact = duplicates.neighbour_edges(matrix, top_k=4, min_score=0.9)
    got = buckets.bucketed_edges(matrix, top_k=4, min_score=0.9)
    want = _pairs(exact)
    have = _pairs(got)
    assert len(have) == len(got)  # a pair found in several rounds is held once
    # a row's top 4 among tied neighbours (301 identical rows) is any 4 of them: an edge agrees
    # when it is as close as the exact pass's 4th for its row (numpy's partition orders ties
    # differently across versions and CPUs)
    fourth: dict[int, float] = {}
    for i, score in zip(exact.i.tolist(), exact.s.tolist(), strict=True):
        fourth[i] = min(fourth.get(i, 1.0), score)
    agreeing = sum(score >= fourth.get(i, 2.0) - 1e-5 for i, score in zip(got.i.tolist(), got.s.tolist(), strict=True))
    assert len(want) > 4_000 and agreeing >= 0.99 * len(want)
    assert agreeing <= len(want)
    np.testing.assert_allclose(got.s, np.einsum("ij,ij->i", matrix[got.i], matrix[got.j]), atol=1e-5)
    assert (got.s >= 0.9).all()


def test_rounds_follow_the_threshold_and_catch_a_pair_at_it_with_the_chance_asked():
    bits = buckets.hash_bits(1_000_000)
    assert bits == 10 and buckets.hash_bits(100_000) == 7  # about BUCKET_ROWS rows a bucket
    plain = buckets.tables_needed(0.8, bits=bits, shaped=False)
    assert buckets.caught(0.8, bits=bits, tables=plain) >= buckets.RECALL
    assert buckets.caught(0.8, bits=bits, tables=plain - 1) < buckets.RECALL
    assert buckets.tables_needed(0.9, bits=bits, shaped=False) < plain  # a higher cosine: fewer rounds
    shaped = buckets.tables_needed(0.75, bits=bits, shaped=True)
    assert shaped < plain
    # with the shape bands beside it, a pair scoring 0.75 is missed by both sides at most 1% of the time
    for similarity in np.linspace(0, 0.75, 76):
        cosine = max(0.8, 1.5 - similarity)
        if cosine <= 1:
            shape_miss = (1 - similarity**shape.BAND_ROWS) ** shape.BANDS
            cosine_miss = 1 - buckets.caught(cosine, bits=bits, tables=shaped)
            assert shape_miss * cosine_miss <= 1 - buckets.RECALL + 1e-9


def test_switch_over_to_buckets_honours_the_row_count(monkeypatch):
    # every pair at cosine >= 0 is an edge: the bucketed pass misses some of them, so the two differ
    rng = np.random.default_rng(2)
    matrix = _unit(rng.standard_normal((601, 8)))
    exact = duplicates.neighbour_edges(matrix, top_k=600, min_score=0.0)
    bucketed = buckets.bucketed_edges(matrix, top_k=600, min_score=0.0)
    assert _pairs(exact) != _pairs(bucketed)
    monkeypatch.setattr(buckets, "BUCKETED_FROM", 601)
    at = duplicates.neighbour_edges(matrix, top_k=600, min_score=0.0)
    below = duplicates.neighbour_edges(matrix[:600], top_k=600, min_score=0.0)
    seeded = duplicates.neighbour_edges(matrix, top_k=600, min_score=0.0, queries=np.arange(601))
    assert all(np.array_equal(getattr(at, f), getattr(bucketed, f)) for f in ("i", "j", "s"))
    want = duplicates.neighbour_edges(matrix[:600], top_k=600, min_score=0.0, queries=np.arange(600))
    for got, expected in ((seeded, exact), (below, want)):  # a seeded search stays exact at any size
        assert _pairs(got) == _pairs(expected)


@pytest.mark.parametrize("min_score", [0.55, 0.75])
def test_duplicate_edges_through_buckets_find_shape_and_cosine_copies(monkeypatch, min_score):
    rng = np.random.default_rng(7)
    n, dim = 3000, 48
    matrix = _unit(rng.standard_normal((n, dim)))
    sigs = rng.integers(0, 2**32, size=(n, shape.SIGNATURE_SIZE), dtype=np.uint64).astype(np.uint32)
    sizes = np.full(n, 100, np.uint32)
    for a in range(0, 300, 3):
        sigs[a + 1] = sigs[a]  # the same large shape, unrelated vectors: the shape bands find it
        # a close vector and a small shape 5/8 alike: found by either side
        matrix[a + 2] = 0.97 * matrix[a] + 0.243 * matrix[a + 2]
        sigs[a + 2, :40], sizes[a + 2] = sigs[a, :40], 10
    matrix = _unit(matrix)
    shapes = Shapes(sigs, sizes, np.ones(n, bool))
    exact = duplicates.duplicate_edges(matrix, shapes, top_k=3, min_score=min_score)
    monkeypatch.setattr(buckets, "BUCKETED_FROM", 2)
    got = duplicates.duplicate_edges(matrix, shapes, top_k=3, min_score=min_score)
    want = _pairs(exact)
    have = _pairs(got)
    planted = {(a, a + 1) for a in range(0, 300, 3)} | {(a, a + 2) for a in range(0, 300, 3)}
    assert planted <= want and planted <= have
    assert len(want & have) >= 0.99 * len(want) and (got.s >= min_score).all()
