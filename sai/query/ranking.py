"""Hybrid ranking: reciprocal rank fusion of the semantic and lexical lists, plus cheap signals.

Each signal here earned its place on benchmarks/quality.py (tuned on `--split tune`, kept only
when it did not hurt on `--split heldout`; figures below are MRR@10 tune / heldout) or, for the
file-level ones, on benchmarks/repos_quality.py (semble's benchmark, NDCG@10, 10 repositories)
without lowering quality.py. Signals are
counted in units of a first place in one list, 1 / (RRF_K + 1), so RRF_K keeps their balance.
Tried and dropped: list weights (0.8-1.25: no gain); at most N hits per file (N 3: R@10 0.77 ->
0.61 on tune, since a target shares its file with most of its confusers); a cosine-gap term
(+0.015 / -0.002). On repos_quality.py (16 repositories, NDCG@10 0.842): BM25 field weights,
path and symbol tokens counted 2 or 3 times (0.838-0.841); folder words counting less than the
file's own name (0.837-0.847 at 15 repositories); any query word that is a file's whole name
lifting it like an identifier (0.827-0.848).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from sai.models import ChunkRow, Signals
from sai.query import definitions
from sai.query.intent import asks_for_place, starts_with_verb
from sai.text.lexical import identifiers, split_identifier, tokens, word_stem

# A small k trusts the top of each list: 0.510 / 0.526 at k 5, 0.497 / 0.517 at 20, 0.482 / 0.494 at 60.
RRF_K = 5
FIRST_PLACE = 1.0 / (RRF_K + 1)
# For the first chunk of a symbol the query names: a bare identifier gets its definition first
# (100/100 names on both splits; 89 / 87 without the boost). Costs docstring queries 0.003.
# Only the closest definitions get it, the others DEFINITION_BOOST (_closeness): `JsonMapper`
# asks for the class, not its constructor (jackson-databind 0.659 -> 0.688 on
# benchmarks/repos_quality.py), `Session` for the class, not function `session` (symbol queries
# of 12 held-out repositories 0.942 -> 0.962; 0.972 once search.py adds a bare name's definitions).
NAME_QUERY_BOOST = 2.0 * FIRST_PLACE
DEFINITION_BOOST = 0.5 * FIRST_PLACE  # an identifier named inside a longer query
# Times the share of the symbol's name words the query holds: 0.487 / 0.484 without it.
NAME_MATCH = 0.5 * FIRST_PLACE
TEST_PENALTY = 0.5  # tests and examples rank lower unless the query asks: 0.509 / 0.523 without
_TESTISH = re.compile(
    r"(^|/)(tests?|testing|spec|examples?|__tests__)(/|$)"
    r"|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(spec|test)\.[a-z]+$"
)


# File-level evidence, tuned on benchmarks/repos_quality.py (semble's benchmark: NDCG@10 over the
# files of the top 10) and checked on quality.py --split heldout (MRR@10 per function):
# a file whose name or folder the query's words name (`resolver.py` for "DNS resolver"),
PATH_MATCH = 2.0 * FIRST_PLACE  # times the share of the query's words it names (NDCG@10 0.853; 0.823 without)
# (a word's stem may name it too: 16 repositories 0.8406 -> 0.8420, heldout unchanged)
FILE_NAMED = 2.0 * FIRST_PLACE  # a one-identifier query that is the file's name (symbol 0.922 without)
# an identifier inside a longer query that is the file's name ("JsonReader base class and token
# reading API": JsonReader.cs): 13 repositories 0.847 -> 0.853, quality.py tune +0.001
NAMED_INSIDE = 0.5 * FIRST_PLACE
# so do adjacent words run together ("JSON element hierarchy": JsonElement.java): 18 tuning
# repositories 0.8439 -> 0.8456, 12 held out 0.9185 -> 0.9187
# a file many candidates come from (its best chunk gains, times the file's summed score over
# the best file's: "how are routes matched" is answered by the module, not one helper),
FILE_SUPPORT = 2.0 * FIRST_PLACE  # 0.820 without it; times the test penalty (12 held-out
# repositories 0.9106 -> 0.9115: gson's tests otherwise lift themselves by their own number)
# and a file's further chunks after its first (times REPEAT_DECAY each): the top 10 then shows
# ten places to look rather than five slices of two files.
REPEAT_DECAY = 0.5  # 0.842 without it, 0.780 without both
REPEAT_FREE = 1  # chunks of a file before the decay starts
# What a query asks for (sai/intent.py): a question or a short topic asks for a place, and only
# then do FILE_SUPPORT and REPEAT_DECAY apply (a docstring-like query's confusers share its
# file: with them on for every query, quality.py heldout MRR@10 0.526 -> 0.454). A query that
# starts with a verb asks for something that acts: a class, a module's gap chunk or another
# non-callable unit ranks times ACTION_UNIT (tune / heldout 0.500 / 0.520 without it).
ACTION_UNIT = 0.7
_CALLABLE = frozenset({"function", "method", "constructor"})
_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how if in into is it its not of on or "
    "that the their them this to was what when where which who why with".split()
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
    qualified: str  # that identifier as typed, its parts joined by dots (`A::B` -> `A.B`); "" if not bare
    stems: frozenset[str]  # stems of its words and identifier parts
    wants_tests: bool
    wants_place: bool  # a topic or question, not a function's description: file-level signals apply
    action: bool  # it starts with a verb ("Return ...", "Parses ..."): it asks for a callable
    words: frozenset[str]  # its words of 3+ letters that are not stopwords, lower case
    compounds: frozenset[str]  # 2 or 3 adjacent words run together ("json element" -> jsonelement)


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


def fuse(candidates: list[Candidate], query: str, *, semantic_weight: float = 1.0) -> list[Candidate]:
    """Candidates ordered by fused score (ties broken by path and line: deterministic).

    `semantic_weight` scales the semantic list's reciprocal rank: the share of the chunks that
    have a vector while an index run is still embedding (only they can be in that list).

    fused = ((rrf + name_match + definition + path_match) x test_penalty x kind_factor
             + file_support) x repeat,
    where file_support goes to each file's best chunk and repeat is REPEAT_DECAY to the power of
    how many chunks of the same file rank above the candidate (both only when the query asks
    for a place, sai/intent.py).
    """
    facts = _facts(query)
    boosts = _definition_boosts(candidates, facts)
    paths: dict[str, float] = {}  # each file's path signal, worked out once
    if facts.bare:
        closest = {i for i, boost in boosts.items() if boost == NAME_QUERY_BOOST}
        paths = dict.fromkeys(definitions.outranked_files([c.row for c in candidates], closest, set(boosts)), 0.0)
    scored = [_scored(c, facts, boosts.get(c.row.id, 0.0), paths, semantic_weight) for c in candidates]
    if not facts.wants_place:
        return sorted(scored, key=_order_key)
    return _spread(_supported(scored))


def _order_key(c: Candidate) -> tuple:
    return (-c.fused, c.row.path, c.row.start_line, c.row.id)


def _scored(c: Candidate, q: _Query, definition: float, paths: dict[str, float], semantic_weight: float) -> Candidate:
    rrf = (semantic_weight / (RRF_K + c.semantic_rank) if c.semantic_rank is not None else 0.0) \
        + (1.0 / (RRF_K + c.lexical_rank) if c.lexical_rank is not None else 0.0)
    if c.row.path not in paths:
        paths[c.row.path] = _path_signal(c.row.path, q)
    signals = _signals(c, q, definition, paths[c.row.path])
    fused = (rrf + signals.name_match + signals.definition + signals.path_match) * signals.test_penalty \
        * signals.kind_factor
    return replace(c, fused=fused, rrf=rrf, signals=signals)


def _supported(scored: list[Candidate]) -> list[Candidate]:
    """Each file's best candidate gains FILE_SUPPORT times its file's summed score over the best
    file's, times its test penalty."""
    totals: dict[str, float] = {}
    best: dict[str, Candidate] = {}
    for c in scored:
        totals[c.row.path] = totals.get(c.row.path, 0.0) + c.fused
        if c.row.path not in best or _order_key(c) < _order_key(best[c.row.path]):
            best[c.row.path] = c
    top = max(totals.values(), default=0.0)
    if top <= 0.0:
        return scored
    chosen = {c.row.id for c in best.values()}
    out = []
    for c in scored:
        if c.row.id in chosen:
            support = FILE_SUPPORT * totals[c.row.path] / top * c.signals.test_penalty
            c = replace(c, fused=c.fused + support, signals=replace(c.signals, file_support=support))
        out.append(c)
    return out


