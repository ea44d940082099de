"""Per-language node tables for the AST chunker: data only, read by sai/chunking/treesitter.py.

A *path* names how to reach a node from a unit's node: steps separated by '/', alternatives
separated by '|' (the first that resolves wins). A step is
  `field`   the child in that field,
  `@type`   the first named child of that type,
  `<type`   the previous named sibling, if of that type,
  `>type`   the first named child, if of that type,
  `^`       the parent,
  `field*`  the field followed repeatedly; a node lacking it whose type ends in `_declarator`
            is stepped through via its first named child (C's pointer/reference declarators).
In a name path only, a last step `@type+` takes every named child of that type, joined by '.'
(Terraform's `resource "aws_vpc" "main"` is `aws_vpc.main`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


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
    unless: str = ""  # path that must not resolve: the node is a misparse of something else
    qualifier: str = ""  # path to a type owning the unit though declared outside it (receivers)
    fixed_name: str = ""  # the name when the source gives none (Kotlin `constructor`)
    top_level: bool = False  # a unit only when no function-like unit encloses it
    in_classes: bool = True  # False: inside a class-like unit it stays in the class's chunk
    min_lines: int = 1  # a node of fewer lines stays in the chunk around it
    # Also qualifies the siblings after it, up to the next such unit: the C# grammar ends a
    # file-scoped `namespace X;` at its semicolon (Perl's `package X;` likewise), yet the
    # namespace holds the rest of the file.
    covers_following: bool = False
    # ...and the needed node's text must be one of these: Elixir's `def`, `defmodule` are calls.
    needs_text: frozenset[str] = frozenset()
    kind: str = ""  # what the unit is, when KINDS (by node type) does not say it for this grammar
    # What the unit is by another node: its type, else its text, looked up in `kinds` (Go's
    # `type_spec` by its type, Swift's `class_declaration` by its keyword, Elixir's by `def`).
    kind_from: str = ""
    kinds: Mapping[str, str] | None = None  # what it does not name is the rule's kind or KINDS
    symbolic: bool = False  # operators are names (Haskell `(.:)`, Scala `def +`)


@dataclass(frozen=True)
class Grammar:
    units: Mapping[str, UnitRule]
    # Parents whose extent a unit adopts, so decorators / `export` / `template<>` lines are in it.
    wrappers: frozenset[str] = frozenset()
    # Preceding siblings a unit absorbs, for attributes the grammar keeps outside the item.
    leading: frozenset[str] = frozenset()
    leading_limit: int = 0  # how many of them at most (0: all there are)
    # C-family source is parsed before its preprocessor: blank the macros sai/chunking/macros.py finds
    unexpanded_macros: bool = False


FUNC = UnitRule()
BODIED = UnitRule(needs="body")  # methods without a body are signatures: left to their class
CLASS = UnitRule(container=True)
NAMESPACE = UnitRule(container=True, scope_only=True, needs="body")
JS_FUNCTION_VALUES = frozenset({"arrow_function", "function", "function_expression", "generator_function"})
JS_CONST_FUNCTION = UnitRule(
    name="@variable_declarator/name",
    needs="@variable_declarator/value",
    needs_types=JS_FUNCTION_VALUES,
    top_level=True,
)
# A "function" whose return type is a class with a body is a class missing its `;` (the parser
# recovering from a macro it could not expand): the class is the unit, not a function around it.
C_FUNCTION = UnitRule(name="declarator*", unless="type/body")
# `typedef struct { … } Vec;` has no name of its own: take the typedef's. A C++ record named
# with arguments (`template<> struct char_traits<unsigned char>`, a partial `X<T*>`) is a
# specialisation of the template of that name, which the bare name means (query/definitions.py).
C_RECORD = UnitRule(name="name|^/declarator*", container=True, needs="body",
                    kind_from="name", kinds={"template_type": "specialization"})

# A type alias (TypeScript `export type X<T> = {…}`, C++ `using`, a C `typedef`) and a C
# function-like macro are definitions a bare name can mean, as a class is: a unit of its own,
# outside functions, when it spans two lines or more (one line reads with its neighbours, too
# little to rank alone). A member type (`using value_type = T;`) stays in its class's chunk,
# which reads as the class; a TypeScript alias is a unit when exported, a module's API (the
# others are its helpers). A typedef of a record is the record's business (`typedef struct {…}
# Vec;` names the record, `typedef struct uv_loop_s uv_loop_t;` renames one defined elsewhere);
# object-like `#define`s are constants, left in the module chunk (benchmarks/DECISIONS.md).
TYPE_ALIAS = UnitRule(kind="type", top_level=True, in_classes=False, min_lines=2)
TS_TYPE_ALIAS = replace(TYPE_ALIAS, needs="^", needs_types=frozenset({"export_statement"}))
C_TYPEDEF = replace(TYPE_ALIAS, name="declarator*",
                    unless="type/body|>struct_specifier|>union_specifier|>enum_specifier")
C_MACRO = UnitRule(kind="macro", top_level=True, min_lines=2)

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
        types=(TS_TYPE_ALIAS, ("type_alias_declaration",)),
    ),
}

_C_UNITS = _table(
    functions=(C_FUNCTION, ("function_definition",)),
    records=(C_RECORD, ("struct_specifier", "union_specifier", "enum_specifier")),
    types=(C_TYPEDEF, ("type_definition",)),
    macros=(C_MACRO, ("preproc_function_def",)),
)

GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}
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
            types=(UnitRule(container=True, needs="type", needs_types=frozenset(GO_TYPE_KINDS),
                            kind_from="type", kinds=GO_TYPE_KINDS),
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
    "c": Grammar(units=_C_UNITS, unexpanded_macros=True),
    "cpp": Grammar(
        units={
            **_C_UNITS,
            "class_specifier": C_RECORD,
            "namespace_definition": NAMESPACE,
            "alias_declaration": TYPE_ALIAS,
        },
        wrappers=frozenset({"template_declaration"}),
        unexpanded_macros=True,
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


# ---------------------------------------------------------------- languages added with their wheels

ELIXIR_DEFINITIONS = {
    "defmodule": "module", "defprotocol": "protocol", "defimpl": "implementation",
    **dict.fromkeys(("def", "defp", "defguard", "defguardp", "defdelegate", "defn", "defnp"), "function"),
    **dict.fromkeys(("defmacro", "defmacrop"), "macro"),
}
ZIG_CONTAINERS = {"struct_declaration": "struct", "enum_declaration": "enum", "union_declaration": "union",
                  "opaque_declaration": "struct"}
TERRAFORM_BLOCKS = {kind: kind for kind in ("resource", "data", "module", "variable", "output", "provider",
                                            "locals", "terraform", "check", "import", "moved")}
LISP_DEFINITIONS = {"defun": "function", "defmacro": "macro", "defmethod": "method", "defgeneric": "function"}
SWIFT_KINDS = {"class": "class", "struct": "struct", "enum": "enum", "extension": "extension", "actor": "class"}
# Dart keeps a function's signature and body as siblings: the body is the unit, named by the signature.
_DART_SIGNATURES = ("function_signature", "getter_signature", "setter_signature", "constructor_signature")
DART_FUNCTION = UnitRule(
    name="|".join([f"<method_signature/@{s}/name" for s in _DART_SIGNATURES]
                  + ["<method_signature/@factory_constructor_signature/@identifier"]
                  + [f"<{s}/name" for s in _DART_SIGNATURES[:3]]),
    kind="function",
)
_JULIA_CALL = "@call_expression/@identifier|@call_expression/@field_expression"
JULIA_SIGNATURE = "|".join(f"@signature/{step}" for step in (
    *_JULIA_CALL.split("|"), "@where_expression/@call_expression/@identifier",
    "@typed_expression/@call_expression/@identifier", "@identifier"))


def _kind(kind: str, rule: UnitRule = FUNC, **changes: Any) -> UnitRule:
    """A shared rule with this grammar's kind (and any other field changed)."""
    return replace(rule, kind=kind, **changes)


