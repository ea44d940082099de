"""What `sai refs`, `sai callers`/`callees` and `sai impact` print: the JSON shapes (documented in
docs/output-schemas.md) and their text rows, pure functions of the results, and those answers
fitted to a token budget (docs/output-schemas.md "Budgets"): their places in one best-first order
(uses in order; a tree level by level; an impact's units, then their callers, then their copies),
the first that fit kept (output/budget.py `fit_order`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, NotRequired, TypeVar

from typing_extensions import TypedDict  # pydantic needs this one below Python 3.12

from sai.models import CallNode, CallTree, ChangedUnit, Impact, Use, Uses
from sai.output.budget import Budget, Cut, Places, fit_order, note
from sai.output.payloads import json_size, truncated_json
from sai.output.render import printable
from sai.output.shapes import TruncatedOut

USES = Places("use", "uses", "")
IMPACT_PLACES = Places("unit, caller or copy", "units, callers and copies", "")


class TargetOut(TypedDict):
    symbol: str
    path: str
    start_line: int
    chunk_id: str


class UseOut(TypedDict):
    path: str
    line: int
    column: int
    kind: str
    name: str
    qualifier: str
    symbol: str | None  # the enclosing unit's symbol (None: module level)
    chunk_id: str | None  # the enclosing unit's chunk
    resolved: bool
    target: TargetOut | None


class UsesOut(TypedDict):
    name: str
    total: int
    more: int
    by_kind: dict[str, int]
    references: list[UseOut]
    truncated: NotRequired[TruncatedOut]


class CallNodeOut(TypedDict):
    symbol: str | None
    path: str
    start_line: int
    end_line: int
    chunk_id: str | None
    lines: list[int]
    resolved: bool
    cycle: bool
    more: int
    children: list[CallNodeOut]


class CallTreeOut(TypedDict):
    name: str
    direction: str
    depth: int
    more: int
    tree: list[CallNodeOut]
    truncated: NotRequired[TruncatedOut]


class CopyOut(TypedDict):
    symbol: str | None
    path: str
    start_line: int
    end_line: int
    chunk_id: str
    score: float


class ChangedUnitOut(TypedDict):
    symbol: str | None
    kind: str | None
    path: str
    start_line: int
    end_line: int
    chunk_id: str
    callers: list[CallNodeOut]
    callers_more: int
    copies: list[CopyOut]


class ImpactOut(TypedDict):
    since: str
    changed_files: list[str]
    units: list[ChangedUnitOut]
    more: int
    truncated: NotRequired[TruncatedOut]


def uses_json(found: Uses) -> UsesOut:
    """sai_find_references / `sai refs --json`."""
    return UsesOut(name=found.name, total=found.total, more=found.total - len(found.uses),
                   by_kind=dict(found.by_kind), references=[_use(u) for u in found.uses])


def _use(use: Use) -> UseOut:
    ref, target = use.reference, use.target
    return UseOut(
        path=ref.path, line=ref.line, column=ref.column, kind=ref.kind, name=ref.name, qualifier=ref.qualifier,
        symbol=ref.unit, chunk_id=ref.chunk_id, resolved=use.resolved,
        target=None if target is None else TargetOut(symbol=target.symbol, path=target.path,
                                                     start_line=target.start_line, chunk_id=target.chunk_id),
    )


def call_tree_json(tree: CallTree) -> CallTreeOut:
    """sai_find_callers / sai_find_callees / `sai callers|callees --json`."""
    return CallTreeOut(name=tree.name, direction=tree.direction, depth=tree.depth, more=tree.more,
                       tree=[_node(n) for n in tree.roots])


def _node(node: CallNode) -> CallNodeOut:
    return CallNodeOut(symbol=node.symbol, path=node.path, start_line=node.start_line, end_line=node.end_line,
                       chunk_id=node.chunk_id, lines=list(node.lines), resolved=node.resolved, cycle=node.cycle,
                       more=node.more, children=[_node(c) for c in node.children])


def impact_json(impact: Impact) -> ImpactOut:
    """sai_impact / `sai impact --json`."""
    return ImpactOut(since=impact.since, changed_files=list(impact.changed_files), more=impact.more, units=[
        ChangedUnitOut(symbol=u.symbol, kind=u.kind, path=u.path, start_line=u.start_line, end_line=u.end_line,
                       chunk_id=u.chunk_id, callers=[_node(c) for c in u.callers], callers_more=u.callers_more,
                       copies=[CopyOut(symbol=c.symbol, path=c.path, start_line=c.start_line, end_line=c.end_line,
                                       chunk_id=c.chunk_id, score=round(c.score, 4)) for c in u.copies])
        for u in impact.units
    ])


def uses_text(found: Uses) -> str:
    """`{n} reference(s) of {name} (calls 3, imports 1):` then `  path:line  kind  in symbol  [resolved]` rows."""
    if not found.uses:
        return f"no references of {printable(found.name)}\n"
    kinds = ", ".join(f"{kind} {count}" for kind, count in found.by_kind.items())
    rows = [f"  {printable(u.reference.path)}:{u.reference.line}  {u.reference.kind:<7} "
            f"in {printable(u.reference.unit or '<module>')}  {_resolution(u)}" for u in found.uses]
    head = f"{found.total} reference(s) of {printable(found.name)} ({kinds}):"
    return "\n".join([head, *rows, *_more(found.total - len(found.uses))]) + "\n"


def _resolution(use: Use) -> str:
    if use.target is None:
        return "(name match)"
    return f"-> {printable(use.target.symbol)} {printable(use.target.path)}:{use.target.start_line}"


def call_tree_text(tree: CallTree) -> str:
    """`callers of NAME (depth N):` then the tree, two spaces a level, `path:start-end  symbol  (lines)`."""
    if not tree.roots:
        return f"no {tree.direction} of {printable(tree.name)}\n"
    rows = [f"{tree.direction} of {printable(tree.name)} (depth {tree.depth}):"]
    for node in tree.roots:
        rows += _tree_rows(node, 1)
    return "\n".join([*rows, *_more(tree.more)]) + "\n"


def _tree_rows(node: CallNode, level: int) -> list[str]:
    pad = "  " * level
    lines = ",".join(str(n) for n in node.lines[:5]) + ("..." if len(node.lines) > 5 else "")
    flags = ("" if node.resolved else "  (name match)") + ("  (cycle)" if node.cycle else "")
    where = f"{printable(node.path)}:{node.start_line}-{node.end_line}" if node.path else "(not in the index)"
    rows = [f"{pad}{where}  {printable(node.symbol or '<module>')}  line {lines}{flags}"]
    for child in node.children:
        rows += _tree_rows(child, level + 1)
    if node.more:
        rows.append(f"{pad}  ... {node.more} more")
    return rows


def impact_text(impact: Impact) -> str:
    """`{n} unit(s) changed since REV:` then per unit its callers and the copies left behind."""
    if not impact.units:
        return f"no indexed unit changed since {printable(impact.since)}\n"
    rows = [f"{len(impact.units) + impact.more} unit(s) changed since {printable(impact.since)}:"]
    for unit in impact.units:
        rows += _unit_rows(unit)
    return "\n".join([*rows, *_more(impact.more)]) + "\n"


def _unit_rows(unit: ChangedUnit) -> list[str]:
    rows = [f"  {_at(unit.path, unit.start_line, unit.end_line)}  {printable(unit.symbol or '<module>')}"]
    for caller in unit.callers:
        line = caller.lines[0] if caller.lines else caller.start_line
        rows.append(f"    called from {printable(caller.path)}:{line}  {printable(caller.symbol or '<module>')}")
    rows += [f"    ... {unit.callers_more} more callers"] if unit.callers_more else []
    for copy in unit.copies:
        rows.append(f"    copy left behind {copy.score:.2f}  {_at(copy.path, copy.start_line, copy.end_line)}"
                    f"  {printable(copy.symbol or '')}")
    return rows


def _at(path: str, start: int, end: int) -> str:
    return f"{printable(path)}:{start}-{end}"


def _more(count: int) -> list[str]:
    return [f"  ... {count} more"] if count > 0 else []


# ---------------------------------------------------------------- fitted to a budget


def fitted_uses_json(found: Uses, *, budget: Budget) -> UsesOut:
    """sai_find_references / `sai refs --json` fitted to the budget."""
    out: UsesOut = _fit_uses(found, budget=budget, as_json=True)
    return out


def fitted_uses_text(found: Uses, *, budget: Budget) -> str:
    return str(_fit_uses(found, budget=budget, as_json=False))


def fitted_call_tree_json(tree: CallTree, *, budget: Budget) -> CallTreeOut:
    out: CallTreeOut = _fit_call_tree(tree, budget=budget, as_json=True)
    return out


def fitted_call_tree_text(tree: CallTree, *, budget: Budget) -> str:
    return str(_fit_call_tree(tree, budget=budget, as_json=False))


def fitted_impact_json(found: Impact, *, budget: Budget) -> ImpactOut:
    out: ImpactOut = _fit_impact(found, budget=budget, as_json=True)
    return out


def fitted_impact_text(found: Impact, *, budget: Budget) -> str:
    return str(_fit_impact(found, budget=budget, as_json=False))


def _fit_uses(found: Uses, *, budget: Budget, as_json: bool) -> Any:
    """The first uses that fit the budget, as JSON or as text."""
    return _fitted(len(found.uses), lambda keep: replace(found, uses=found.uses[:keep]), uses_json, uses_text,
                   places=USES, budget=budget, as_json=as_json)


def _fit_call_tree(tree: CallTree, *, budget: Budget, as_json: bool) -> Any:
    """The tree's shallow levels first, a level's earlier nodes before its later ones, as many
    nodes as fit; a node whose children were left out counts them in its `more`."""
    order = list(_level_order(tree.roots))
    places = Places(tree.direction[:-1], tree.direction, "")
    follow = budget.spelling.follow.format(direction=tree.direction)
    return _fitted(len(order), lambda keep: _kept_tree(tree, set(order[:keep])), call_tree_json, call_tree_text,
                   places=places, budget=budget, as_json=as_json, further=f"{follow} follows a kept node further")


def _fit_impact(found: Impact, *, budget: Budget, as_json: bool) -> Any:
    """The changed units first, then their callers (level by level), then their copies, as many
    as fit; a unit's callers left out count in its `callers_more`, units left out in `more`."""
    order = _impact_order(found)
    follow = budget.spelling.follow.format(direction="callers")
    return _fitted(len(order), lambda keep: _kept_impact(found, set(order[:keep])), impact_json, impact_text,
                   places=IMPACT_PLACES, budget=budget, as_json=as_json,
                   further=f"{follow} lists a unit's callers")


