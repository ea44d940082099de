"""The types a file's own text gives a receiver, read by sai/chunking/references.py: a name's
declared type (`ctx: Context`, `s *Server`), a constructor call assigned to it (`ed = Editor()`,
`const v = new Editor()`, `v := &Editor{}`), a constructor call used directly
(`Editor().edit()`), and the first base a class names (for `super().f()`).

A type is kept as written (`core.Parameter`); the query side looks up its last segment's member
and reads the first through the file's imports. Only plain names count: a generic or union type
(`Optional[C]`, `C | None`) gives none.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from sai.chunking import reference_tables as tables
from sai.chunking.treesitter import node_text, resolve

_WRITTEN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
# A local name and the type its declaration gives it: (line, name, written type).
Typed = tuple[int, str, str]


def type_of(node: Node | None) -> str:
    """The type `node` names or constructs, as written; '' when it is no plain name."""
    while node is not None and node.type in tables.TYPE_WRAPPERS:
        inner = node.child_by_field_name("operand") if node.type == "unary_expression" else None
        named = node.named_children
        node = inner if inner is not None else (named[0] if len(named) == 1 else None)
    if node is None:
        return ""
    if node.type in tables.CONSTRUCTIONS:
        return _constructed(node)
    if node.type not in tables.TYPE_NAMES:
        return ""
    text = "".join(node_text(node).split())
    return text if _WRITTEN.fullmatch(text) else ""


def _constructed(node: Node) -> str:
    """`Editor` of `Editor(…)` (a capitalised callee: a call of a function gives no type),
    `new Editor(…)` and `Editor{…}`."""
    written = type_of(resolve(node, tables.CONSTRUCTIONS[node.type]))
    if node.type == "call" and not written.rsplit(".", 1)[-1][:1].isupper():
        return ""
    return written


def note_typed(node: Node, typed: list[Typed]) -> None:
    """A declaration's (line, name, type), when it names a plain local and a type."""
    name_path, type_path = tables.TYPED_NAMES[node.type]
    name = resolve(node, name_path)
    if name is None or name.child_count or not name.type.endswith("identifier"):
        return
    written = type_of(resolve(node, type_path))
    if written:
        typed.append((node.start_point[0] + 1, node_text(name), written))


def note_base(node: Node, bases: dict[str, str]) -> None:
    """A class's first base, by the class's name (`Option` -> `core.Parameter`)."""
    name = node.child_by_field_name("name")
    written = type_of(resolve(node, tables.CLASS_BASES[node.type]))
    if name is not None and written:
        bases.setdefault(node_text(name), written)
