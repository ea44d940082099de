"""Tree-sitter grammars and parsers, from whichever of the two grammar sets is installed.

Below Python 3.13, tree-sitter-languages bundles every grammar (with py-tree-sitter 0.21); it has
no wheels past 3.12, so from 3.13 on each grammar is its own wheel (tree-sitter-python, ...) with
py-tree-sitter >= 0.25. pyproject.toml's environment markers pick the set; both ship compiled
grammars, so nothing is fetched at run time. The chunker's node tables hold for both
(sai/chunking/grammars.py).
"""

from __future__ import annotations

import importlib
import warnings
from functools import cache

from tree_sitter import Language, Parser

try:
    import tree_sitter_languages as _bundled
except ImportError:  # Python >= 3.13: the per-grammar wheels
    _bundled = None

GRAMMAR_SET = "tree-sitter-languages" if _bundled is not None else "per-grammar wheels"

# Language -> (module, function returning the grammar's TSLanguage pointer) in the per-grammar wheels.
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
}
LANGUAGES = frozenset(_WHEELS)


@cache
def language_for(language: str) -> Language:
    """The compiled grammar of one of `LANGUAGES` (KeyError for any other name)."""
    if language not in _WHEELS:
        raise KeyError(language)
    if _bundled is not None:
        with warnings.catch_warnings():
            # tree_sitter_languages still calls the deprecated Language(path, name).
            warnings.simplefilter("ignore", FutureWarning)
            return _bundled.get_language(language)
    module, function = _WHEELS[language]
    return Language(getattr(importlib.import_module(module), function)())


@cache
def parser_for(language: str) -> Parser:
    """One parser per language for the life of the process (building one loads a grammar)."""
    grammar = language_for(language)
    if _bundled is not None:
        parser = Parser()
        parser.set_language(grammar)  # py-tree-sitter 0.21 has no Parser(language)
        return parser
    return Parser(grammar)
