"""The ranking signals of hybrid search, each declared once in SIGNALS: its name, its kind, its
weight and its role, with the function that measures it. Everything else derives from SIGNALS:
the fused score (fusion.py), `Signals` on a hit, the JSON and text of `--explain`
(sai/output), and the formula and table in docs/design.md ("Search"), which a test compares.

Weights are counted in units of a first place in one candidate list, FIRST_PLACE, so RRF_K keeps
their balance. Why each weight is what it is, with the figures it was chosen on, is in
benchmarks/DECISIONS.md.

Adding a signal is one entry in SIGNALS (and its measure here), plus its row in docs/design.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from sai.models import ChunkRow
from sai.query import definitions
from sai.query.ranking.candidate import Candidate, order_key
from sai.query.ranking.facts import QueryFacts, in_scope
from sai.source.vendored import under
from sai.text.lexical import ABBREVIATIONS, split_identifier, word_stem

T = TypeVar("T")

RRF_K = 5  # a candidate list's rank r contributes 1 / (RRF_K + r): small, so each list's top counts most
FIRST_PLACE = 1.0 / (RRF_K + 1)  # the unit of every additive weight: a first place in one list

NAME_MATCH = 0.5 * FIRST_PLACE  # times the share of the symbol's name words the query holds
NAME_QUERY_BOOST = 2.0 * FIRST_PLACE  # a one-word query's closest definitions (query/definitions.py)
DEFINITION_BOOST = 0.5 * FIRST_PLACE  # its other definitions, and an identifier named inside a longer query
DECLARES = 1.0 * FIRST_PLACE  # a type's declaration, or a declaration file's chunk, for a query about types
PATH_MATCH = 2.0 * FIRST_PLACE  # times the share of the query's words that name the file or its folder
SCOPE_MATCH = 2.0 * FIRST_PLACE  # a chunk under the place a leading scope names ("printer: …", "fix(client): …")
FILE_NAMED = 2.0 * FIRST_PLACE  # a one-identifier query that is the file's name (half for a partial file)
NAMED_INSIDE = 0.5 * FIRST_PLACE  # an identifier, or adjacent words run together, inside a longer query naming the file
TEST_PENALTY = 0.25  # the factor for tests, examples and CI scripts unless the query asks for them
VENDORED_PENALTY = 0.5  # the factor for vendored code (source/vendored.py) unless the query names it
ACTION_UNIT = 0.7  # the factor for a non-callable unit when the query starts with a verb
FILE_SUPPORT = 2.0 * FIRST_PLACE  # times the file's summed score over the best file's, to its best chunk
REPEAT_DECAY = 0.5  # the factor for each further chunk of a file, so other files' best come between
REPEAT_FREE = 1  # chunks of a file before the decay starts

DECLARATION_KINDS = frozenset({"interface", "type", "struct", "enum", "union", "trait", "record", "protocol"})
_ASKS_VENDORED = frozenset({"vendor", "vendored", "vendoring", "bundled", "third"})
DECLARATION_FILES = (".d.ts", ".d.mts", ".d.cts", ".pyi", ".rbi", ".rbs")
_TESTISH = re.compile(
    r"(^|/)(tests?|testing|testdata|spec|examples?|__tests__|regress|regression|fixtures?)(/|$)"
    r"|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(spec|test)\.[a-z]+$"
)
# Continuous-integration scripts and settings: ranked as tests are, unless the query asks about CI.
_CI = re.compile(r"(^|/)(\.github|\.circleci|\.gitlab|\.travis|\.buildkite|ci)/")

# How a signal enters the fused score. "file" and "spread" apply when the answer is one hit per
# file (the default), or when the query asks for a place (a question or a short topic,
# sai/query/intent.py): hit by chunk, a function's description asks for one function, whose
# confusers share its file.
Kind = Literal["add", "factor", "file", "spread"]
KINDS: dict[Kind, str] = {
    "add": "added to the reciprocal-rank score",
    "factor": "multiplies that sum",
    "file": "added after the factors, to each file's best chunk (hits by file, or a query asking for a place)",
    "spread": "multiplies the result last, per earlier chunk of the same file (hits by file, or a query asking "
              "for a place)",
}


class Pool:
    """The candidate rows one query's per-chunk signals see, and what they work out once for it."""

    def __init__(self, rows: list[ChunkRow], facts: QueryFacts, defining: frozenset[int] = frozenset(),
                 vendored: tuple[str, ...] = ()) -> None:
        self.rows = rows
        self.facts = facts
        self.defining = defining  # chunks with a line defining the bare name no unit defines
        self.vendored = vendored  # the index's vendored directories (source/vendored.py)
        self._once: dict[object, Any] = {}

    def once(self, key: object, compute: Callable[[], T]) -> T:
        if key not in self._once:
            self._once[key] = compute()
        return self._once[key]


