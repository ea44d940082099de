"""Per-language node tables for the reference extractor: data only, read by
sai/chunking/references.py. Paths are grammars.py's (`field`, `@type`, alternatives with '|').

Most node types are shared by several grammars under the same name (`call_expression`,
`import_declaration`), so one table serves every language; a type no grammar has costs
nothing. What a table misses still yields its identifiers, as kind `other`.
"""

from __future__ import annotations

import re

# The kinds of a use, in the order a reader weighs them (docs/cli.md, "sai refs").
REFERENCE_KINDS = ("call", "import", "inherit", "type", "other")

# Call-like node -> path to its callee. The callee's last identifier is the name called; the
# text before it (`self.`, `os.path.`, `foo::`) its qualifier.
CALLS: dict[str, str] = {
    "call": "function|method|target|@identifier",  # Python; Ruby's `call` (receiver.method); Elixir
    "call_expression": "function|@simple_identifier|@identifier",  # JS/TS, Go, Rust, C/C++, Kotlin, Swift
    "new_expression": "constructor|type",  # JS/TS, C++
    "method_invocation": "name",  # Java
    "object_creation_expression": "type",  # Java, C#
    "invocation_expression": "function",  # C#
    "function_call": "name|@identifier",  # Lua
    "member_call_expression": "name",  # PHP
    "scoped_call_expression": "name",  # PHP
    "method_call": "method|name",  # Rust macros aside; Ruby, Groovy
    "macro_invocation": "macro",  # Rust `println!`
    "message_expression": "method|selector",  # Objective-C
    "call_expression_with_block": "function",
    "command": "name",  # Bash
    "command_name": "",
    "function_application": "function|@variable",  # Haskell
    "application_expression": "function|@long_identifier_or_op|@identifier",  # OCaml, F#
    "method_call_expression": "method",  # Perl `$self->start`
    "function_call_expression": "function",  # PHP, Perl
    "ambiguous_function_call_expression": "function",  # Perl `helper 2`
    "application": "function",  # OCaml
    "juxt_function_call": "function",  # Groovy
    "list_lit": "@sym_lit",  # Common Lisp: `(f x)`
    "command_expression": "command_name",  # PowerShell
}

# Import-like node -> path to the module it names ("" : the node's own text after its keyword).
IMPORTS: dict[str, str] = {
    "import_statement": "source|name",  # JS/TS `from "./x"`; Python `import a.b`
    "import_from_statement": "module_name",  # Python
    "import_declaration": "@scoped_identifier|@identifier|@import_spec_list|@import_spec",  # Java, Go, Scala, Swift
    "import_spec": "path",  # Go
    "use_declaration": "argument",  # Rust
    "preproc_include": "path",  # C, C++
    "using_directive": "@qualified_name|@identifier",  # C#
    "import_header": "@identifier",  # Kotlin
    "import": "@module|@identifier",  # Haskell, Dart
    "import_or_export": "",  # Dart
    "namespace_use_declaration": "",  # PHP
    "import_directive": "",  # Solidity
    "open_declaration": "",  # OCaml
    "import_decl": "",  # F#
}

# Nodes (or fields of class-like nodes) naming what a class extends or implements.
HERITAGE_TYPES = frozenset({
    "superclass", "superclasses", "super_interfaces", "class_heritage", "extends_clause",
    "implements_clause", "extends_interfaces", "base_class_clause", "base_list",
    "delegation_specifier", "delegation_specifiers", "inheritance_specifier", "type_inheritance_clause",
    "inheritance_clause", "class_interface_clause", "superclass_reference", "mixins", "interfaces",
    "inheritance_specifiers", "base_clause",
})
HERITAGE_FIELDS = frozenset({"superclasses", "superclass", "interfaces", "trait", "bases"})

# Nodes whose identifiers are types: annotations and type positions.
TYPE_CONTEXTS = frozenset({"type", "type_annotation", "type_arguments", "generic_type", "type_list",
                           "user_type", "type_parameter_constraint", "annotation", "decorator"})
TYPE_FIELDS = frozenset({"type", "return_type", "result"})

# Leaves that name something; besides these, any leaf whose type ends in `identifier`.
NAME_LEAVES = frozenset({"constant", "name", "word", "variable", "constructor", "sym_lit", "atom",
                         "simple_identifier", "attribute", "selector",
                         "value_name", "module_name", "field_name", "constructor_name", "type_constructor",  # OCaml
                         "bareword", "varname", "function", "method", "package"})  # Perl

# A JavaScript or TypeScript file with one of these statements at its top is an ES module.
ES_MODULE_GRAMMARS = frozenset({"javascript", "typescript", "tsx"})
ES_MODULE_STATEMENTS = frozenset({"import_statement", "export_statement"})
# A member read (Python's `a.b.c`): its name's qualifier is the object as written (`a.b`), as a call's is.
MEMBER_ACCESS = frozenset({"attribute"})
# A call's keyword argument (Python's `f(locate=True)`): its `name` is the callee's parameter, not a use.
KEYWORD_ARGUMENTS = frozenset({"keyword_argument"})
# An import of every name of a module (Python's `from m import *`): recorded as an import of `*`,
# so that a bare name of that file may be one of the module's (query/resolution.py).
WILDCARD_IMPORTS = frozenset({"wildcard_import"})