Model = TypeVar("Model")


def _fitted(count: int, kept: Callable[[int], Model], as_dict: Callable[[Model], Any], as_text: Callable[[Model], str],
            *, places: Places, budget: Budget, as_json: bool, further: str = "") -> Any:
    """The answer of the first `keep` of `count` places that fits, JSON (with `truncated`) or text
    (with a last `… hint` line)."""
    def render(cut: Cut) -> Any:
        hint = note(cut, count=count, shortened=0, places=places, budget=budget)
        if hint and further and not cut.over:
            hint += f", or {further}"
        model = kept(cut.keep)
        if not as_json:
            return as_text(model) + (f"… {hint}\n" if hint else "")
        out = as_dict(model)
        truncated = truncated_json(cut, count=count, shortened=0, places=places, budget=budget)
        if truncated is not None:
            out["truncated"] = {**truncated, "hint": hint}
        return out

    size: Callable[[Any], int] = json_size if as_json else len
    return render(fit_order(count, lambda cut: size(render(cut)), max_tokens=budget.max_tokens))


Spot = tuple[int, ...]  # a node of a forest: its index among the roots, then among each level's children


def _level_order(roots: tuple[CallNode, ...], at: Spot = ()) -> Iterator[Spot]:
    """The nodes of a forest level by level, each level in order."""
    level = [((*at, i), node) for i, node in enumerate(roots)]
    while level:
        yield from (spot for spot, _ in level)
        level = [((*spot, i), child) for spot, node in level for i, child in enumerate(node.children)]