@dataclass(frozen=True)
class Signal:
    """One ranking signal. `weight`: what it adds at most, or the factor it applies; `measure`
    (add, factor) gives a candidate's contribution, `apply` (file, spread) rescores the list."""

    name: str
    kind: Kind
    weight: float
    role: str
    measure: Callable[[ChunkRow, Pool], float] | None = None
    apply: Callable[[list[Candidate]], list[Candidate]] | None = None

    @property
    def neutral(self) -> float:
        """Its value when it does not fire: 0 added, or a factor of 1."""
        return 0.0 if self.kind in ("add", "file") else 1.0

    @property
    def additive(self) -> bool:
        return self.kind in ("add", "file")


# ---------------------------------------------------------------- the per-chunk measures
def name_match(row: ChunkRow, pool: Pool) -> float:
    """NAME_MATCH times the share of the symbol's name words (stemmed) the query holds, an
    abbreviation held when every word it spells out is: `readFloatLE` and "reads a float in
    little-endian order"."""
    name = row.symbol.rsplit(".", 1)[-1] if row.symbol else ""
    words = [w for w in split_identifier(name) if len(w) > 1]
    share = sum(_held(w, pool.facts.stems) for w in words) / len(words) if words else 0.0
    return NAME_MATCH * share


def _held(word: str, stems: frozenset[str]) -> bool:
    spelled = ABBREVIATIONS.get(word, ())
    return word_stem(word) in stems or bool(spelled) and all(word_stem(w) in stems for w in spelled)


def definition(row: ChunkRow, pool: Pool) -> float:
    return pool.once("definition", lambda: _definition_boosts(pool.rows, pool.facts, pool.defining)).get(row.id, 0.0)


def declares(row: ChunkRow, pool: Pool) -> float:
    """DECLARES for a query about types: a chunk declaring a type (an interface, a type alias, a
    struct, …) or of a declaration file (`.d.ts`, `.pyi`, `.rbi`)."""
    if not pool.facts.about_types:
        return 0.0
    return DECLARES if row.kind in DECLARATION_KINDS or row.path.endswith(DECLARATION_FILES) else 0.0


def path_match(row: ChunkRow, pool: Pool) -> float:
    if row.path in pool.once("outranked", lambda: _outranked_files(pool)):
        return 0.0  # it holds only definitions the query does not mean: its name gains nothing
    return pool.once(("path", row.path), lambda: _path_signal(row.path, pool.facts))


def scope_match(row: ChunkRow, pool: Pool) -> float:
    if not pool.facts.scopes:
        return 0.0
    return pool.once(("scope", row.path), lambda: SCOPE_MATCH if in_scope(row.path, pool.facts.scopes) else 0.0)


def test_penalty(row: ChunkRow, pool: Pool) -> float:
    """TEST_PENALTY for a test, example or CI file the query does not ask for, unless the chunk
    defines the one name the query is (a helper defined only in a test is still found by its name)."""
    if pool.facts.bare and definition(row, pool) > 0.0:
        return 1.0
    if not pool.facts.wants_tests and _TESTISH.search(row.path):
        return TEST_PENALTY
    return TEST_PENALTY if not pool.facts.wants_ci and _CI.search(row.path) else 1.0


def vendored_penalty(row: ChunkRow, pool: Pool) -> float:
    """VENDORED_PENALTY for a chunk of a vendored directory, unless the query names a folder of
    its path ("decNumber rounding", "the vendored yaml parser") or asks for vendored code."""
    home = under(row.path, pool.vendored) if pool.vendored else None
    if home is None:
        return 1.0
    return pool.once(("vendored", home), lambda: 1.0 if _names_folder(home, pool.facts) else VENDORED_PENALTY)


def kind_factor(row: ChunkRow, pool: Pool) -> float:
    return ACTION_UNIT if pool.facts.action and row.kind not in definitions.CALLABLE else 1.0


