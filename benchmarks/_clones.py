"""Language-aware clones of real functions, through tree-sitter: what duplicates_recall.py plants.

A clone of a function renames what the function owns (its own name, its parameters, its local
variables: the identifiers it declares) and, but for the `textual` renaming, keeps everything
else: member and attribute names, types, keywords, literals, calls to other functions. Each copy
draws its names afresh (seeded by the function and the flavour). Renamings (RENAMINGS): renamed
(a thesaurus), vocabulary (words drawn from VOCABULARY), abbreviated, opaque, textual (a
vocabulary rename by search-and-replace over the whole text: members, strings and comments
sharing a name change with it) and literals (a vocabulary rename, every number and every
string's words changed). Type-3 near-misses: edited (one statement removed, added or changed)
and reordered (two adjacent independent assignments swapped; only where the function has such
a pair).

Everything is a byte-range edit of the original source, so the copy keeps the original's layout
and comments (the syntax renamings drop comments and Python docstrings, so the model cannot
match a copy by its prose); a statement-level edit (remove, swap) carries the renames inside
its range with it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from tree_sitter import Node

from sai.chunking.parsers import parser_for

# renamings (a copy's names changed, nothing else): the target; then Type-3 near-misses
RENAMINGS = ("renamed", "vocabulary", "abbreviated", "opaque", "textual", "literals")
FLAVOURS = (*RENAMINGS, "edited", "reordered")
# plausible identifier words a `vocabulary` copy builds its names from (drawn per copy)
VOCABULARY = """account action active address agent amount answer area array batch block body
    buffer cache call case cell chain change channel check child chunk claim client code column
    config context count cursor data date delta detail device digest domain draft entry error event
    extra factor field filter flag frame group guard handle hash head holder host image index info
    input item job key kind label layer limit line link list load lock mark match member message
    meta mode model name node note number object offset option order origin output owner packet
    page pair parent part path peer phase pool port prefix queue range rank rate record ref region
    reply report request result role root route row rule scope seed session shape signal size slot
    source span stage state status step store stream suffix table tag target task term text thing
    ticket token total track tree type unit user value version view weight window worker zone""".split()


@dataclass(frozen=True)
class Rules:
    """How one language declares names, names members, groups statements and prints."""

    functions: frozenset[str]
    declares: tuple[tuple[str, str | None], ...]  # (node type, field; None: direct children)
    stops: frozenset[str]  # node types a declared pattern is not searched through
    members: tuple[tuple[str, str], ...] = ()  # (parent type, field): an identifier kept as is
    keep: frozenset[str] = frozenset()  # names never renamed (receivers the language fixes)
    blocks: frozenset[str] = frozenset({"block"})
    assigns: frozenset[str] = frozenset()  # statement types that may swap
    calls: frozenset[str] = frozenset()
    debug: str = 'print("debug")'
    shorthand: frozenset[str] = frozenset()  # `{a}` written for a local a: becomes `{a: new}`
    camel: bool = True  # names are camelCase (else snake_case)
    identifier: str = "identifier"  # the grammar's node type of a plain name


_JS_DECL = (("formal_parameters", None), ("required_parameter", "pattern"),
            ("optional_parameter", "pattern"), ("variable_declarator", "name"),
            ("arrow_function", "parameter"), ("catch_clause", "parameter"),
            ("for_in_statement", "left"), ("assignment_pattern", "left"),
            ("rest_pattern", None), ("array_pattern", None), ("pair_pattern", "value"))
_JS = Rules(
    functions=frozenset({"function_declaration", "method_definition", "generator_function_declaration"}),
    declares=_JS_DECL,
    stops=frozenset({"member_expression", "subscript_expression", "call_expression", "type_annotation",
                     "object_pattern", "object"}),
    blocks=frozenset({"statement_block"}),
    assigns=frozenset({"lexical_declaration", "variable_declaration"}),
    calls=frozenset({"call_expression", "new_expression", "await_expression"}),
    debug='console.log("debug");',
    shorthand=frozenset({"shorthand_property_identifier"}),
)
RULES: dict[str, Rules] = {
    "python": Rules(
        functions=frozenset({"function_definition"}),
        declares=(("parameters", None), ("lambda_parameters", None), ("typed_parameter", None),
                  ("default_parameter", "name"), ("typed_default_parameter", "name"),
                  ("list_splat_pattern", None), ("dictionary_splat_pattern", None),
                  ("assignment", "left"), ("augmented_assignment", "left"), ("for_statement", "left"),
                  ("for_in_clause", "left"), ("as_pattern", "alias"), ("named_expression", "name")),
        stops=frozenset({"attribute", "subscript", "call", "type"}),
        members=(("attribute", "attribute"), ("keyword_argument", "name")),
        keep=frozenset({"self", "cls"}),
        assigns=frozenset({"expression_statement"}),
        calls=frozenset({"call", "await", "yield"}),
        blocks=frozenset({"block"}),
        camel=False,
    ),
    "javascript": _JS,
    "typescript": _JS,
    "go": Rules(
        functions=frozenset({"function_declaration", "method_declaration"}),
        declares=(("parameter_declaration", "name"), ("variadic_parameter_declaration", "name"),
                  ("short_var_declaration", "left"), ("var_spec", "name"), ("range_clause", "left"),
                  ("expression_list", None)),
        stops=frozenset({"selector_expression", "index_expression", "call_expression"}),
        assigns=frozenset({"short_var_declaration", "var_declaration"}),
        calls=frozenset({"call_expression"}),
        debug='fmt.Println("debug")',
    ),
    "rust": Rules(
        functions=frozenset({"function_item"}),
        declares=(("parameter", "pattern"), ("let_declaration", "pattern"), ("for_expression", "pattern"),
                  ("closure_parameters", None), ("tuple_pattern", None), ("ref_pattern", None),
                  ("mut_pattern", None), ("reference_pattern", None)),
        stops=frozenset({"field_expression", "call_expression", "scoped_identifier",
                         "tuple_struct_pattern", "struct_pattern"}),
        members=(("scoped_identifier", "name"), ("scoped_identifier", "path")),
        keep=frozenset({"self"}),
        assigns=frozenset({"let_declaration"}),
        calls=frozenset({"call_expression", "macro_invocation", "await_expression"}),
        debug='println!("debug");',
        shorthand=frozenset({"shorthand_field_initializer"}),
        camel=False,
    ),
    "java": Rules(
        functions=frozenset({"method_declaration", "constructor_declaration"}),
        declares=(("formal_parameter", "name"), ("variable_declarator", "name"),
                  ("enhanced_for_statement", "name"), ("catch_formal_parameter", "name"),
                  ("lambda_expression", "parameters"), ("inferred_parameters", None),
                  ("resource", "name")),
        stops=frozenset({"field_access", "method_invocation", "formal_parameters"}),
        members=(("field_access", "field"), ("method_invocation", "name")),
        assigns=frozenset({"local_variable_declaration"}),
        calls=frozenset({"method_invocation", "object_creation_expression"}),
        debug='System.out.println("debug");',
    ),
    # languages added with the per-grammar wheels (one each with a real repository in _repos.py)
    "lua": Rules(
        functions=frozenset({"function_declaration"}),
        declares=(("parameters", None), ("variable_list", None), ("for_numeric_clause", "name")),
        stops=frozenset({"dot_index_expression", "method_index_expression", "bracket_index_expression",
                         "function_call"}),
        members=(("dot_index_expression", "field"), ("method_index_expression", "method")),
        keep=frozenset({"self"}),
        assigns=frozenset({"variable_declaration"}),
        calls=frozenset({"function_call"}),
        camel=False,
    ),
    "zig": Rules(
        functions=frozenset({"function_declaration"}),
        declares=(("parameter", "name"), ("variable_declaration", None), ("payload", None)),
        stops=frozenset({"field_expression", "call_expression", "index_expression", "builtin_function"}),
        members=(("field_expression", "member"),),
        assigns=frozenset({"variable_declaration"}),
        calls=frozenset({"call_expression", "builtin_function"}),
        debug='std.debug.print("debug", .{});',
    ),
    "swift": Rules(
        functions=frozenset({"function_declaration"}),
        declares=(("parameter", "name"), ("pattern", "bound_identifier"), ("lambda_parameter", "name")),
        stops=frozenset({"navigation_expression", "call_expression"}),
        members=(("navigation_suffix", "suffix"),),
        keep=frozenset({"self"}),
        blocks=frozenset({"statements"}),
        assigns=frozenset({"property_declaration"}),
        calls=frozenset({"call_expression"}),
        identifier="simple_identifier",
    ),
    "scala": Rules(
        functions=frozenset({"function_definition"}),
        declares=(("parameter", "name"), ("val_definition", "pattern"), ("var_definition", "pattern"),
                  ("lambda_expression", "parameters"), ("enumerator", None), ("bindings", None)),
        stops=frozenset({"field_expression", "call_expression"}),
        members=(("field_expression", "field"),),
        assigns=frozenset({"val_definition", "var_definition"}),
        calls=frozenset({"call_expression"}),
        debug='println("debug")',
    ),
}
# data flow is what independence means here: a call may run in either order, a suspension not
_SUSPENDS = frozenset({"await", "await_expression", "yield", "yield_expression"})
_NUMBERS = frozenset({"integer", "number", "int_literal", "integer_literal", "decimal_integer_literal"})
# the text inside a string literal's quotes, by grammar
_STRING_CONTENT = frozenset({"string_content", "string_fragment", "interpreted_string_literal_content",
                             "raw_string_literal_content", "string_literal_content", "string_content_"})
_WHOLE_STRINGS = frozenset({"interpreted_string_literal", "string_literal"})  # Go, Rust: no content node
_COMPARISONS = {"==": "!=", "!=": "==", "===": "!==", "!==": "===", "<": "<=", ">": ">=",
                 "<=": "<", ">=": ">"}


@dataclass
class Function:
    """A function node of a parsed file and what the clones need of it."""

    language: str
    source: bytes
    node: Node
    name_node: Node | None
    owned: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.name_node.text.decode() if self.name_node is not None else ""


def functions_of(source: bytes, language: str) -> list[Function]:
    """Every function or method node of the file, with the names it owns."""
    rules = RULES[language]
    tree = parser_for(language).parse(source)
    out = []
    for node in _walk(tree.root_node):
        if node.type in rules.functions:
            fn = Function(language, source, node, node.child_by_field_name("name"))
            fn.owned = owned_names(fn)
            out.append(fn)
    return out


def owned_names(fn: Function) -> list[str]:
    """Identifiers the function declares (parameters and locals), in first-seen order."""
    rules = RULES[fn.language]
    seen: dict[str, None] = {}
    for node in _walk(fn.node):
        for kind, name in rules.declares:
            if node.type != kind:
                continue
            parts = node.children_by_field_name(name) if name else node.named_children
            for part in parts:
                for ident in _pattern_identifiers(part, rules):
                    seen.setdefault(ident.text.decode(), None)
    return [n for n in seen if n not in rules.keep and n != fn.name and n.strip("_")]


def _pattern_identifiers(node: Node, rules: Rules) -> list[Node]:
    if node.type == rules.identifier:
        return [node]
    if node.type in rules.stops or node.type in rules.calls:
        return []
    if node.type in ("default_parameter", "typed_default_parameter", "assignment_pattern",
                     "variable_declarator"):
        first = node.child_by_field_name("name") or node.child_by_field_name("left")
        return _pattern_identifiers(first, rules) if first is not None else []
    if node.type in ("pair_pattern",):
        value = node.child_by_field_name("value")
        return _pattern_identifiers(value, rules) if value is not None else []
    out: list[Node] = []
    for child in node.named_children:
        if child.type not in ("type", "type_annotation", "type_identifier"):
            out += _pattern_identifiers(child, rules)
    return out


# --- names ------------------------------------------------------------------------------------


def words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in spaced.lower().split("_") if w]


def join(parts: list[str], *, like: str, camel: bool = False) -> str:
    """Parts joined in the style of `like` (snake_case, camelCase or PascalCase); a one-word
    lower-case name takes the language's style."""
    if "_" in like.strip("_") or (like.lower() == like and not camel):
        return "_".join(parts)
    head = parts[0].capitalize() if like[:1].isupper() else parts[0]
    return head + "".join(p.capitalize() for p in parts[1:])


