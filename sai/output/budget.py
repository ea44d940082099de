"""Answers with a token budget (docs/output-schemas.md "Budgets"): the one rule that fits an
answer of ranked places (hits, definitions, chunks, clusters) into `max_tokens`, for the CLI and
the MCP tools alike.

The caller renders; this module only chooses the cut. A cut keeps the first `keep` places and
shows each kept place's text cut to its first `head` units (lines of a snippet or of a chunk,
members of a cluster). Hit lists prefer more places: every snippet is shortened, down to no
line at all, before the last hit is left out. A read prefers whole text: the farthest context
chunks are left out before the chunk itself is shortened. Answers that follow the code
(references, call trees, impact) have no text to shorten: their places stand in one best-first
order and a cut keeps the first `keep` of them, down to none (`fit_order`). Sizes are counted in
characters of the rendered answer, 4 to a token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from sai.errors import UsageError
from sai.models import ChunkContext

CHARS_PER_TOKEN = 4
# Defaults sized for one agent turn: a default search (8 hits, 8-line snippets) fits whole.
DEFAULT_TOKENS = {"search": 2000, "similar": 2000, "symbol": 2000, "read": 4000, "duplicates": 4000,
                  # a default refs (20 uses), callers/callees (depth 1, 10) or impact fits whole
                  "refs": 2000, "calls": 2000, "impact": 2000}
Answer = TypeVar("Answer")


@dataclass(frozen=True)
class Cut:
    """The places an answer keeps, best first, and how much text each shows."""

    keep: int  # the first `keep` places
    head: int | None = None  # the units of text each kept place shows; None: all of them
    over: bool = False  # even the smallest answer (the best place, no text) is over the budget


def check_budget(max_tokens: object, *, name: str = "max_tokens") -> int:
    """`max_tokens` as a positive whole number of tokens, or a UsageError naming it."""
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise UsageError(f"{name} {max_tokens!r} is not a positive integer; give the tokens the answer may "
                         "take (4 characters each)")
    return max_tokens


def fit(count: int, size: Callable[[Cut], int], *, max_tokens: int, longest: int,
        places_first: bool = True) -> Cut:
    """The fullest cut of `count` places whose rendering (`size`, in characters) fits
    `max_tokens`; `longest` is the most units of text any place has."""
    limit = check_budget(max_tokens) * CHARS_PER_TOKEN
    whole = Cut(count)
    if count == 0 or size(whole) <= limit:
        return whole

    def fits(cut: Cut) -> bool:
        return size(cut) <= limit

    if places_first:
        keep = _largest(1, count, lambda k: fits(Cut(k, 0)))
        if keep is None:
            return Cut(1, 0, over=True)
    else:
        keep = _largest(1, count, lambda k: fits(Cut(k)))
        if keep is not None:
            return Cut(keep)
        keep = 1
    if fits(Cut(keep)):
        return Cut(keep)
    head = _largest(0, max(longest - 1, 0), lambda h: fits(Cut(keep, h)))
    return Cut(keep, 0, over=True) if head is None else Cut(keep, head)


def fit_order(count: int, size: Callable[[Cut], int], *, max_tokens: int) -> Cut:
    """The first `keep` of `count` places, in their best-first order, as many as fit
    `max_tokens`, down to none; `over` when even none is over it."""
    limit = check_budget(max_tokens) * CHARS_PER_TOKEN
    keep = _largest(0, count, lambda k: size(Cut(k)) <= limit)
    return Cut(0, over=True) if keep is None else Cut(keep)


def fitted(count: int, render: Callable[[Cut], Answer], *, size: Callable[[Answer], int], max_tokens: int,
           longest: int, places_first: bool = True) -> Answer:
    """`render` of the fullest cut whose answer fits `max_tokens` (`size`: its characters)."""
    cut = fit(count, lambda c: size(render(c)), max_tokens=max_tokens, longest=longest, places_first=places_first)
    return render(cut)


def _largest(low: int, high: int, ok: Callable[[int], bool]) -> int | None:
    """The largest n in [low, high] with ok(n), ok taken as monotone (true, then false); None when
    ok(low) is false. Only a value ok() was asked about is returned."""
    if low > high or not ok(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if ok(middle):
            low = middle
        else:
            high = middle - 1
    return low


def head_lines(text: str, head: int | None) -> str:
    """The first `head` lines of `text` (all of it when head is None)."""
    if head is None:
        return text
    return "\n".join(text.split("\n")[:head]) if head else ""


@dataclass(frozen=True)
class Spelling:
    """How a front end names the ways to the rest of an answer."""

    budget: str  # the budget's argument: max_tokens, --max-tokens
    read: str  # how one place is read whole: sai_read_chunk with its chunk_id, `sai read CHUNK_ID`
    follow: str = "sai_find_{direction} on its symbol"  # how a unit's callers (callees) are asked for


@dataclass(frozen=True)
class Budget:
    """An answer's budget and how its front end names the ways to more."""

    max_tokens: int
    spelling: Spelling


