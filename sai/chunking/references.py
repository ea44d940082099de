"""Uses of names in one file, from its tree-sitter parse: calls, imports, inheritance, types,
and every other identifier (sai/chunking/reference_tables.py says which node is which).

Nothing here needs another file: a use is bound to an import of its own file (`module`) or to its
class (`self.x` in a method of `Cart` is `Cart.x`, `target`); the query side (sai/query/references.py)
maps modules to files of the repository and says which uses it resolved.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node

from sai.chunking import reference_tables as tables
from sai.chunking.grammars import GRAMMARS
from sai.chunking.macros import blank_macros
from sai.chunking.parsers import parse
from sai.chunking.receiver_types import Typed, note_base, note_typed, type_of
from sai.chunking.sections import COMPONENTS, script_view
from sai.chunking.treesitter import node_text, resolve
from sai.models import MODULE_MARK, STAR_IMPORT, Chunk, Reference, chunk_id

REFS_VERSION = 3  # bump when extraction changes: indexes then read every file again (no re-embedding)
MAX_QUALIFIER = 80  # characters of a receiver kept (`a.b(c).d` reads as written up to this)
_SEPARATORS = re.compile(r"(?:\?\.|\.|->|::|:|\\)\s*$")
_METHOD_KINDS = frozenset({"method", "constructor", "destructor", "operator"})
_BODIES = frozenset({"block", "body", "statement_block", "compound_statement", "class_body"})
_CONTEXTS = (tables.IMPORTS.keys() | tables.HERITAGE_TYPES | tables.TYPE_CONTEXTS | _BODIES
             | tables.REQUIRE_DECLARATORS | tables.REEXPORTS)
_CONTEXT_FIELDS = tables.HERITAGE_FIELDS | tables.TYPE_FIELDS
# A use as the walk finds it: (name, kind, line, column, qualifier, module, the type of its receiver
# when a constructor call is the receiver: `Editor` of `Editor().edit()`).
_Found = tuple[str, str, int, int, str, str, str]


@dataclass
class _Facts:
    """What the walk learns of the file besides its uses: methods naming their receiver (first
    line, last line, name), names given a type (receiver_types.Typed), each class's first base,
    and whether a member assignment declares the member (MEMBER_DECLARING_GRAMMARS)."""

    member_declares: bool = False
    receivers: list[tuple[int, int, str]] = field(default_factory=list)
    typed: list[Typed] = field(default_factory=list)
    bases: dict[str, str] = field(default_factory=dict)


def references(text: str, language: str | None, chunks: list[Chunk]) -> list[Reference]:
    """Every use of a name in `text`, in source order, each with the unit of `chunks` around it."""
    source, grammar_name = text, language
    if language in COMPONENTS:
        view = script_view(text)
        if view is None:
            return []
        source, grammar_name = view
    if grammar_name not in GRAMMARS:
        return []
    if GRAMMARS[grammar_name].unexpanded_macros:
        source = blank_macros(source)[0]
    try:
        tree = parse(grammar_name, source.encode("utf-8"))
    except ValueError:
        return []
    facts = _Facts(member_declares=grammar_name in tables.MEMBER_DECLARING_GRAMMARS)
    found = list(_walk(tree.root_node, facts))
    if grammar_name in tables.ES_MODULE_GRAMMARS and any(
            child.type in tables.ES_MODULE_STATEMENTS for child in tree.root_node.children):
        found.insert(0, (MODULE_MARK, "import", 1, 0, "", "", ""))
    return _bound(found, chunks, facts)


def _walk(root: Node, facts: _Facts) -> Iterator[_Found]:
    """Uses in pre-order; a call's callee is claimed by the call, the identifiers of an import
    by the import, those of a superclass list or type position by that context. What else the
    file says of its names goes to `facts`. One cursor walks the tree (a node's field is the
    cursor's: no per-child look-ups); `contexts` holds, per depth, the context its children inherit."""
    claimed: dict[tuple[int, int], tuple[str, str]] = {}  # a callee's leaf span -> (qualifier, receiver type)
    contexts: list[tuple[str, str]] = [("other", "")]
    cursor = root.walk()
    while True:
        node = cursor.node
        assert node is not None  # a cursor from Node.walk() always stands on a node
        if node.is_named:
            kind, field = node.type, cursor.field_name
            context, module = contexts[-1]
            if kind in _CONTEXTS or field in _CONTEXT_FIELDS:
                context, module = _context(node, kind, field, context, module)
            if kind in tables.CALLS:
                _claim_callee(node, claimed)
            elif kind in tables.RECEIVER_NAMES:
                _note_receiver(node, facts.receivers)
            if kind in tables.TYPED_NAMES:
                note_typed(node, facts.typed)
            if kind in tables.CLASS_BASES:
                note_base(node, facts.bases)
            if not node.child_count:
                found = _use(node, field, context, module, claimed, facts.member_declares)
                if found is not None:
                    yield found
            else:
                if context == "import" and kind in tables.IMPORTS and not _has_name(node):
                    yield _module_use(node, module)
                if context == "import" and (kind in tables.WILDCARD_IMPORTS or (
                        kind in tables.REEXPORTS and node.named_child_count == 1)):  # `export * from "./m"`
                    yield (STAR_IMPORT, "import", node.start_point[0] + 1, node.start_point[1], "", module, "")
                if cursor.goto_first_child():
                    contexts.append((context, module))
                    continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
            contexts.pop()


def _context(node: Node, kind: str, field: str | None, context: str, module: str) -> tuple[str, str]:
    if kind in tables.IMPORTS:
        return "import", _module_of(node)
    if kind in tables.REEXPORTS:
        source = node.child_by_field_name("source")
        return ("import", node_text(source).strip("\"'`")) if source is not None else (context, module)
    if kind in tables.REQUIRE_DECLARATORS:
        required = _required(node)
        return ("import", required) if required else (context, module)
    if context == "import" or context == "inherit":
        return context, module
    if kind in tables.HERITAGE_TYPES or field in tables.HERITAGE_FIELDS:
        return "inherit", module
    if kind in tables.TYPE_CONTEXTS or field in tables.TYPE_FIELDS:
        return "type", module
    if kind in _BODIES:
        return "other", module
    return context, module


def _note_receiver(node: Node, receivers: list[tuple[int, int, str]]) -> None:
    named = resolve(node, tables.RECEIVER_NAMES[node.type])
    if named is not None:
        receivers.append((node.start_point[0] + 1, node.end_point[0] + 1, node_text(named)))


def _module_of(node: Node) -> str:
    path = tables.IMPORTS[node.type]
    target = resolve(node, path) if path else None
    text = node_text(target) if target is not None else node_text(node).split(None, 1)[-1]
    return " ".join(text.split()).strip("\"'<>;`")[:200]


def _required(node: Node) -> str:
    """"./m" of `const x = require("./m")` (CommonJS), '' for any other declarator."""
    value = node.child_by_field_name("value")
    if value is None or value.type != "call_expression":
        return ""
    function, arguments = value.child_by_field_name("function"), value.child_by_field_name("arguments")
    if function is None or node_text(function) != "require" or arguments is None or arguments.named_child_count != 1:
        return ""
    argument = arguments.named_children[0]
    return node_text(argument).strip("\"'`") if argument.type == "string" else ""


def _has_name(node: Node) -> bool:
    """Whether an import holds an identifier of its own (Go's `import "fmt"` holds only a string)."""
    cursor = [node]
    while cursor:
        current = cursor.pop()
        if current.child_count == 0 and _is_name(current):
            return True
        cursor.extend(current.named_children)
    return False


def _module_use(node: Node, module: str) -> _Found:
    """An import naming no identifier binds its module's last segment (`fmt`, `foo` of "foo.h")."""
    name = re.split(r"[/.:\\]+", module.rstrip("/"))
    last = name[-1] if name[-1] not in ("h", "hpp", "js", "ts", "py") or len(name) < 2 else name[-2]
    row, column = node.start_point
    return (last or module, "import", row + 1, column, "", module, "")


def _claim_callee(node: Node, claimed: dict[tuple[int, int], tuple[str, str]]) -> None:
    path = tables.CALLS[node.type]
    callee = resolve(node, path) if path else node
    if callee is None:
        return
    leaf = _last_name(callee)
    if leaf is None:
        return
    before = "".join(node_text(callee)[: leaf.start_byte - callee.start_byte].split())
    # inside an unclosed parenthesis the name is no member: `(ok ? f : g)(x)` calls g itself
    qualifier = "" if before.count("(") > before.count(")") else _SEPARATORS.sub("", before)[:MAX_QUALIFIER]
    receiver = callee.named_children[0] if qualifier and callee.named_child_count == 2 else None
    constructed = type_of(receiver) if receiver is not None and receiver.type in tables.CONSTRUCTIONS else ""
    claimed[(leaf.start_byte, leaf.end_byte)] = (qualifier, constructed)


def _last_name(node: Node) -> Node | None:
    """The identifier a callee ends with: itself, or its last named descendant that names
    (`os.path.join` -> `join`; `foo::<T>` -> `foo`, its type arguments skipped)."""
    current: Node | None = node
    while current is not None and current.child_count:
        names = [c for c in current.named_children if "argument" not in c.type]
        current = names[-1] if names else None
    return current if current is not None and _is_name(current) else None


def _is_name(node: Node) -> bool:
    return node.is_named and (node.type.endswith("identifier") or node.type in tables.NAME_LEAVES)


def _use(node: Node, field: str | None, context: str, module: str, claimed: dict[tuple[int, int], tuple[str, str]],
         member_declares: bool) -> _Found | None:
    if not _is_name(node) and not (context == "import" and node.type in tables.REQUIRED_NAMES):
        return None
    row, column = node.start_point
    name = node_text(node)
    call = claimed.get((node.start_byte, node.end_byte))
    if call is not None:
        return (name, "call", row + 1, column, call[0], "", call[1])
    if context == "import":
        return (name, "import", row + 1, column, "", module, "")
    if name in tables.SELF_RECEIVERS or _defines(node, field, member_declares) or _keyword(node, field):
        return None
    if context == "other" and node.type.endswith("type_identifier"):
        context = "type"
    return (name, context, row + 1, column, _receiver(node, field), "", "")


def _defines(node: Node, field: str | None, member_declares: bool) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if "parameter" in parent.type and field not in tables.TYPE_FIELDS:
        return True
    if field in tables.DEFINING_FIELDS and tables.DEFINING_PARENT.search(parent.type):
        # `enum op x;` names a type defined elsewhere: only a specifier with a body defines it
        return parent.type not in tables.TAG_SPECIFIERS or parent.child_by_field_name("body") is not None
    if field == "key" and node.type in tables.PROPERTY_KEYS:
        return True
    return _assigned_member(node, parent, member_declares)


def _keyword(node: Node, field: str | None) -> bool:
    """`locate` of `f(locate=True)`: the name of the callee's parameter."""
    return field == "name" and node.parent is not None and node.parent.type in tables.KEYWORD_ARGUMENTS


def _assigned_member(node: Node, parent: Node, member_declares: bool) -> bool:
    """`self.items = []`: the member written is defined there (as `items = []` defines a name);
    in JavaScript `app.listen = function …` too (MEMBER_DECLARING_GRAMMARS)."""
    target = parent.parent
    if target is None or parent.named_child_count != 2 or parent.named_children[-1].id != node.id:
        return False
    left = target.child_by_field_name("left")
    declaring = bool(tables.DEFINING_PARENT.search(target.type)) or (
        member_declares and target.type == "assignment_expression")
    return left is not None and left.id == parent.id and declaring


def _receiver(node: Node, field: str | None) -> str:
    """The object a member is read from: `self` of `self.items`, and in a member read
    (MEMBER_ACCESS) any object as written (`click.utils` of `click.utils.open_file`). A name in
    another field (`y` of `x = y`, of `f(x=y)`, of `{x: y}`) has none."""
    parent = node.parent
    if field not in tables.MEMBER_FIELDS or parent is None or parent.named_child_count != 2 \
            or parent.named_children[-1].id != node.id:
        return ""
    first = parent.named_children[0]
    if first.child_count == 0:
        return node_text(first)
    return "".join(node_text(first).split())[:MAX_QUALIFIER] if parent.type in tables.MEMBER_ACCESS else ""


def _bound(found: list[_Found], chunks: list[Chunk], facts: _Facts) -> list[Reference]:
    """Each use with its module (a name or receiver its file imported), its target when its
    receiver's class is known (its own class, a type the file gives it, the class's base for
    `super()`), and the innermost chunk around it."""
    bindings = {name: module for name, kind, _, _, _, module, _ in found if kind == "import" and module}
    owner = _owners(chunks)
    ids = {id(c): chunk_id(c.path, c.start_line, c.end_line, c.content_hash) for c in chunks}
    typed = _scoped_types(facts.typed, owner)
    out = []
    for name, kind, line, column, qualifier, module, constructed in found:
        chunk = owner[line] if line < len(owner) else None
        head = qualifier.split(".", 1)[0] if qualifier else ""
        if kind != "import":
            module = bindings.get(head if head else name, "")
        target = _own_member(name, line, chunk, qualifier, facts.receivers)
        written = "" if target or kind == "import" else constructed or _receiver_type(qualifier, chunk, typed, facts)
        if written:
            target, module = _typed_target(written, name, bindings)
        if chunk is None:
            out.append(Reference(name, kind, line, column, qualifier, module, target))
            continue
        out.append(Reference(name, kind, line, column, qualifier, module, target, chunk.symbol, chunk.start_line,
                             chunk.end_line, ids[id(chunk)], chunk.language))
    return out


def _typed_target(written: str, name: str, bindings: dict[str, str]) -> tuple[str, str]:
    """(`Parameter.name`, the module it is read from) for a receiver of type `core.Parameter`:
    the module its first segment was imported from, and that module's `core` when the import
    named a package (`from . import core`, as module_files reads `mod.f()`)."""
    parts = written.replace("::", ".").split(".")
    module = bindings.get(parts[0], "")
    if module and len(parts) > 1 and parts[0] != re.split(r"[./:\\]+", module.rstrip("./"))[-1]:
        module = f"{module.rstrip('.')}.{parts[0]}" if module.strip(".") else f"{module}{parts[0]}"
    return f"{parts[-1]}.{name}", module


def _own_member(name: str, line: int, chunk: Chunk | None, qualifier: str,
                receivers: list[tuple[int, int, str]]) -> str:
    """`Cart.total` for `self.total` (or Go's `s.total` with receiver `s`) in a method of Cart;
    never for a member of a member (`self.items.append`)."""
    if not qualifier:
        return ""
    own = qualifier in tables.SELF_RECEIVERS or any(a <= line <= b and qualifier == n for a, b, n in receivers)
    if not own or chunk is None or chunk.kind not in _METHOD_KINDS or not chunk.symbol:
        return ""
    owner = chunk.symbol.rpartition(".")[0]
    return f"{owner}.{name}" if owner else ""


def _scoped_types(typed: list[Typed], owner: list[Chunk | None]) -> dict[tuple[str | None, str], str]:
    """(the unit's symbol, None at module level; a name) -> the type its declarations give it,
    '' when two of them disagree (a name re-bound to another type is not guessed at)."""
    out: dict[tuple[str | None, str], str] = {}
    for line, name, written in typed:
        chunk = owner[line] if line < len(owner) else None
        key = (chunk.symbol if chunk is not None else None, name)
        out[key] = written if out.get(key, written) == written else ""
    return out


def _receiver_type(qualifier: str, chunk: Chunk | None, typed: dict[tuple[str | None, str], str],
                   facts: _Facts) -> str:
    """The type of a receiver written as one name: its class's first base for `super()` in a
    method, else the type its unit (or the module) gives it."""
    if qualifier in tables.SUPER_RECEIVERS:
        if chunk is None or chunk.kind not in _METHOD_KINDS or not chunk.symbol:
            return ""
        return facts.bases.get(chunk.symbol.rpartition(".")[0].rsplit(".", 1)[-1], "")
    if not qualifier.isidentifier():
        return ""
    scope = chunk.symbol if chunk is not None else None
    return typed.get((scope, qualifier)) or typed.get((None, qualifier), "")


def _owners(chunks: list[Chunk]) -> list[Chunk | None]:
    """The shortest chunk holding each line (index: line number): a method's, not its class's."""
    last = max((c.end_line for c in chunks), default=0)
    owner: list[Chunk | None] = [None] * (last + 2)
    for chunk in sorted(chunks, key=lambda c: c.end_line - c.start_line, reverse=True):
        owner[chunk.start_line : chunk.end_line + 1] = [chunk] * (chunk.end_line - chunk.start_line + 1)
    return owner