def _spread(scored: list[Candidate]) -> list[Candidate]:
    """A file's further chunks decay by REPEAT_DECAY each, so other files' best come between them."""
    seen: dict[str, int] = {}
    out = []
    for c in sorted(scored, key=_order_key):
        n = seen.get(c.row.path, 0)
        seen[c.row.path] = n + 1
        if n >= REPEAT_FREE:
            factor = REPEAT_DECAY ** (n - REPEAT_FREE + 1)
            c = replace(c, fused=c.fused * factor, signals=replace(c.signals, repeat=factor))
        out.append(c)
    return sorted(out, key=_order_key)


def _signals(c: Candidate, q: _Query, definition: float, path_match: float) -> Signals:
    """What each signal adds to a candidate's reciprocal-rank score (the penalty as a factor)."""
    name = c.row.symbol.rsplit(".", 1)[-1] if c.row.symbol else ""
    penalty = TEST_PENALTY if not q.wants_tests and _TESTISH.search(c.row.path) else 1.0
    kind = ACTION_UNIT if q.action and c.row.kind not in _CALLABLE else 1.0
    return Signals(name_match=NAME_MATCH * _name_match(name, q.stems), definition=definition,
                   path_match=path_match, test_penalty=penalty, kind_factor=kind)


def bare_name(query: str) -> str | None:
    """A one-word query as a dotted name (`A::B`, `A->B`, `A\\B` -> `A.B`), or None."""
    words = query.split()
    if len(words) != 1:
        return None
    return ".".join(part for part in re.split(r"::|->|\\|\.", words[0].strip("()")) if part) or None