def name_mapping(fn: Function, *, flavour: str, fid: int, thesaurus: dict[str, str],
                 reserved: frozenset[str]) -> dict[str, str]:
    """Old -> new name for the function's own name and every name it owns; each copy draws its
    own names (seeded by the function and the flavour), so no two copies are renamed alike."""
    rng = random.Random(f"{fid}/{flavour}")
    camel = RULES[fn.language].camel
    taken_text = set(re.findall(r"[A-Za-z_$][\w$]*", fn.node.text.decode())) | set(reserved)
    mapping: dict[str, str] = {}
    for number, name in enumerate([fn.name, *fn.owned] if fn.name else fn.owned):
        new = _new_name(name, number, flavour=flavour, rng=rng, thesaurus=thesaurus, camel=camel)
        if new.lower() == name.lower().strip("_") or new in taken_text:
            new = join([*words(new), "alt"], like=name, camel=camel)
        while new in taken_text:
            new += "2"
        mapping[name] = new
        taken_text.add(new)
    return mapping


def _new_name(name: str, number: int, *, flavour: str, rng: random.Random, thesaurus: dict[str, str],
              camel: bool) -> str:
    parts = words(name) or ["x"]
    if flavour == "opaque":
        return f"{rng.choice('abcfgkmpqtuvxyz')}{rng.randrange(10)}{number}"
    if flavour in ("vocabulary", "textual", "literals"):
        # as many words as the old name (at most 3), so long names stay long
        return join(rng.sample(VOCABULARY, min(3, len(parts))), like=name, camel=camel)
    if flavour == "abbreviated":
        return join([_abbreviation(w, rng) for w in parts], like=name, camel=camel)
    return join([thesaurus.get(w, w) for w in parts], like=name, camel=camel)