GRAMMARS.update({
    "swift": Grammar(units=_table(
        types=(UnitRule(container=True, kind_from="declaration_kind", kinds=SWIFT_KINDS), ("class_declaration",)),
        protocols=(_kind("protocol", CLASS), ("protocol_declaration",)),
        functions=(UnitRule(needs="body", symbolic=True), ("function_declaration",)),
        inits=(UnitRule(name="", fixed_name="init", kind="constructor"), ("init_declaration",)),
        deinits=(UnitRule(name="", fixed_name="deinit", kind="destructor"), ("deinit_declaration",)),
    )),
    "scala": Grammar(units=_table(
        classes=(CLASS, ("class_definition",)),
        objects=(_kind("object", CLASS), ("object_definition",)),
        traits=(_kind("trait", CLASS), ("trait_definition",)),
        enums=(_kind("enum", CLASS), ("enum_definition",)),
        functions=(UnitRule(symbolic=True), ("function_definition",)),
    )),
    "elixir": Grammar(units={"call": UnitRule(
        name="@arguments/@alias|@arguments/@call/target|@arguments/@binary_operator/left/target|@arguments/@identifier",
        needs="target", needs_text=frozenset(ELIXIR_DEFINITIONS), kind_from="target", kinds=ELIXIR_DEFINITIONS,
    )}),
    "lua": Grammar(units=_table(
        functions=(FUNC, ("function_declaration",)),
        # `M.reload = function(plugin) … end`, as JavaScript's property-assigned functions
        assigned=(UnitRule(name="@variable_list/name", needs="@expression_list/value", kind="function",
                           needs_types=frozenset({"function_definition"}), top_level=True),
                  ("assignment_statement",)),
        fields=(UnitRule(needs="value", kind="function", needs_types=frozenset({"function_definition"}),
                         top_level=True), ("field",)),  # `{ parse = function(s) … end }`
    )),
    "haskell": Grammar(
        units=_table(
            functions=(UnitRule(symbolic=True, kind="function", needs="match"), ("function",)),  # not a function type
            binds=(UnitRule(symbolic=True, kind="function", top_level=True), ("bind",)),
            types=(_kind("type", CLASS), ("data_type", "newtype", "type_family")),
            classes=(_kind("class", CLASS), ("class",)),
            instances=(_kind("instance", CLASS), ("instance",)),
        ),
        # `parse :: Text -> Value` belongs to the equation after it (a class's other signatures do not)
        leading=frozenset({"signature"}),
        leading_limit=1,
    ),
    "zig": Grammar(units=_table(
        containers=(UnitRule(name="@identifier", container=True, needs="|".join(f"@{t}" for t in ZIG_CONTAINERS),
                             kind_from="|".join(f"@{t}" for t in ZIG_CONTAINERS), kinds=ZIG_CONTAINERS),
                    ("variable_declaration",)),
        functions=(BODIED, ("function_declaration",)),
        tests=(UnitRule(name="", fixed_name="test", kind="test"), ("test_declaration",)),
    )),
    "bash": Grammar(units={"function_definition": FUNC}),
    "dart": Grammar(
        units=_table(
            classes=(CLASS, ("class_definition", "enum_declaration")),
            mixins=(_kind("mixin", CLASS, name="@identifier"), ("mixin_declaration",)),
            extensions=(_kind("extension", CLASS), ("extension_declaration",)),
            functions=(DART_FUNCTION, ("function_body",)),
        ),
        leading=frozenset({"method_signature", *_DART_SIGNATURES, "annotation"}),
    ),
    "objc": Grammar(units={
        **_C_UNITS,
        "class_interface": _kind("interface", CLASS, name="@identifier"),
        "class_implementation": _kind("class", CLASS, name="@identifier"),
        "protocol_declaration": _kind("protocol", CLASS, name="@identifier"),
        "method_definition": _kind("method", name="@identifier"),
    }, unexpanded_macros=True),
    "julia": Grammar(units=_table(
        modules=(_kind("module", CLASS), ("module_definition",)),
        structs=(_kind("struct", CLASS, name="@type_head/@identifier|@type_head/@binary_expression/@identifier"
                       "|@type_head/@parametrized_type_expression/@identifier"), ("struct_definition",)),
        functions=(_kind("function", name=JULIA_SIGNATURE), ("function_definition",)),
        macros=(_kind("macro", name=JULIA_SIGNATURE), ("macro_definition",)),
        # `perimeter(c) = 2pi * c.r`: an assignment to a call is a function
        short=(_kind("function", name=_JULIA_CALL, needs=">call_expression", top_level=True), ("assignment",)),
    )),
    "ocaml": Grammar(units=_table(
        functions=(_kind("function", name="pattern", needs="@parameter"), ("let_binding",)),
        modules=(_kind("module", CLASS, name="@module_name", needs="body"), ("module_binding",)),
        signatures=(_kind("interface", CLASS, name="@module_type_name"), ("module_type_definition",)),
        classes=(_kind("class", CLASS, name="@class_name"), ("class_binding",)),
        types=(_kind("type", CLASS), ("type_binding",)),
    )),
    "perl": Grammar(units=_table(
        functions=(_kind("function"), ("subroutine_declaration_statement",)),
        methods=(_kind("method"), ("method_declaration_statement",)),
        packages=(_kind("package", CLASS, scope_only=True, covers_following=True), ("package_statement",)),
        classes=(_kind("class", CLASS, scope_only=True, covers_following=True), ("class_statement",)),
    )),
    "sql": Grammar(units={
        **{f"create_{kind}": _kind(kind, name="@object_reference") for kind in (
            "table", "view", "materialized_view", "function", "procedure", "trigger", "type", "sequence",
            "schema")},
        "create_index": _kind("index", name="column|@object_reference"),
    }),
    "hcl": Grammar(units={"block": UnitRule(
        name="@string_lit+|@identifier", container=True, needs="^/^", needs_types=frozenset({"config_file"}),
        kind_from="@identifier", kinds=TERRAFORM_BLOCKS,
    )}),
    "fsharp": Grammar(units=_table(
        namespaces=(_kind("module", NAMESPACE, needs=""), ("named_module", "namespace")),
        modules=(_kind("module", CLASS, name="@identifier"), ("module_defn",)),
        types=(_kind("type", CLASS, name="@type_name/type_name"),
               ("union_type_defn", "record_type_defn", "enum_type_defn", "interface_type_defn")),
        classes=(_kind("class", CLASS, name="@type_name/type_name"), ("anon_type_defn",)),
        functions=(_kind("function", name="@function_declaration_left/@identifier",
                         needs="@function_declaration_left"), ("function_or_value_defn",)),
        members=(_kind("method", name="@method_or_prop_defn/name/method|@method_or_prop_defn/name"), ("member_defn",)),
    )),
    "groovy": Grammar(units=_table(
        classes=(CLASS, ("class_declaration", "interface_declaration", "enum_declaration", "record_declaration")),
        methods=(BODIED, ("method_declaration",)),
        constructors=(FUNC, ("constructor_declaration",)),
        functions=(FUNC, ("function_definition",)),
    )),
    "solidity": Grammar(units=_table(
        contracts=(_kind("contract", CLASS), ("contract_declaration",)),
        libraries=(_kind("library", CLASS), ("library_declaration",)),
        types=(CLASS, ("interface_declaration", "struct_declaration", "enum_declaration")),
        functions=(BODIED, ("function_definition",)),
        modifiers=(_kind("modifier", needs="body"), ("modifier_definition",)),
        constructors=(UnitRule(name="", fixed_name="constructor", kind="constructor"), ("constructor_definition",)),
    )),
    "powershell": Grammar(units=_table(
        functions=(_kind("function", name="@function_name"), ("function_statement",)),
        classes=(_kind("class", CLASS, name="@simple_name"), ("class_statement",)),
        enums=(_kind("enum", CLASS, name="@simple_name"), ("enum_statement",)),
        methods=(_kind("method", name="@simple_name"), ("class_method_definition",)),
    )),
    "commonlisp": Grammar(units={"defun": UnitRule(
        name="@defun_header/function_name", kind_from="@defun_header/keyword", kinds=LISP_DEFINITIONS,
    )}),
})

# What a unit is, by node type, for sai_find_symbol. A function inside a class-like unit is a
# method (make_unit); a rule's own `kind` or `kinds` comes first.
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
# Kinds whose functions are methods (a function in a module or namespace stays a function).
CLASS_LIKE = frozenset({"class", "object", "interface", "enum", "struct", "union", "trait", "impl", "record",
                        "specialization", "extension", "instance", "contract", "library", "mixin"})