# ---------------------------------------------------------------- the list-level signals
def file_support(scored: list[Candidate]) -> list[Candidate]:
    """Each file's best candidate gains FILE_SUPPORT times its file's summed score over the best
    file's, times its test and vendored penalties: "how are routes matched" is answered by the module."""
    totals: dict[str, float] = {}
    best: dict[str, Candidate] = {}
    for c in scored:
        totals[c.row.path] = totals.get(c.row.path, 0.0) + c.fused
        if c.row.path not in best or order_key(c) < order_key(best[c.row.path]):
            best[c.row.path] = c
    top = max(totals.values(), default=0.0)
    if top <= 0.0:
        return scored
    chosen = {c.row.id for c in best.values()}
    out = []
    for c in scored:
        if c.row.id in chosen and c.signals is not None:
            support = FILE_SUPPORT * totals[c.row.path] / top * c.signals.test_penalty * c.signals.vendored
            c = replace(c, fused=c.fused + support, signals=c.signals.with_value("file_support", support))
        out.append(c)
    return out


def repeat(scored: list[Candidate]) -> list[Candidate]:
    """A file's further chunks decay by REPEAT_DECAY each: the top 10 shows ten places to look."""
    seen: dict[str, int] = {}
    out = []
    for c in sorted(scored, key=order_key):
        n = seen.get(c.row.path, 0)
        seen[c.row.path] = n + 1
        if n >= REPEAT_FREE and c.signals is not None:
            factor = REPEAT_DECAY ** (n - REPEAT_FREE + 1)
            c = replace(c, fused=c.fused * factor, signals=c.signals.with_value("repeat", factor))
        out.append(c)
    return sorted(out, key=order_key)


# ---------------------------------------------------------------- the declaration
SIGNALS: tuple[Signal, ...] = (
    Signal("name_match", "add", NAME_MATCH,
           "the symbol's name words the query holds (an abbreviation: every word it spells out), by share",
           measure=name_match),
    Signal("definition", "add", NAME_QUERY_BOOST,
           "the first chunk of a definition the query names: a one-word query's closest ones (the "
           "qualified name as typed, its case, not superseded, concrete over interface, a template over its "
           "specialisations, the least nested, of a C# partial type the part in the file named after it; "
           "for a name no unit defines, the chunks with a line defining it) "
           f"{NAME_QUERY_BOOST / FIRST_PLACE:g}, its other definitions and a name inside a longer query "
           f"{DEFINITION_BOOST / FIRST_PLACE:g}",
           measure=definition),
    Signal("declares", "add", DECLARES,
           "a query about types (type, interface, typings, …): a chunk declaring a type, or of a declaration file "
           "(.d.ts, .pyi, .rbi)", measure=declares),
    Signal("path_match", "add", PATH_MATCH,
           "the query's words name the file or its folder, by share; a one-word query that is the "
           f"file's name {FILE_NAMED / FIRST_PLACE:g} (half for a partial file); an identifier or adjacent "
           f"words run together inside a longer query that are its name {NAMED_INSIDE / FIRST_PLACE:g} more",
           measure=path_match),
    Signal("scope_match", "add", SCOPE_MATCH,
           "a leading scope names the chunk's folder or file, in order (`ignore/types: …`, `fix(client): …`; "
           "a change type such as `fix:` names none)", measure=scope_match),
    Signal("test_penalty", "factor", TEST_PENALTY, "tests, examples and CI scripts, unless the query asks for them",
           measure=test_penalty),
    Signal("vendored", "factor", VENDORED_PENALTY,
           "vendored code (a `vendor/`-like folder, a submodule, a folder with a licence of its own), "
           "unless the query names one of its folders", measure=vendored_penalty),
    Signal("file_support", "file", FILE_SUPPORT,
           "the file's share of the candidates' score, times its test and vendored penalties", apply=file_support),
    Signal("repeat", "spread", REPEAT_DECAY, "a file's further chunks, once per chunk of it ranked above",
           apply=repeat),
    Signal("kind_factor", "factor", ACTION_UNIT, "a class or other non-callable unit when the query starts with a verb",
           measure=kind_factor),
)
NAMES = tuple(s.name for s in SIGNALS)
_ORDER: dict[Kind, int] = {"add": 0, "factor": 1, "file": 2, "spread": 3}


def of_kind(kind: Kind) -> tuple[Signal, ...]:
    return tuple(s for s in SIGNALS if s.kind == kind)


def formula() -> str:
    """The fused score as docs/design.md and docs/output-schemas.md write it."""
    added = " + ".join(["rrf", *(s.name for s in of_kind("add"))])
    factors = "".join(f" × {s.name}" for s in of_kind("factor"))
    filed = "".join(f" + {s.name}" for s in of_kind("file"))
    spread = "".join(f" × {s.name}" for s in of_kind("spread"))
    return f"(({added}){factors}{filed}){spread}"


