"""Hybrid ranking: reciprocal rank fusion of the semantic and lexical lists, plus cheap signals.

Each signal here earned its place on benchmarks/quality.py (tuned on `--split tune`, kept only
when it did not hurt on `--split heldout`; figures below are MRR@10 tune / heldout). Signals are
counted in units of a first place in one list, 1 / (RRF_K + 1), so RRF_K keeps their balance.
Tried and dropped: list weights (0.8-1.25: no gain); at most N hits per file (N 3: R@10 0.77 ->
0.61 on tune, since a target shares its file with most of its confusers); a cosine-gap term
(+0.015 / -0.002).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sai.models import ChunkRow, Signals
from sai.text.lexical import identifiers, split_identifier, tokens, word_stem

# A small k trusts the top of each list: 0.510 / 0.526 at k 5, 0.497 / 0.517 at 20, 0.482 / 0.494 at 60.
RRF_K = 5
FIRST_PLACE = 1.0 / (RRF_K + 1)
# For the first chunk of a symbol the query names: a bare identifier gets its definition first
# (100/100 names on both splits; 89 / 87 without the boost). Costs docstring queries 0.003.
NAME_QUERY_BOOST = 2.0 * FIRST_PLACE
DEFINITION_BOOST = 0.5 * FIRST_PLACE  # an identifier named inside a longer query
# Times the share of the symbol's name words the query holds: 0.487 / 0.484 without it.
NAME_MATCH = 0.5 * FIRST_PLACE
TEST_PENALTY = 0.5  # tests and examples rank lower unless the query asks: 0.509 / 0.523 without
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
    rrf: float = 0.0  # the reciprocal-rank part of `fused`, before the signals
    signals: Signals | None = None  # what the signals added (set by fuse)


@dataclass(frozen=True)
class _Query:
    """What the signals need to know about a query, worked out once."""

    names: frozenset[str]  # identifiers it names (lower case, last dotted part)
    bare: bool  # the whole query is one identifier
    stems: frozenset[str]  # stems of its words and identifier parts
    wants_tests: bool


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
    facts = _facts(query)
    defining = _first_chunks(candidates)
    scored = [_scored(c, facts, c.row.id in defining) for c in candidates]
    return sorted(scored, key=lambda c: (-c.fused, c.row.path, c.row.start_line, c.row.id))


def _scored(c: Candidate, q: _Query, defining: bool) -> Candidate:
    rrf = sum(1.0 / (RRF_K + rank) for rank in (c.semantic_rank, c.lexical_rank) if rank is not None)
    signals = _signals(c, q, defining)
    fused = (rrf + signals.name_match + signals.definition) * signals.test_penalty
    return replace(c, fused=fused, rrf=rrf, signals=signals)


def _signals(c: Candidate, q: _Query, defining: bool) -> Signals:
    """What each signal adds to a candidate's reciprocal-rank score (the penalty as a factor)."""
    name = c.row.symbol.rsplit(".", 1)[-1] if c.row.symbol else ""
    definition = 0.0
    if defining and name.lower() in q.names:
        definition = NAME_QUERY_BOOST if q.bare else DEFINITION_BOOST
    penalty = TEST_PENALTY if not q.wants_tests and _TESTISH.search(c.row.path) else 1.0
    return Signals(name_match=NAME_MATCH * _name_match(name, q.stems), definition=definition,
                   test_penalty=penalty)


def _facts(query: str) -> _Query:
    words = query.split()
    bare = len(words) == 1
    names = {words[0].split(".")[-1].lower().strip("()")} if bare else identifiers(query)
    found = tokens(query)
    return _Query(
        names=frozenset(names),
        bare=bare,
        stems=frozenset(word_stem(t) for t in found),
        wants_tests=any(t.startswith(("test", "spec", "example")) for t in found),
    )


def _first_chunks(candidates: list[Candidate]) -> set[int]:
    """Ids of the first chunk (lowest start line) of each (path, symbol): where it is defined."""
    first: dict[tuple[str, str | None], Candidate] = {}
    for c in candidates:
        key = (c.row.path, c.row.symbol)
        if key not in first or c.row.start_line < first[key].row.start_line:
            first[key] = c
    return {c.row.id for c in first.values()}


def _name_match(name: str, stems: frozenset[str]) -> float:
    """Share of a symbol's name words (stemmed) that the query holds: `readFloatLE` vs "reads a float"."""
    words = [w for w in split_identifier(name) if len(w) > 1]
    return sum(word_stem(w) in stems for w in words) / len(words) if words else 0.0
