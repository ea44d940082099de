"""Hybrid ranking: reciprocal rank fusion of the semantic and lexical lists, plus the signals of
signals.py, applied by kind: fused = ((rrf + adds) × factors + file) × spread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sai.models import ChunkRow, Signals
from sai.query.ranking.candidate import Candidate, order_key
from sai.query.ranking.facts import facts_of
from sai.query.ranking.signals import RRF_K, SIGNALS, Pool, of_kind

_ADDS, _FACTORS = of_kind("add"), of_kind("factor")
_LIST_LEVEL = (*of_kind("file"), *of_kind("spread"))  # file support first, then the spread over it


def merge(
    semantic: list[ChunkRow], lexical: list[tuple[ChunkRow, float]], defined: Sequence[ChunkRow] = (),
) -> list[Candidate]:
    """One candidate per chunk with its rank in each list that holds it; `defined` chunks (a bare
    name's definitions) join with no rank when neither list holds them."""
    found: dict[int, Candidate] = {}
    for rank, row in enumerate(semantic, start=1):
        found[row.id] = Candidate(row=row, cosine=row.score, semantic_rank=rank)
    for rank, (row, score) in enumerate(lexical, start=1):
        base = found.get(row.id, Candidate(row=row))
        found[row.id] = replace(base, bm25=score, lexical_rank=rank)
    for row in defined:
        found.setdefault(row.id, Candidate(row=row))
    return list(found.values())


def fuse(
    candidates: list[Candidate], query: str, *, semantic_weight: float = 1.0, defining: frozenset[int] = frozenset(),
    vendored: tuple[str, ...] = (), by_file: bool = False,
) -> list[Candidate]:
    """Candidates ordered by fused score (ties broken by path and line: deterministic).

    The file-level signals apply when the query asks for a place, or when the answer is one hit
    per file (`by_file`): its places are files, whatever the query reads like. A one-name query
    is answered by its definitions either way.

    `semantic_weight` scales the semantic list's reciprocal rank: the share of the chunks that
    have a vector while an index run is still embedding (only they can be in that list).
    `defining`: the chunks with a line defining the bare name that no unit defines; `vendored`:
    the index's vendored directories.
    """
    pool = Pool([c.row for c in candidates], facts_of(query), defining, vendored)
    scored = [_scored(c, pool, semantic_weight) for c in candidates]
    if not (pool.facts.wants_place or (by_file and not pool.facts.bare)):
        return sorted(scored, key=order_key)
    for signal in _LIST_LEVEL:
        assert signal.apply is not None
        scored = signal.apply(scored)
    return sorted(scored, key=order_key)


def _scored(c: Candidate, pool: Pool, semantic_weight: float) -> Candidate:
    rrf = (semantic_weight / (RRF_K + c.semantic_rank) if c.semantic_rank is not None else 0.0) \
        + (1.0 / (RRF_K + c.lexical_rank) if c.lexical_rank is not None else 0.0)
    values = {s.name: s.neutral for s in SIGNALS}
    fused = rrf
    for signal in _ADDS:
        assert signal.measure is not None
        values[signal.name] = signal.measure(c.row, pool)
        fused = fused + values[signal.name]
    for signal in _FACTORS:
        assert signal.measure is not None
        values[signal.name] = signal.measure(c.row, pool)
        fused = fused * values[signal.name]
    return replace(c, fused=fused, rrf=rrf, signals=Signals(tuple(values.items())))
