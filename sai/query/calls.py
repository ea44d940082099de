"""Who calls a name and what it calls: `sai callers` / `sai callees` and their MCP tools, as small
trees over the stored references (sai/query/references.py), `depth` levels deep (MAX_DEPTH at most).

A caller is the unit (function, method, ...) holding a call of the name; a callee is a name a
definition of it calls, the definition it resolves to when a rule of sai/query/resolution.py
ties it to one. A unit already on the way up to the root is a `cycle` and not expanded again;
at most `limit` children a node and MAX_NODES in all, the rest counted as `more`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sai.errors import UsageError
from sai.models import CallNode, CallTree, Definition, Reference, Use
from sai.project import Project
from sai.query.references import KnownUses, UseFilter, open_references, resolver_for, split_name
from sai.store import IndexReader

MAX_DEPTH = 5
MAX_NODES = 200  # nodes a tree holds at most, whatever depth and limit ask
_CALLS = UseFilter(kinds=frozenset({"call"}))
_Key = tuple[str, str | None]  # (path, symbol) of a unit


@dataclass
class _Budget:
    left: int = MAX_NODES
    seen: set[_Key] = field(default_factory=set)


def callers(project: Project, name: str, *, depth: int = 1, limit: int = 10) -> CallTree:
    """The units calling `name`, and theirs to `depth` levels."""
    depth, limit = _checked(depth, limit)
    with open_references(project) as reader:
        ancestors = frozenset((d.path, d.symbol) for d in _definitions(reader, name))
        roots, more = _callers(reader, name, depth, limit, ancestors, _Budget())
    return CallTree(name=name.strip(), direction="callers", depth=depth, roots=tuple(roots), more=more)


def callees(project: Project, name: str, *, depth: int = 1, limit: int = 10) -> CallTree:
    """What the definitions of `name` call, and what those call to `depth` levels."""
    depth, limit = _checked(depth, limit)
    with open_references(project) as reader:
        definitions = _definitions(reader, name)
        ancestors = frozenset((d.path, d.symbol) for d in definitions)
        roots, more = _callees(reader, definitions, depth, limit, ancestors, _Budget())
    return CallTree(name=name.strip(), direction="callees", depth=depth, roots=tuple(roots), more=more)


def callers_of(reader: IndexReader, name: str, *, limit: int,
               known: KnownUses | None = None) -> tuple[list[CallNode], int]:
    """The units calling `name`, one level (what `sai impact` shows of each changed unit), and how many more;
    `known` holds `name`'s uses when they were read with others'."""
    return _callers(reader, name, 1, limit, frozenset(), _Budget(), known)


def _checked(depth: int, limit: int) -> tuple[int, int]:
    if not 1 <= int(depth) <= MAX_DEPTH:
        raise UsageError(f"depth {depth} is out of range; give 1 to {MAX_DEPTH}")
    return int(depth), max(1, int(limit))


def _definitions(reader: IndexReader, name: str) -> list[Definition]:
    qualifier, last = split_name(name)
    found = resolver_for(reader, {last}).definitions(last)
    full = f"{qualifier}.{last}" if qualifier else last
    return [d for d in found if d.symbol == full or d.symbol.endswith("." + full)]


def _callers(reader: IndexReader, name: str, depth: int, limit: int, ancestors: frozenset[_Key],
             budget: _Budget, known: KnownUses | None = None) -> tuple[list[CallNode], int]:
    groups: dict[tuple[str, str | None, int, int], list[Use]] = defaultdict(list)
    for use in (known or KnownUses(reader, [name])).of(name, _CALLS):
        ref = use.reference
        groups[(ref.path, ref.unit, ref.unit_start, ref.unit_end)].append(use)
    ordered = sorted(groups.items(), key=lambda g: (not any(u.resolved for u in g[1]), g[0][0], g[0][2]))
    nodes: list[CallNode] = []
    for (path, unit, start, end), uses in ordered[:limit]:
        if budget.left <= 0:
            break
        budget.left -= 1
        key = (path, unit)
        node = CallNode(symbol=unit, path=path, start_line=start, end_line=end, chunk_id=uses[0].reference.chunk_id,
                        lines=tuple(sorted({u.reference.line for u in uses})),
                        resolved=any(u.resolved for u in uses), cycle=key in ancestors)
        if depth > 1 and unit and not node.cycle:
            children, more = _callers(reader, unit, depth - 1, limit, ancestors | {key}, budget)
            node = _with(node, children, more)
        nodes.append(node)
    return nodes, len(ordered) - len(nodes)


def _callees(reader: IndexReader, definitions: list[Definition], depth: int, limit: int,
             ancestors: frozenset[_Key], budget: _Budget) -> tuple[list[CallNode], int]:
    calls = [ref for d in definitions for ref in reader.references_in(d.path, d.start_line, d.end_line)
             if ref.kind == "call"]
    resolver = resolver_for(reader, {ref.name for ref in calls})
    groups: dict[tuple[str, str], tuple[Definition | None, list[Reference]]] = {}
    for ref in calls:
        target = resolver.resolve(ref)
        key = (target.path, target.symbol) if target else ("", _written(ref))
        groups.setdefault(key, (target, []))[1].append(ref)
    ordered = sorted(groups.items(), key=lambda g: (g[1][0] is None, min(r.line for r in g[1][1])))
    nodes: list[CallNode] = []
    for (path, symbol), (target, refs) in ordered[:limit]:
        if budget.left <= 0:
            break
        budget.left -= 1
        nodes.append(_callee_node(reader, path, symbol, target, refs, depth, limit, ancestors, budget))
    return nodes, len(ordered) - len(nodes)


def _callee_node(reader: IndexReader, path: str, symbol: str, target: Definition | None, refs: list[Reference],
                 depth: int, limit: int, ancestors: frozenset[_Key], budget: _Budget) -> CallNode:
    lines = tuple(sorted({r.line for r in refs}))
    if target is None:
        return CallNode(symbol=symbol, path="", start_line=0, end_line=0, chunk_id=None, lines=lines, resolved=False)
    key = (path, symbol)
    node = CallNode(symbol=symbol, path=path, start_line=target.start_line, end_line=target.end_line,
                    chunk_id=target.chunk_id, lines=lines, resolved=True, cycle=key in ancestors)
    if depth > 1 and not node.cycle:
        children, more = _callees(reader, [target], depth - 1, limit, ancestors | {key}, budget)
        node = _with(node, children, more)
    return node


def _with(node: CallNode, children: list[CallNode], more: int) -> CallNode:
    return CallNode(symbol=node.symbol, path=node.path, start_line=node.start_line, end_line=node.end_line,
                    chunk_id=node.chunk_id, lines=node.lines, resolved=node.resolved, cycle=node.cycle,
                    children=tuple(children), more=more)


def _written(ref: Reference) -> str:
    return f"{ref.qualifier}.{ref.name}" if ref.qualifier else ref.name