def _facts(query: str) -> _Query:
    words = query.split()
    qualified = bare_name(query) or ""
    bare = len(words) == 1
    names = {qualified.rsplit(".", 1)[-1].lower()} if bare else identifiers(query)
    found = tokens(query)
    plain = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", query)}
    return _Query(
        names=frozenset(names),
        bare=bare,
        qualified=qualified,
        stems=frozenset(word_stem(t) for t in found),
        wants_tests=any(t.startswith(("test", "spec", "example")) for t in found),
        wants_place=not bare and asks_for_place(words),
        action=not bare and starts_with_verb(words),
        words=frozenset() if bare else frozenset(w for w in plain if len(w) > 2 and w not in _STOPWORDS),
        compounds=frozenset() if bare else _compounds(query),
    )


def _path_signal(path: str, q: _Query) -> float:
    """What the file's name adds: FILE_NAMED when a bare identifier is its name (`adl_serializer`
    and adl_serializer.hpp, `Column` and Column.kt), else PATH_MATCH times the words' share, plus
    NAMED_INSIDE when an identifier in the query is its name."""
    if q.bare:
        name = path.rsplit("/", 1)[-1]
        wanted = {_squashed(n) for n in q.names}
        if _squashed(name.rsplit(".", 1)[0]) in wanted:
            return FILE_NAMED
        # a partial or platform file (Serializer.Json.cs, Context.common.kt) counts half
        return FILE_NAMED / 2 if _squashed(name.split(".")[0]) in wanted else 0.0
    stem = _squashed(path.rsplit("/", 1)[-1].split(".")[0])
    named = (q.names and stem in {_squashed(n) for n in q.names}) or stem in q.compounds
    return PATH_MATCH * _path_match(path, q.words) + (NAMED_INSIDE if named else 0.0)


def _compounds(query: str) -> frozenset[str]:
    """Runs of 2 or 3 adjacent words of the query, joined: "JSON element hierarchy" gives
    jsonelement, elementhierarchy and jsonelementhierarchy, the names a file may have."""
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", query)]
    return frozenset("".join(words[i:i + n]) for n in (2, 3) for i in range(len(words) - n + 1))


def _squashed(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _path_match(path: str, words: frozenset[str]) -> float:
    """Share of the query's words that name the file or its folder (`dependencies` meets `dependency`:
    one is a prefix of the other, 3 letters at least; so does the word's stem: "serialized" meets
    `serializer`, "routing" `router`)."""
    if not words:
        return 0.0
    parts = path.split("/")
    names = set(split_identifier(parts[-1].split(".")[0]))
    if len(parts) > 1:
        names.update(split_identifier(parts[-2]))
    names = {n for n in names if len(n) > 2}
    forms = [(w, stem if len(stem := word_stem(w)) > 2 else w) for w in words]
    return sum(any(_prefixed(w, n) or _prefixed(stem, n) for n in names) for w, stem in forms) / len(words)


def _prefixed(a: str, b: str) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return long.startswith(short)


def _definition_boosts(candidates: list[Candidate], q: _Query) -> dict[int, float]:
    """The definition boost of each candidate that is the first chunk (lowest start line) of a
    (path, symbol) whose name the query names. For a bare identifier, the closest definitions
    get NAME_QUERY_BOOST and the rest DEFINITION_BOOST: `Session` asks for class Session, not
    function session; `Engine` for the struct, not a method `validator.Engine`; `JsonMapper`
    for the class, not its constructor `JsonMapper.JsonMapper` (the rules: query/definitions.py)."""
    first: dict[tuple[str, str | None], Candidate] = {}
    for c in candidates:
        key = (c.row.path, c.row.symbol)
        if c.row.symbol and (key not in first or c.row.start_line < first[key].row.start_line):
            first[key] = c
    named = [c.row for c in first.values() if c.row.symbol.rsplit(".", 1)[-1].lower() in q.names]
    if not q.bare:
        return {row.id: DEFINITION_BOOST for row in named}
    closeness = definitions.closeness(named, q.qualified)
    best = max(closeness.values(), default=None)
    return {i: NAME_QUERY_BOOST if value == best else DEFINITION_BOOST for i, value in closeness.items()}


def _name_match(name: str, stems: frozenset[str]) -> float:
    """Share of a symbol's name words (stemmed) that the query holds: `readFloatLE` vs "reads a float"."""
    words = [w for w in split_identifier(name) if len(w) > 1]
    return sum(word_stem(w) in stems for w in words) / len(words) if words else 0.0
