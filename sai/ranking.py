"""Hybrid ranking: reciprocal rank fusion of the semantic and lexical lists, plus cheap signals.

Each signal here earned its place on benchmarks/quality.py (docs/design.md has the figures).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sai.lexical import identifiers, tokens
from sai.store.tables import ChunkRow

RRF_K = 60
DEFINITION_BOOST = 1.0 / (RRF_K + 1)  # as much as a first place in one more list
TEST_PENALTY = 0.5  # tests and examples rank lower unless the query asks for them
_TESTISH = re.compile(
    r"(^|/)(tests?|testing|spec|examples?|__tests__)(/|$)"
    r"|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(spec|test)\.[a-z]+$"
)


@dataclass(frozen=True)
class Candidate:
    row: ChunkRow
    cosine: float | None = None
    bm25: float | None = None
    semantic_rank: int | None = None  # 1-based
    lexical_rank: int | None = None
    fused: float = 0.0


def merge(semantic: list[ChunkRow], lexical: list[tuple[ChunkRow, float]]) -> list[Candidate]:
    """One candidate per chunk with its rank in each list that holds it."""
    found: dict[int, Candidate] = {}
    for rank, row in enumerate(semantic, start=1):
        found[row.id] = Candidate(row=row, cosine=row.score, semantic_rank=rank)
    for rank, (row, score) in enumerate(lexical, start=1):
        base = found.get(row.id, Candidate(row=row))
        found[row.id] = replace(base, bm25=score, lexical_rank=rank)
    return list(found.values())


def fuse(candidates: list[Candidate], query: str) -> list[Candidate]:
    """Candidates ordered by fused score (ties broken by path and line: deterministic)."""
    names = _query_names(query)
    wants_tests = any(t.startswith(("test", "spec", "example")) for t in tokens(query))
    scored = [replace(c, fused=_fused(c, names, wants_tests)) for c in candidates]
    return sorted(scored, key=lambda c: (-c.fused, c.row.path, c.row.start_line, c.row.id))


def _fused(c: Candidate, names: set[str], wants_tests: bool) -> float:
    score = 0.0
    for rank in (c.semantic_rank, c.lexical_rank):
        if rank is not None:
            score += 1.0 / (RRF_K + rank)
    if names and c.row.symbol and c.row.symbol.rsplit(".", 1)[-1].lower() in names:
        score += DEFINITION_BOOST
    if not wants_tests and _TESTISH.search(c.row.path):
        score *= TEST_PENALTY
    return score


def _query_names(query: str) -> set[str]:
    """Identifiers the query names; a one-word query is taken as a name."""
    words = query.split()
    if len(words) == 1:
        return {words[0].split(".")[-1].lower().strip("()")}
    return identifiers(query)