def _abbreviation(word: str, rng: random.Random) -> str:
    """`request` -> `req`, `rqst` or `r`: a prefix, the consonant skeleton or the initial."""
    if len(word) <= 2:
        return word + word[-1]
    skeleton = word[0] + re.sub(r"[aeiou]", "", word[1:])
    return rng.choice([word[:3], skeleton[:4], word[0]])


# --- edits ------------------------------------------------------------------------------------

Edit = tuple[int, int, str]  # replace source[start:end] (absolute bytes) with the text


def clone(fn: Function, *, flavour: str, fid: int, thesaurus: dict[str, str],
          reserved: frozenset[str]) -> str | None:
    """The copy's source (from the start of the function's first line), or None when the flavour
    does not apply (reordered without an independent pair)."""
    base = "renamed" if flavour in ("edited", "reordered") else flavour
    mapping = name_mapping(fn, flavour=base, fid=fid, thesaurus=thesaurus, reserved=reserved)
    first = _with_decorations(fn.node)
    start = fn.source.rfind(b"\n", 0, first.start_byte) + 1
    if flavour == "textual":
        # a rename by text: every whole-word occurrence, in strings, comments and members too
        text = fn.source[start:fn.node.end_byte].decode()
        pattern = re.compile(r"(?<![\w$])(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True)))
                             + r")(?![\w$])")
        return pattern.sub(lambda m: mapping[m.group(1)], text)
    renames = sorted([*rename_edits(fn, mapping), *comment_edits(fn)])
    if flavour == "reordered":
        pair = independent_pair(fn)
        if pair is None:
            return None
        renames = _swap(fn, *pair, renames)
    elif flavour == "edited":
        renames = _edit(fn, fid, renames)
    elif flavour == "literals":
        renames = sorted([*renames, *_literal_edits(fn, random.Random(f"{fid}/literals"))])
    return _apply(fn.source, start, fn.node.end_byte, renames)