def _kept_nodes(nodes: tuple[CallNode, ...], kept: set[Spot], at: Spot) -> tuple[CallNode, ...]:
    return tuple(_kept_node(node, kept, (*at, i)) for i, node in enumerate(nodes) if (*at, i) in kept)


def _kept_node(node: CallNode, kept: set[Spot], at: Spot) -> CallNode:
    children = _kept_nodes(node.children, kept, at)
    return replace(node, children=children, more=node.more + len(node.children) - len(children))


def _kept_tree(tree: CallTree, kept: set[Spot]) -> CallTree:
    roots = _kept_nodes(tree.roots, kept, ())
    return replace(tree, roots=roots, more=tree.more + len(tree.roots) - len(roots))


ImpactPlace = tuple[str, int, Spot]  # ("unit", i, ()), ("caller", i, spot) or ("copy", i, (j,))


def _impact_order(found: Impact) -> list[ImpactPlace]:
    units = found.units
    return [("unit", i, ()) for i in range(len(units))] + [
        ("caller", i, spot) for i, unit in enumerate(units) for spot in _level_order(unit.callers)] + [
        ("copy", i, (j,)) for i, unit in enumerate(units) for j in range(len(unit.copies))]


def _kept_impact(found: Impact, kept: set[ImpactPlace]) -> Impact:
    units = []
    for i, unit in enumerate(found.units):
        if ("unit", i, ()) not in kept:
            continue
        callers = _kept_nodes(unit.callers, {spot for kind, n, spot in kept if kind == "caller" and n == i}, ())
        units.append(replace(unit, callers=callers, callers_more=unit.callers_more + len(unit.callers) - len(callers),
                             copies=tuple(c for j, c in enumerate(unit.copies) if ("copy", i, (j,)) in kept)))
    return replace(found, units=tuple(units), more=found.more + len(found.units) - len(units))