@dataclass(frozen=True)
class Places:
    """What an answer's places and their texts are called: hits and snippets, chunks and text."""

    one: str
    many: str
    texts: str  # the text of a place: snippets, text, members
    units: str = "lines"  # what a head counts
    readable: bool = False  # a place is read whole by its chunk_id (a hit)


HITS = Places("hit", "hits", "snippets", readable=True)
CHUNKS = Places("chunk", "chunks", "text")
DEFINITIONS = Places("definition", "definitions", "text")
CLUSTERS = Places("cluster", "clusters", "members", units="members")


def note(cut: Cut, *, count: int, shortened: int, places: Places, budget: Budget) -> str:
    """What `cut` left out of an answer of `count` places and how to get it, in one sentence
    ("" when it left out nothing)."""
    spelling, max_tokens = budget.spelling, budget.max_tokens
    if not (cut.over or shortened or cut.keep < count):
        return ""
    if cut.over and not cut.keep:
        return f"{spelling.budget} {max_tokens} is too small for even the answer's head: nothing shown; raise it"
    if cut.over:
        return (f"{spelling.budget} {max_tokens} is too small for even one {places.one} without its text: "
                f"the best one shown; raise {spelling.budget}")
    parts = []
    if count > cut.keep:
        parts.append(f"{count - cut.keep} more {places.one if count - cut.keep == 1 else places.many} omitted")
    if shortened:
        shown = f"cut to {cut.head} {places.units}" if cut.head else "left out"
        parts.append(f"{places.texts} of {shortened} {places.one if shortened == 1 else places.many} {shown}")
    more = f"raise {spelling.budget}"
    if shortened and places.readable:
        more += f", or {spelling.read} reads one whole"
    return f"{', '.join(parts)} to fit {spelling.budget} {max_tokens}; {more}"


def context_places(context: ChunkContext) -> int:
    """The places of a read: the chunk, its enclosing unit, its neighbours."""
    return 1 + (context.enclosing is not None) + len(context.before) + len(context.after)


def kept_context(context: ChunkContext, keep: int) -> ChunkContext:
    """The chunk and its first `keep - 1` context chunks by nearness: the enclosing unit, then
    the neighbours one step away on either side, then two steps, ..."""
    order: list[tuple[str, int]] = [("enclosing", 0)] if context.enclosing is not None else []
    for step in range(max(len(context.before), len(context.after))):
        if step < len(context.before):
            order.append(("before", len(context.before) - 1 - step))
        if step < len(context.after):
            order.append(("after", step))
    kept = set(order[:max(keep - 1, 0)])
    return replace(
        context,
        before=tuple(c for i, c in enumerate(context.before) if ("before", i) in kept),
        after=tuple(c for i, c in enumerate(context.after) if ("after", i) in kept),
        enclosing=context.enclosing if ("enclosing", 0) in kept else None,
    )