def _literal_edits(fn: Function, rng: random.Random) -> list[Edit]:
    """Every number changed and every string's words replaced (`"invalid url"` -> `"bad link"`)."""
    edits = []
    for node in _walk(fn.node):
        text = node.text.decode()
        if node.type in _NUMBERS and text.isdigit():
            edits.append((node.start_byte, node.end_byte, str(int(text) + rng.randrange(1, 9))))
        elif node.type in _STRING_CONTENT:
            edits.append((node.start_byte, node.end_byte, _new_words(text, rng)))
        elif (node.type in _WHOLE_STRINGS and text.startswith('"') and len(text) > 1
              and not any(c.type in _STRING_CONTENT for c in node.children)):
            edits.append((node.start_byte + 1, node.end_byte - 1, _new_words(text[1:-1], rng)))
    return edits


def _new_words(text: str, rng: random.Random) -> str:
    return re.sub(r"(?<![\\{])[A-Za-z]+", lambda _: rng.choice(VOCABULARY), text)


def _with_decorations(node: Node) -> Node:
    """The first node of the function as copied: its decorators (Python) or attributes (Rust)
    go with it, as they go with its chunk."""
    if node.parent is not None and node.parent.type == "decorated_definition":
        return node.parent
    first = node
    while first.prev_named_sibling is not None and first.prev_named_sibling.type == "attribute_item":
        first = first.prev_named_sibling
    return first


