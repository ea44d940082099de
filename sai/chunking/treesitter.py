"""The `ast` chunker: tree-sitter units (functions, classes, ...) plus gap chunks for the rest.

Every line belongs to its innermost unit, or to the module when no unit spans it. Each owner's
lines become chunks through `window_chunks`, so a class chunk holds its header, fields and closing
brace (its range spans its methods'), and the module chunk holds imports and top-level statements.
Symbols are qualified by every enclosing unit with '.': `Session.create`, `outer.inner`; C++
`Foo::bar` is written `Foo.bar`, the same symbol an in-class definition gets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from sai.chunking.base import split_lines
from sai.chunking.grammars import CLASS_LIKE, GRAMMARS, KINDS, Grammar, UnitRule
from sai.chunking.lines import LineChunker, Numbered, window_chunks
from sai.chunking.macros import blank_macros
from sai.chunking.parsers import parse
from sai.chunking.sections import COMPONENTS, DOCUMENTS, script_view, sections
from sai.models import Chunk

_TYPE_ARGS = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
# C++/Rust/Ruby `::`, PHP `\` and Lua's method colon (`M:load`) separate scopes
_SCOPE = re.compile(r"\s*(?:::|\\)\s*|(?<=\w):(?=\w)")
_METHOD_NAME = re.compile(r"::|(?<=\w):(?=\w)")  # `Shape::scale`, `M:load`: defined as a method
_OPERATOR = re.compile(r"\boperator\b")
# what a conversion operator's name node holds after its type: `operator bool() const`
_CONVERSION_PARAMETERS = re.compile(r"(?<=\boperator\s)([^()]*?)\s*\([^()]*\)[^()]*$")
_MODULE = -1  # owner index of lines outside every unit


@dataclass(frozen=True)
class Unit:
    """A unit's 1-based inclusive line span and qualified symbol."""

    start: int
    end: int
    symbol: str | None
    container: bool
    owns_lines: bool
    kind: str | None = None


class TreeSitterChunker:
    name = "ast"

    def __init__(self, *, max_chunk_chars: int = 2000) -> None:
        self.max_chunk_chars = max_chunk_chars
        self._lines = LineChunker(max_chunk_chars=max_chunk_chars)

    def chunk(self, key: str, text: str, language: str | None) -> list[Chunk]:
        """Unit and gap chunks sorted by (start_line, end_line); line windows when unparseable."""
        if language in DOCUMENTS:
            lines = split_lines(text)
            units = [Unit(start, end, symbol, container=True, owns_lines=True, kind="section")
                     for start, end, symbol in sections(lines, language)]
            return self._owned_chunks(key, lines, units, language)
        source, grammar_name = text, language
        if language in COMPONENTS:
            view = script_view(text)
            source, grammar_name = view if view is not None else (text, None)
        grammar = GRAMMARS.get(grammar_name) if grammar_name else None
        if grammar is None or grammar_name is None or language is None:
            return self._lines.chunk(key, text, language)
        lines = split_lines(text)
        source, macro_lines = blank_macros(source) if grammar.unexpanded_macros else (source, frozenset())
        try:
            tree = parse(grammar_name, source.encode("utf-8"))
        except ValueError:  # a parser failure costs the file its units, not its chunks
            return self._lines.chunk(key, text, language)
        units = with_macro_lines(find_units(tree.root_node, grammar, last_line=len(lines)), macro_lines)
        if not units and tree.root_node.has_error:
            return self._lines.chunk(key, text, language)
        return self._owned_chunks(key, lines, units, language)

    def _owned_chunks(
        self, key: str, lines: list[str], units: list[Unit], language: str
    ) -> list[Chunk]:
        owner = owner_by_line(units, len(lines))
        owned: dict[int, Numbered] = {}
        for number, line in enumerate(lines, start=1):
            owned.setdefault(owner[number], []).append((number, line))
        chunks: list[Chunk] = []
        for index, numbered in owned.items():
            symbol = None if index == _MODULE else units[index].symbol
            windows = window_chunks(
                key, numbered, max_bytes=self.max_chunk_chars, symbol=symbol, language=language
            )
            kind = None if index == _MODULE else units[index].kind
            chunks += [replace(c, kind=kind) for c in windows] if kind else windows
        return sorted(chunks, key=lambda c: (c.start_line, c.end_line))


