"""The near-duplicates of a few given chunks among every stored one: what `sai impact` reports as
the copies a change left behind. The score is the duplicate score of sai/duplicates/score.py
(cosine and token shape), each target against every chunk in one matrix product."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sai.duplicates.score import duplicate_score
from sai.models import ChunkRow, Copy
from sai.store import IndexReader
from sai.text import shape


def near_copies(
    reader: IndexReader, targets: list[ChunkRow], *, keep: Callable[[ChunkRow], bool], min_score: float, limit: int,
) -> dict[int, list[Copy]]:
    """Target row id -> its best copies (score >= min_score, at most `limit`) among the chunks
    `keep` admits, best first; a target without a vector or shape has none."""
    rows, matrix, blobs = reader.all_chunks()
    if not rows or not targets:
        return {}
    position = {row.id: index for index, row in enumerate(rows)}
    sigs, sizes, known = shape.signatures(blobs)
    admitted = np.flatnonzero(np.array([keep(row) for row in rows], dtype=np.bool_) & known)
    vectors = matrix[admitted]  # gathered once: a diff after a merge has hundreds of targets
    out: dict[int, list[Copy]] = {}
    for target in targets:
        at = position.get(target.id)
        if at is None or not known[at]:
            continue
        others = admitted != at
        candidates = admitted[others]
        cosine = (vectors @ matrix[at])[others]
        similarity = shape.similarity(sigs, np.full(len(candidates), at), candidates)
        score = duplicate_score(cosine, similarity, np.minimum(sizes[candidates], sizes[at]))
        passing = np.flatnonzero(score >= min_score)
        best = passing[np.argsort(-score[passing], kind="stable")[:limit]]
        out[target.id] = [_copy(rows[candidates[i]], float(score[i])) for i in best]
    return out


def _copy(row: ChunkRow, score: float) -> Copy:
    return Copy(symbol=row.symbol, path=row.path, start_line=row.start_line, end_line=row.end_line,
                chunk_id=row.chunk_id, score=score)