def rename_edits(fn: Function, mapping: dict[str, str]) -> list[Edit]:
    rules = RULES[fn.language]
    edits = []
    if fn.name_node is not None and fn.name in mapping:
        edits.append((fn.name_node.start_byte, fn.name_node.end_byte, mapping[fn.name]))
    for node in _walk(fn.node):
        text = node.text.decode()
        if node.type in rules.shorthand and text in mapping:
            edits.append((node.start_byte, node.end_byte, f"{text}: {mapping[text]}"))
            continue
        if node.type != rules.identifier or text not in mapping or node == fn.name_node:
            continue
        if node.parent is not None and node.parent.type in rules.shorthand:
            continue
        if _is_member(node, rules):
            continue
        edits.append((node.start_byte, node.end_byte, mapping[text]))
    return sorted(set(edits))


def comment_edits(fn: Function) -> list[Edit]:
    """Remove the function's comments and, in Python, its docstring: as the stdlib copies do, so
    the model cannot match a copy by its prose alone."""
    doomed = [n for n in _walk(fn.node) if "comment" in n.type]
    body = fn.node.child_by_field_name("body")
    if fn.language == "python" and body is not None and body.named_child_count > 1:
        first = body.named_children[0]
        if first.type == "expression_statement" and [c.type for c in first.named_children] == ["string"]:
            doomed.append(first)
    edits = []
    for node in doomed:
        start = fn.source.rfind(b"\n", 0, node.start_byte)
        if fn.source[start + 1:node.start_byte].strip():  # code before it on its line
            start = node.start_byte
            while fn.source[start - 1:start] in (b" ", b"\t"):
                start -= 1
        edits.append((start, node.end_byte, ""))
    return edits


def _is_member(node: Node, rules: Rules) -> bool:
    parent = node.parent
    if parent is None:
        return False
    for kind, name in rules.members:
        if parent.type == kind:
            target = parent.child_by_field_name(name)
            if target is not None and target.start_byte == node.start_byte and target.end_byte == node.end_byte:
                return True
    return False


def statements(fn: Function) -> list[list[Node]]:
    """The statement lists of the function's blocks (comments left out), outermost first."""
    rules = RULES[fn.language]
    return [[c for c in node.named_children if "comment" not in c.type]
            for node in _walk(fn.node) if node.type in rules.blocks]


def independent_pair(fn: Function) -> tuple[Node, Node] | None:
    """The first adjacent pair of simple declarations/assignments that cannot see each other."""
    rules = RULES[fn.language]
    for block in statements(fn):
        for a, b in zip(block, block[1:], strict=False):
            if a.type in rules.assigns and b.type in rules.assigns and _independent(a, b, rules):
                return a, b
    return None


