"""The near-duplicates of a few given chunks among every stored one: what `sai impact` reports as
the copies a change left behind. The score is the duplicate score of sai/duplicates/score.py
(cosine and token shape), and so is the candidate rule, made exact for one target at a time:
a pair reaching min_score has cosine >= edges.cosine_floor(min_score) or shape similarity >=
2 * min_score - that floor. So a target's candidates are its CANDIDATES nearest chunks by
cosine above the floor (the store finds them by a bound on sign bits that misses one such chunk
in a billion: docs/design.md, "References (`sai refs`, `callers`, `callees`, `impact`)") and every
chunk of a shape that alike (compared with every stored signature, store/shapes.py); only the chunks
that reach min_score are read, best first, until
`limit` pass `keep`. Nothing reads every chunk's row: at 100,000 chunks a one-unit change costs
milliseconds where reading them all cost 0.6 s.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sai.duplicates.edges import cosine_floor
from sai.duplicates.score import duplicate_score
from sai.models import ChunkRow, Copy
from sai.store import IndexReader
from sai.store.shapes import ShapeTable

# Nearest chunks by cosine a target's copies are looked for among (beside every chunk of a shape
# alike, which are all looked at): past them, a copy the shape does not find ranks below the
# ones found, and only a few are shown.
CANDIDATES = 100


def near_copies(
    reader: IndexReader, targets: list[ChunkRow], *, keep: Callable[[ChunkRow], bool], min_score: float, limit: int,
) -> dict[int, list[Copy]]:
    """Target row id -> its best copies (score >= min_score, at most `limit`) among the chunks
    `keep` admits, best first; a target without a vector or shape has none."""
    if not targets:
        return {}
    shapes = reader.shapes()
    vectors = reader.vectors([row.id for row in targets])
    sigs, sizes = shapes.of(np.array([row.id for row in targets], np.int64))
    wanted = [k for k, row in enumerate(targets) if row.id in vectors and sizes[k]]
    if not wanted:
        return {}
    ids = [targets[k].id for k in wanted]
    floor = cosine_floor(min_score)
    nearest = reader.nearest_each(np.vstack([vectors[i] for i in ids]), CANDIDATES, exclude=ids, floor=floor)
    out: dict[int, list[Copy]] = {}
    for k, near in zip(wanted, nearest, strict=True):
        target = targets[k]
        found, scores = _scored(reader, shapes, target.id, vectors[target.id], sigs[k], int(sizes[k]),
                                near, min_score)
        out[target.id] = _kept(reader, found, scores, keep, limit)
    return out


def _scored(reader: IndexReader, shapes: ShapeTable, at: int, vector: np.ndarray, sig: np.ndarray, size: int,
            near: list[tuple[int, float]], min_score: float) -> tuple[np.ndarray, np.ndarray]:
    """The ids of the chunks whose duplicate score with the target reaches min_score, with it,
    among its `near` neighbours by cosine and the chunks of a shape alike."""
    alike, _ = shapes.alike(sig, 2 * min_score - cosine_floor(min_score))
    ids = np.union1d(np.array([i for i, _ in near], np.int64), alike[alike != at])
    if not len(ids):
        return ids, np.zeros(0, np.float32)
    cosine = dict(near)
    missing = [int(i) for i in ids if int(i) not in cosine]
    cosine.update((i, float(v @ vector)) for i, v in reader.vectors(missing).items())
    has_vector = np.array([int(i) in cosine for i in ids], dtype=np.bool_)
    ids = ids[has_vector]
    sigs, sizes = shapes.of(ids)
    shaped = sizes > 0
    ids, sigs, sizes = ids[shaped], sigs[shaped], sizes[shaped]
    score = duplicate_score(np.array([cosine[int(i)] for i in ids], np.float64), (sigs == sig).mean(axis=1),
                            np.minimum(sizes, size))
    passing = score >= min_score
    return ids[passing], score[passing]


def _kept(reader: IndexReader, ids: np.ndarray, scores: np.ndarray, keep: Callable[[ChunkRow], bool],
          limit: int) -> list[Copy]:
    """The best `limit` of these chunks that `keep` admits, best first, reading their rows a few
    at a time in score order (equal scores by id; those shown, by path and line)."""
    order = np.lexsort((ids, -scores))
    found: list[tuple[float, ChunkRow]] = []
    step = max(4 * limit, 16)
    for start in range(0, len(order), step):
        batch = order[start:start + step]
        score_of = dict(zip(ids[batch].tolist(), scores[batch].tolist(), strict=True))
        found += [(score_of[row.id], row) for row in reader.chunks(ids[batch].tolist(), text=False) if keep(row)]
        if len(found) >= limit:
            break
    found.sort(key=lambda pair: (-pair[0], pair[1].path, pair[1].start_line, pair[1].end_line))
    return [_copy(row, score) for score, row in found[:limit]]


def _copy(row: ChunkRow, score: float) -> Copy:
    return Copy(symbol=row.symbol, path=row.path, start_line=row.start_line, end_line=row.end_line,
                chunk_id=row.chunk_id, score=score)