def recombined(rrf: float, values: Mapping[str, float]) -> float:
    """The fused score from its parts as formula() writes them: what `--explain`'s numbers add up to."""
    total = rrf + sum(values[s.name] for s in of_kind("add"))
    for s in of_kind("factor"):
        total *= values[s.name]
    total += sum(values[s.name] for s in of_kind("file"))
    for s in of_kind("spread"):
        total *= values[s.name]
    return total


def table() -> list[str]:
    """The rows of docs/design.md's signal table: name, kind, weight, role."""
    rows = ["| signal | kind | weight | role |", "|---|---|---|---|"]
    for s in sorted(SIGNALS, key=lambda s: _ORDER[s.kind]):
        weight = f"{s.weight / FIRST_PLACE:g} first place(s)" if s.additive else f"× {s.weight:g}"
        rows.append(f"| `{s.name}` | {s.kind}: {KINDS[s.kind]} | {weight} | {s.role} |")
    return rows


# ---------------------------------------------------------------- what the measures use
def _path_signal(path: str, q: QueryFacts) -> float:
    """What the file's name adds: FILE_NAMED when a bare identifier is its name (`adl_serializer`
    and adl_serializer.hpp, `Column` and Column.kt), else PATH_MATCH times the words' share, plus
    NAMED_INSIDE when an identifier in the query is its name."""
    if q.bare:
        name = path.rsplit("/", 1)[-1]
        wanted = {definitions.squashed(n) for n in q.names}
        if definitions.squashed(name.rsplit(".", 1)[0]) in wanted:
            return FILE_NAMED
        # a partial or platform file (Serializer.Json.cs, Context.common.kt) counts half
        return FILE_NAMED / 2 if definitions.squashed(name.split(".")[0]) in wanted else 0.0
    stem = definitions.squashed(path.rsplit("/", 1)[-1].split(".")[0])
    named = (q.names and stem in {definitions.squashed(n) for n in q.names}) or stem in q.compounds
    return PATH_MATCH * _path_share(path, q.words) + (NAMED_INSIDE if named else 0.0)


def _path_share(path: str, words: frozenset[str]) -> float:
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


def _names_folder(folder: str, q: QueryFacts) -> bool:
    """Whether the query names a folder of the path `folder` (its words, or its name run together),
    or asks for vendored code in so many words."""
    parts = folder.split("/")
    names = {n for part in parts for n in split_identifier(part) if len(n) > 2}
    squashed = {definitions.squashed(part) for part in parts}
    if q.words & _ASKS_VENDORED:
        return True
    return bool(q.words & names or q.compounds & squashed or {definitions.squashed(n) for n in q.names} & squashed)


def _prefixed(a: str, b: str) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return long.startswith(short)


def _definition_boosts(rows: list[ChunkRow], q: QueryFacts, defining: frozenset[int] = frozenset()) -> dict[int, float]:
    """The definition boost of each row that is the first chunk (lowest start line) of a
    (path, symbol) whose name the query names. For a bare identifier, the closest definitions
    get NAME_QUERY_BOOST and the rest DEFINITION_BOOST: `Session` asks for class Session, not
    function session; `Engine` for the struct, not a method `validator.Engine`; `JsonMapper`
    for the class, not its constructor `JsonMapper.JsonMapper` (the rules: query/definitions.py).
    A bare name no unit defines boosts the chunks with a line defining it (`defining`) in full."""
    if q.bare and defining:
        return dict.fromkeys(defining, NAME_QUERY_BOOST)
    first: dict[tuple[str, str | None], ChunkRow] = {}
    for row in rows:
        key = (row.path, row.symbol)
        if row.symbol and (key not in first or row.start_line < first[key].start_line):
            first[key] = row
    named = [row for row in first.values() if (row.symbol or "").rsplit(".", 1)[-1].lower() in q.names]
    if not q.bare:
        return {row.id: DEFINITION_BOOST for row in named}
    closeness = definitions.closeness(named, q.qualified)
    best = max(closeness.values(), default=None)
    return {i: NAME_QUERY_BOOST if value == best else DEFINITION_BOOST for i, value in closeness.items()}


def _outranked_files(pool: Pool) -> set[str]:
    """For a bare name, the files holding only its definitions that are not the closest."""
    if not pool.facts.bare:
        return set()
    boosts = pool.once("definition", lambda: _definition_boosts(pool.rows, pool.facts, pool.defining))
    closest = {i for i, boost in boosts.items() if boost == NAME_QUERY_BOOST}
    return definitions.outranked_files(pool.rows, closest, set(boosts))
