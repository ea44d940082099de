"""Tree-sitter grammars and parsers: one pinned wheel per grammar, the same set on every Python.

Each grammar is its own wheel (tree-sitter-python, tree-sitter-swift, ...), compiled, abi3, with
py-tree-sitter 0.26 (pyproject.toml pins them all): nothing is fetched or built at run time.
The chunker's node tables (sai/chunking/grammars.py) name these grammars' node types.
"""

from __future__ import annotations

import importlib
import warnings
from functools import cache

from tree_sitter import Language, Parser, Tree

GRAMMAR_SET = "per-grammar wheels"

# Language -> (module, function returning the grammar's TSLanguage pointer).
_WHEELS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "c_sharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "scala": ("tree_sitter_scala", "language"),
    "elixir": ("tree_sitter_elixir", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "haskell": ("tree_sitter_haskell", "language"),
    "zig": ("tree_sitter_zig", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "dart": ("tree_sitter_dart", "language"),
    "objc": ("tree_sitter_objc", "language"),
    "julia": ("tree_sitter_julia", "language"),
    "ocaml": ("tree_sitter_ocaml", "language_ocaml"),
    "perl": ("tree_sitter_perl", "language"),
    "sql": ("tree_sitter_sql", "language"),
    "hcl": ("tree_sitter_hcl", "language"),
    "fsharp": ("tree_sitter_fsharp", "language"),
    "groovy": ("tree_sitter_groovy", "language"),
    "solidity": ("tree_sitter_solidity", "language"),
    "powershell": ("tree_sitter_powershell", "language"),
    "commonlisp": ("tree_sitter_commonlisp", "language"),
}
LANGUAGES = frozenset(_WHEELS)


@cache
def language_for(language: str) -> Language:
    """The compiled grammar of one of `LANGUAGES` (KeyError for any other name)."""
    module, function = _WHEELS[language]
    pointer = getattr(importlib.import_module(module), function)()
    with warnings.catch_warnings():
        # a few older wheels (Perl, Solidity, Common Lisp) hand the pointer over as an int
        warnings.simplefilter("ignore", DeprecationWarning)
        return Language(pointer)


@cache
def parser_for(language: str) -> Parser:
    """One parser per language for the life of the process (building one loads a grammar)."""
    return Parser(language_for(language))


_last: list[tuple[str, bytes, Tree]] = []  # the tree parse() made last, for the next reader of that source


def parse(language: str, source: bytes) -> Tree:
    """The tree of `source`; the same source parsed again right after (the chunker, then the
    reference extractor, on one file) is answered from the tree made last (trees are not
    changed by their readers)."""
    last = _last[0] if _last else None  # read once: another thread may replace it
    if last is not None and last[0] == language and last[1] == source:
        return last[2]
    tree = parser_for(language).parse(source)
    _last[:] = [(language, source, tree)]
    return tree