def _independent(a: Node, b: Node, rules: Rules) -> bool:
    if any(n.type in _SUSPENDS or n.type in rules.stops for s in (a, b) for n in _walk(_left(s))):
        return False
    if any(n.type in _SUSPENDS for s in (a, b) for n in _walk(s)):
        return False
    if a.start_point[0] == b.start_point[0] or b.end_point[0] > a.end_point[0] + 3:
        return False
    ids = [{n.text for n in _walk(s) if n.type == rules.identifier} for s in (a, b)]
    written = [{n.text for n in _walk(_left(s)) if n.type == rules.identifier} for s in (a, b)]
    if not written[0] or not written[1]:
        return False
    return not (written[0] & ids[1] or written[1] & ids[0])


def _left(stmt: Node) -> Node:
    """The written side of an assignment or declaration statement (the statement if unknown)."""
    node = stmt
    if node.type == "expression_statement" and node.named_child_count:
        node = node.named_children[0]
        if node.type not in ("assignment", "augmented_assignment"):
            return node  # not an assignment: all of it counts as written
    for name in ("left", "pattern", "name"):
        part = node.child_by_field_name(name)
        if part is not None:
            return part
    declarator = next((c for c in node.named_children if c.type in ("variable_declarator", "var_spec")), None)
    if declarator is not None:
        part = declarator.child_by_field_name("name")
        return part if part is not None else declarator
    return node


def _swap(fn: Function, a: Node, b: Node, renames: list[Edit]) -> list[Edit]:
    text_a = _apply(fn.source, a.start_byte, a.end_byte, renames)
    text_b = _apply(fn.source, b.start_byte, b.end_byte, renames)
    between = fn.source[a.end_byte:b.start_byte].decode()
    outside = [e for e in renames if e[1] <= a.start_byte or e[0] >= b.end_byte]
    return sorted([*outside, (a.start_byte, b.end_byte, text_b + between + text_a)])


def _edit(fn: Function, fid: int, renames: list[Edit]) -> list[Edit]:
    """One Type-3 edit, by fid: remove the smallest statement, add a debug print, or change a
    literal or comparison (removal when the function has neither)."""
    kind = fid % 3
    if kind == 2:
        change = _changed_token(fn)
        if change is not None:
            return sorted([*renames, change])
    blocks = statements(fn)
    if kind == 1 and blocks and blocks[0]:
        first = blocks[0][0]
        line_start = fn.source.rfind(b"\n", 0, first.start_byte) + 1
        indent = fn.source[line_start:first.start_byte].decode()
        indent = indent if not indent.strip() else " " * 4
        return sorted([*renames, (first.end_byte, first.end_byte, "\n" + indent + RULES[fn.language].debug)])
    # a one-line statement: removing a loop or a branch would leave little of a short function
    choices = [(s.end_byte - s.start_byte, n, k, s) for n, block in enumerate(blocks) if len(block) >= 2
               for k, s in enumerate(block) if not (n == 0 and k == len(block) - 1)
               and s.start_point[0] == s.end_point[0]]
    if not choices:
        return _edit(fn, 1, renames) if kind != 1 else renames
    stmt = min(choices, key=lambda c: c[:3])[3]
    start = fn.source.rfind(b"\n", 0, stmt.start_byte)
    if fn.source[start + 1:stmt.start_byte].strip():
        start = stmt.start_byte - 1  # shares its line with something: cut just the statement
    kept = [e for e in renames if e[1] <= start or e[0] >= stmt.end_byte]
    return sorted([*kept, (start, stmt.end_byte, "")])


def _changed_token(fn: Function) -> Edit | None:
    for node in _walk(fn.node):
        text = node.text.decode()
        if node.type in _NUMBERS and text.isdigit():
            return node.start_byte, node.end_byte, str(int(text) + 1)
        parent = node.parent.type if node.parent is not None else ""
        if not node.is_named and text in _COMPARISONS and parent in ("binary_expression", "comparison_operator"):
            return node.start_byte, node.end_byte, _COMPARISONS[text]
    return None


def _apply(source: bytes, start: int, end: int, edits: list[Edit]) -> str:
    out, at = [], start
    for a, b, text in sorted(edits):
        if a < start or b > end or a < at:
            continue
        out += [source[at:a].decode(), text]
        at = b
    out.append(source[at:end].decode())
    return "".join(out)


def _walk(node: Node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))