def with_macro_lines(units: list[Unit], macro_lines: frozenset[int]) -> list[Unit]:
    """Each unit together with the blanked macro lines right above it (`ALLOC_FUNC` before a
    function, a template macro before a class), as a unit adopts its attributes."""
    if not macro_lines:
        return units
    out = []
    for unit in units:
        start = unit.start
        while start - 1 in macro_lines:
            start -= 1
        out.append(replace(unit, start=start) if start != unit.start else unit)
    return out


def owner_by_line(units: list[Unit], line_count: int) -> list[int]:
    """Index of each line's innermost owning unit (`_MODULE` if none); index 0 is unused.

    `units` is in pre-order, so a nested unit overwrites its parent's claim on its lines.
    """
    owner = [_MODULE] * (line_count + 1)
    for index, unit in enumerate(units):
        if unit.owns_lines:
            owner[unit.start : unit.end + 1] = [index] * (unit.end - unit.start + 1)
    return owner


def find_units(root: Node, grammar: Grammar, *, last_line: int) -> list[Unit]:
    """The units of a tree in pre-order: an enclosing unit comes before the units inside it."""
    units: list[Unit] = []
    # (depth, unit, whether it covers its following siblings) of the units around the cursor
    enclosing: list[tuple[int, Unit, bool]] = []
    cursor = root.walk()
    depth = 0
    while True:
        node = cursor.node
        assert node is not None  # a cursor from Node.walk() always stands on a node
        while enclosing and enclosing[-1][0] >= depth:  # left that unit's subtree
            enclosing.pop()
        # Named only: Ruby's `class` keyword token has the same type as its class node.
        rule = grammar.units.get(node.type) if node.is_named else None
        if rule is not None:
            if rule.covers_following:  # a second `package X;` ends the first one's reach
                while enclosing and enclosing[-1][2] and enclosing[-1][0] == depth - 1:
                    enclosing.pop()
            unit = make_unit(node, rule, grammar, [u for _, u, _ in enclosing], last_line)
            if unit is not None:
                units.append(unit)
                # At its parent's depth, a unit stays enclosing until the walk leaves the parent.
                at = depth - 1 if rule.covers_following else depth
                enclosing.append((at, unit, rule.covers_following))
        if cursor.goto_first_child():
            depth += 1
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return units
            depth -= 1


def make_unit(
    node: Node, rule: UnitRule, grammar: Grammar, enclosing: list[Unit], last_line: int
) -> Unit | None:
    """The unit a node forms under its rule, or None when the rule's conditions are not met."""
    if rule.needs:
        needed = resolve(node, rule.needs)
        if needed is None or (rule.needs_types and needed.type not in rule.needs_types):
            return None
        if rule.needs_text and node_text(needed) not in rule.needs_text:
            return None
    if rule.unless and resolve(node, rule.unless) is not None:
        return None
    if rule.top_level and not all(u.container for u in enclosing):
        return None
    if not rule.in_classes and any(u.kind in CLASS_LIKE for u in enclosing):
        return None
    start, end = unit_span(node, grammar, last_line)
    if start > end or end - start + 1 < rule.min_lines:
        return None
    parent_symbol = enclosing[-1].symbol if enclosing else None
    return Unit(
        start=start,
        end=end,
        symbol=unit_symbol(node, rule, parent_symbol),
        container=rule.container,
        owns_lines=not rule.scope_only,
        kind=unit_kind(node, rule, enclosing),
    )


def unit_kind(node: Node, rule: UnitRule, enclosing: list[Unit]) -> str | None:
    """What a unit is (the rule's kind, else grammars.KINDS): a function directly inside a
    class-like unit, or defined outside it under a qualified name (C++ `Shape::scale`, Lua
    `M:load`), is a method."""
    kind = rule.kind or KINDS.get(node.type)
    if rule.kinds is not None:
        by = resolve(node, rule.kind_from)
        kind = (None if by is None else rule.kinds.get(by.type) or rule.kinds.get(node_text(by))) or kind
    if kind != "function":
        return kind
    if enclosing and enclosing[-1].kind in CLASS_LIKE:
        return "method"
    name = resolve(node, rule.name)
    return "method" if name is not None and _METHOD_NAME.search(node_text(name)) else kind


