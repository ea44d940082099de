"""What `sai refs`, `sai callers`/`callees` and `sai impact` print: the JSON shapes (documented in
docs/output-schemas.md) and their text rows, pure functions of the results."""

from __future__ import annotations

from typing_extensions import TypedDict  # pydantic needs this one below Python 3.12

from sai.models import CallNode, CallTree, ChangedUnit, Impact, Use, Uses
from sai.output.render import printable


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
