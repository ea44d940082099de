"""Per-language node tables for the AST chunker: data only, read by sai/chunking/treesitter.py.

A *path* names how to reach a node from a unit's node: steps separated by '/', alternatives
separated by '|' (the first that resolves wins). A step is
  `field`   the child in that field,
  `@type`   the first named child of that type,
  `<type`   the previous named sibling, if of that type,
  `^`       the parent,
  `field*`  the field followed repeatedly; a node lacking it whose type ends in `_declarator`
            is stepped through via its first named child (C's pointer/reference declarators).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class UnitRule:
    """How a node of one type becomes a unit (a function, method, class, ...)."""

    name: str = "name"  # path to the node whose text names the unit
    # Class-like: members are qualified by it, and a `const f = () => …` inside it is still a
    # unit (inside a function such a const is a local, part of the function's own chunk).
    container: bool = False
    # Qualifies nested symbols but owns no lines: a chunk holding only `namespace X {` and `}`
    # would be noise, so those lines stay with the enclosing owner (usually the module).
    scope_only: bool = False
    needs: str = ""  # path that must resolve for the node to count (e.g. a body: no prototypes)
    needs_types: frozenset[str] = frozenset()  # ...and the types the resolved node may have
    qualifier: str = ""  # path to a type owning the unit though declared outside it (receivers)
    fixed_name: str = ""  # the name when the source gives none (Kotlin `constructor`)
    top_level: bool = False  # a unit only when no function-like unit encloses it
    # Also qualifies the siblings after it: the C# grammar ends a file-scoped `namespace X;` at
    # its semicolon, yet the namespace holds the rest of the file.
    covers_following: bool = False


@dataclass(frozen=True)
class Grammar:
    units: Mapping[str, UnitRule]
    # Parents whose extent a unit adopts, so decorators / `export` / `template<>` lines are in it.
    wrappers: frozenset[str] = frozenset()
    # Preceding siblings a unit absorbs, for attributes the grammar keeps outside the item.
    leading: frozenset[str] = frozenset()


FUNC = UnitRule()
BODIED = UnitRule(needs="body")  # methods without a body are signatures: left to their class
CLASS = UnitRule(container=True)
NAMESPACE = UnitRule(container=True, scope_only=True, needs="body")
JS_FUNCTION_VALUES = frozenset({"arrow_function", "function", "function_expression"})
JS_CONST_FUNCTION = UnitRule(
    name="@variable_declarator/name",
    needs="@variable_declarator/value",
    needs_types=JS_FUNCTION_VALUES,
    top_level=True,
)
C_FUNCTION = UnitRule(name="declarator*")
# `typedef struct { … } Vec;` has no name of its own: take the typedef's.
C_RECORD = UnitRule(name="name|^/declarator*", container=True, needs="body")


def _table(**groups: tuple[UnitRule, tuple[str, ...]]) -> dict[str, UnitRule]:
    """Node type -> rule, written as rule-name=(rule, node types) for readability."""
    return {kind: rule for rule, kinds in groups.values() for kind in kinds}


# `res.send = function send(body) {…}`, `exports.parse = (s) => …`, `Foo.prototype.bar = …`:
# a function given to a property, how much CommonJS code defines its API; named by the property.
JS_ASSIGNED_FUNCTION = UnitRule(name="left", needs="right", needs_types=JS_FUNCTION_VALUES, top_level=True)

_JS_UNITS = _table(
    functions=(FUNC, ("function_declaration", "generator_function_declaration",
                      "method_definition")),
    classes=(CLASS, ("class_declaration",)),
    consts=(JS_CONST_FUNCTION, ("lexical_declaration", "variable_declaration")),
    assigned=(JS_ASSIGNED_FUNCTION, ("assignment_expression",)),
    fields=(UnitRule(name="property", needs="value", needs_types=JS_FUNCTION_VALUES),
            ("field_definition",)),
)

_TS_UNITS = {
    **{kind: rule for kind, rule in _JS_UNITS.items() if kind != "field_definition"},
    **_table(
        classes=(CLASS, ("abstract_class_declaration", "interface_declaration",
                         "enum_declaration")),
        fields=(UnitRule(needs="value", needs_types=JS_FUNCTION_VALUES),
                ("public_field_definition",)),
        namespaces=(NAMESPACE, ("internal_module", "module")),
    ),
}

_C_UNITS = _table(
    functions=(C_FUNCTION, ("function_definition",)),
    records=(C_RECORD, ("struct_specifier", "union_specifier", "enum_specifier")),
)

JS_WRAPPERS = frozenset({"export_statement", "expression_statement"})  # the latter: `;` of an assignment

GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        units=_table(
            functions=(FUNC, ("function_definition",)),
            classes=(CLASS, ("class_definition",)),
        ),
        wrappers=frozenset({"decorated_definition"}),
    ),
    "javascript": Grammar(units=_JS_UNITS, wrappers=JS_WRAPPERS),
    "typescript": Grammar(units=_TS_UNITS, wrappers=JS_WRAPPERS),
    "tsx": Grammar(units=_TS_UNITS, wrappers=JS_WRAPPERS),
    "go": Grammar(
        units=_table(
            functions=(FUNC, ("function_declaration",)),
            methods=(UnitRule(qualifier="receiver/@parameter_declaration/type"),
                     ("method_declaration",)),
            # One unit per spec (so `type ( A struct{…}; B struct{…} )` gives two); plain
            # aliases like `type ID int` stay in the module chunk.
            types=(UnitRule(container=True, needs="type",
                            needs_types=frozenset({"struct_type", "interface_type"})),
                   ("type_spec",)),
        ),
    ),
    "rust": Grammar(
        units=_table(
            functions=(FUNC, ("function_item", "macro_definition")),
            impls=(UnitRule(name="type", container=True), ("impl_item",)),
            types=(CLASS, ("struct_item", "enum_item", "union_item", "trait_item")),
            modules=(UnitRule(container=True, needs="body"), ("mod_item",)),
        ),
        leading=frozenset({"attribute_item"}),
    ),
    "java": Grammar(
        units=_table(
            methods=(BODIED, ("method_declaration",)),
            constructors=(FUNC, ("constructor_declaration", "compact_constructor_declaration")),
            classes=(CLASS, ("class_declaration", "interface_declaration", "enum_declaration",
                             "record_declaration", "annotation_type_declaration")),
        ),
    ),
    "c": Grammar(units=_C_UNITS),
    "cpp": Grammar(
        units={
            **_C_UNITS,
            "class_specifier": C_RECORD,
            "namespace_definition": NAMESPACE,
        },
        wrappers=frozenset({"template_declaration"}),
    ),
    "c_sharp": Grammar(
        units=_table(
            methods=(BODIED, ("method_declaration",)),
            functions=(FUNC, ("constructor_declaration", "destructor_declaration",
                              "local_function_statement")),
            operators=(UnitRule(name="", fixed_name="operator"), ("operator_declaration",)),
            # `record struct` is a record_declaration too.
            classes=(CLASS, ("class_declaration", "struct_declaration", "interface_declaration",
                             "enum_declaration", "record_declaration")),
            namespaces=(NAMESPACE, ("namespace_declaration",)),
            file_namespaces=(UnitRule(container=True, scope_only=True, covers_following=True),
                             ("file_scoped_namespace_declaration",)),
        ),
    ),
    "ruby": Grammar(
        units=_table(
            methods=(FUNC, ("method", "singleton_method")),
            classes=(CLASS, ("class", "module")),
        ),
    ),
    "php": Grammar(
        units=_table(
            functions=(FUNC, ("function_definition",)),
            methods=(BODIED, ("method_declaration",)),
            classes=(CLASS, ("class_declaration", "interface_declaration", "trait_declaration",
                             "enum_declaration")),
            namespaces=(NAMESPACE, ("namespace_definition",)),
        ),
    ),
    "kotlin": Grammar(
        units=_table(
            # Extension functions are qualified by their receiver type: `String.shout`. The
            # grammar (tree-sitter-grammars' Kotlin, not fwcd's) has no `body` or `receiver`
            # field: the body is a `function_body` child, the receiver the type before the name.
            functions=(UnitRule(needs="@function_body", qualifier="name/<user_type|name/<nullable_type"),
                       ("function_declaration",)),
            constructors=(UnitRule(name="", fixed_name="constructor"),
                          ("secondary_constructor",)),
            classes=(CLASS, ("class_declaration", "object_declaration")),
            companions=(UnitRule(container=True, scope_only=True), ("companion_object",)),
        ),
    ),
}


# What a unit is, by node type, for sai_find_symbol. A function inside a class-like unit is a
# method (make_unit); Go's type_spec is a struct or an interface by its type (GO_TYPE_KINDS).
KINDS: dict[str, str] = {
    **dict.fromkeys(("function_definition", "function_declaration", "generator_function_declaration",
                     "function_item", "local_function_statement", "lexical_declaration",
                     "variable_declaration", "assignment_expression"), "function"),
    **dict.fromkeys(("method_definition", "method_declaration", "method", "singleton_method",
                     "field_definition", "public_field_definition"), "method"),
    **dict.fromkeys(("constructor_declaration", "compact_constructor_declaration",
                     "secondary_constructor"), "constructor"),
    "destructor_declaration": "destructor",
    "operator_declaration": "operator",
    "macro_definition": "macro",
    **dict.fromkeys(("class_definition", "class_declaration", "abstract_class_declaration",
                     "class_specifier", "class"), "class"),
    **dict.fromkeys(("object_declaration", "companion_object"), "object"),
    "interface_declaration": "interface",
    **dict.fromkeys(("enum_declaration", "enum_item", "enum_specifier"), "enum"),
    **dict.fromkeys(("struct_item", "struct_specifier", "struct_declaration"), "struct"),
    **dict.fromkeys(("union_item", "union_specifier"), "union"),
    **dict.fromkeys(("trait_item", "trait_declaration"), "trait"),
    "impl_item": "impl",
    "record_declaration": "record",
    "annotation_type_declaration": "annotation",
    **dict.fromkeys(("mod_item", "module"), "module"),
    **dict.fromkeys(("namespace_definition", "namespace_declaration", "file_scoped_namespace_declaration",
                     "internal_module"), "namespace"),
}
GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}
# Kinds whose functions are methods (a function in a module or namespace stays a function).
CLASS_LIKE = frozenset({"class", "object", "interface", "enum", "struct", "union", "trait", "impl", "record"})