# A leaf in one of these fields of such a parent is the name being defined, not a use.
DEFINING_FIELDS = frozenset({"name", "declarator", "pattern", "left", "left_side"})
# ...and an object literal's key written as a name (JS/TS `{protocol: …}`; a Python dict's key is an expression)
PROPERTY_KEYS = frozenset({"property_identifier"})
DEFINING_PARENT = re.compile(r"definition|declaration|declarator|_spec$|_item$|parameter|signature|"
                             r"class_specifier|struct_specifier|enum_specifier|union_specifier|"
                             r"^function$|function_expression|^method$|^class$|^module$|assignment$|binding|"
                             r"_def$|^enumerator$")
# Receivers meaning the enclosing class: `self.x()` in a method calls the class's own `x`.
SELF_RECEIVERS = frozenset({"self", "this", "cls", "@", "$this", "Self"})
# Methods naming their receiver (Go's `func (s *Server) Start()`): that name means the class too.
RECEIVER_NAMES: dict[str, str] = {"method_declaration": "receiver/@parameter_declaration/name"}

# A declaration giving a local name a type, read to resolve `name.member` (query/resolution.py):
# node -> (path to the name, path to its type or value). A value gives a type when it is a
# constructor call: Python `Editor(…)` and a call of any capitalised name, JS/TS `new Editor(…)`,
# Go `Editor{…}` and `&Editor{…}`.
TYPED_NAMES: dict[str, tuple[str, str]] = {
    "typed_parameter": ("@identifier", "type"),  # Python `ctx: Context`
    "typed_default_parameter": ("name", "type"),
    "assignment": ("left", "right"),  # Python `ed = Editor()`
    "required_parameter": ("pattern", "type"),  # TypeScript `c: Context`
    "optional_parameter": ("pattern", "type"),
    "variable_declarator": ("name", "type|value"),  # JS/TS `const v = new Editor()`, `let w: Editor`
    "parameter_declaration": ("name", "type"),  # Go `s *Server`
    "var_spec": ("name", "type|value"),  # Go
    "short_var_declaration": ("left/>identifier", "right/>composite_literal|right/>unary_expression"),  # Go `v := &T{}`
    "formal_parameter": ("name", "type"),  # Java
}
# Wrappers a type is read through (`*Server`, `: Context`, `&T{}`), and the nodes naming a type.
TYPE_WRAPPERS = frozenset({"type", "type_annotation", "pointer_type", "unary_expression", "parenthesized_type"})
TYPE_NAMES = frozenset({"identifier", "type_identifier", "attribute", "member_expression", "qualified_type",
                        "nested_identifier", "scoped_type_identifier", "selector_expression"})
# Constructor calls: node -> path to the type constructed.
CONSTRUCTIONS: dict[str, str] = {"call": "function", "new_expression": "constructor", "composite_literal": "type"}
# A class and the base it names first (`super().f()` in its methods calls that base's `f`).
CLASS_BASES: dict[str, str] = {
    "class_definition": "superclasses/>identifier|superclasses/>attribute",  # Python
    "class_declaration": "@class_heritage/@extends_clause/value",  # JS/TS
    "class": "@class_heritage/@extends_clause/value",
}
SUPER_RECEIVERS = frozenset({"super()", "super"})
# JavaScript `app.listen = function () {…}` and `this.x = v` declare the member (as Python's
# `self.x = v`); TypeScript declares members in the class, and such a line only writes one.
MEMBER_DECLARING_GRAMMARS = frozenset({"javascript"})
# CommonJS: `const x = require("./m")` imports (`x`, or each name of `{a, b}`) from "./m".
REQUIRE_DECLARATORS = frozenset({"variable_declarator"})
# ...and a name destructured from it (`const {a} = require("./m")`).
REQUIRED_NAMES = frozenset({"shorthand_property_identifier_pattern"})
# The fields naming the member of a member access (`attribute` of Python's `a.b`, `property`
# of JS `a.b`, `field` of Go/Rust/C, `name` of Java/Rust paths, `method` of Ruby's call).
MEMBER_FIELDS = frozenset({"attribute", "property", "field", "name", "member", "method", "selector"})
# JS/TS `export {a} from "./m"` and `export * from "./m"`: imports too (an index file re-exports).
REEXPORTS = frozenset({"export_statement"})
# C/C++ `struct s`, `enum e`: a definition with a body (`struct s {…}`), else a use of the type.
TAG_SPECIFIERS = frozenset({"struct_specifier", "enum_specifier", "union_specifier", "class_specifier"})