def unit_span(node: Node, grammar: Grammar, last_line: int) -> tuple[int, int]:
    """1-based lines of a node together with its wrappers (decorators, export) and attributes."""
    top = node
    while top.parent is not None and top.parent.type in grammar.wrappers:
        top = top.parent
    first = top
    previous = top.prev_named_sibling
    absorbed = 0
    # each touches what it belongs to: a blank line ends the run
    while previous is not None and previous.type in grammar.leading and _touches(previous, first):
        first, previous = previous, previous.prev_named_sibling
        absorbed += 1
        if absorbed == grammar.leading_limit:
            break
    end_row, end_column = top.end_point
    if end_column == 0 and end_row > top.start_point[0]:
        end_row -= 1  # a node ending at column 0 ends with the previous line's newline
    return first.start_point[0] + 1, min(end_row + 1, last_line)


def _touches(previous: Node, node: Node) -> bool:
    return previous.end_point[0] >= node.start_point[0] - 1


def unit_symbol(node: Node, rule: UnitRule, parent_symbol: str | None) -> str | None:
    """`parent.owner.name`; an anonymous unit takes its parent's symbol."""
    name = unit_name(node, rule.name, symbolic=rule.symbolic) or rule.fixed_name
    if not name:
        return parent_symbol
    owner = clean_name(resolve(node, rule.qualifier))
    return ".".join(part for part in (parent_symbol, owner, name) if part)


def unit_name(node: Node, path: str, *, symbolic: bool = False) -> str | None:
    """The name a path leads to; a last step `@type+` joins every such child with '.'."""
    for alternative in path.split("|") if path else ():
        head, _, last = alternative.rpartition("/")
        if not last.endswith("+"):
            name = clean_name(resolve(node, alternative), symbolic=symbolic)
        else:
            parent = resolve(node, head) if head else node
            parts = [clean_name(c) for c in parent.named_children if c.type == last[1:-1]] if parent else []
            name = ".".join(p for p in parts if p)
        if name:
            return name
    return None


def clean_name(node: Node | None, *, symbolic: bool = False) -> str | None:
    """A name as a symbol segment: no type arguments, pointers or quotes; `::` and `\\` as '.'."""
    if node is None:
        return None
    raw = " ".join(node_text(node).split())
    if symbolic and raw.strip("()") and not any(ch.isalnum() or ch == "_" for ch in raw):
        return raw.strip("() ")  # an operator defined as a name: Haskell `(.:)`, Scala `+`
    operator = _OPERATOR.search(raw)
    text = _SCOPE.sub(".", raw[:operator.start()] if operator else raw)
    if operator:  # `operator<` and `operator bool` are names as they stand, and a conversion's type
        # keeps its `::` (`operator absl::string_view` defines no `string_view`)...
        text = _CONVERSION_PARAMETERS.sub(r"\1", text + raw[operator.start():])  # ...without its `() const`
    else:
        previous = None
        while previous != text:
            previous, text = text, _TYPE_ARGS.sub("", text)
        # Unexpanded macros can leave words before the name (`_If_sv append`); a specialisation's
        # arguments, a space before them (`iterator_types < It >`).
        text = text.strip().rsplit(" ", 1)[-1]
    text = text.strip("*&'\"` ")
    return text if any(ch.isalnum() or ch == "_" for ch in text) else None


def node_text(node: Node) -> str:
    """A node's source text (tree-sitter types `Node.text` as optional: None without source)."""
    return (node.text or b"").decode("utf-8", "replace")


def resolve(node: Node, path: str) -> Node | None:
    """The node a grammar path (see sai/chunking/grammars.py) leads to, or None."""
    for alternative in path.split("|") if path else ():
        current: Node | None = node
        for step in alternative.split("/"):
            current = _step(current, step) if current is not None else None
        if current is not None:
            return current
    return None


def _step(node: Node, step: str) -> Node | None:
    if step == "^":
        return node.parent
    if step.startswith("@"):
        return next((c for c in node.named_children if c.type == step[1:]), None)
    if step.startswith(">"):
        first = node.named_children[0] if node.named_children else None
        return first if first is not None and first.type == step[1:] else None
    if step.startswith("<"):
        previous = node.prev_named_sibling
        return previous if previous is not None and previous.type == step[1:] else None
    if step.endswith("*"):
        return _descend(node, step[:-1])
    return node.child_by_field_name(step)


def _descend(node: Node, field: str) -> Node | None:
    """Follow `field` down as far as it goes (C declarator chains end at the declared name)."""
    current = node.child_by_field_name(field)
    while current is not None:
        if current.type == "operator_cast":  # `operator bool() const`: its declarator is the `()`
            return current
        following = current.child_by_field_name(field)
        if following is None and current.type.endswith("_declarator") and current.named_children:
            following = current.named_children[0]
        if following is None:
            return current
        current = following
    return None
