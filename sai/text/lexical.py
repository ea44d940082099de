"""Code-aware tokens for BM25: identifiers whole and split (camelCase, snake_case, dotted.names).

The BM25 index sees one space-separated string per chunk (the `lexemes` column); queries are
tokenised by the same function, so `getUserName`, `get_user_name` and "get user name" meet.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SEPARATORS = re.compile(r"[._]+")
MAX_TOKEN = 64
LEXEMES_VERSION = 3  # bump when tokens or BM25 terms (store/terms.py) change: indexes re-chunk, keeping vectors


def split_identifier(word: str) -> list[str]:
    """Parts of an identifier: `parseHTTPHeader_v2` -> parse, http, header, v2."""
    parts: list[str] = []
    for piece in _SEPARATORS.split(word):
        parts += [p.lower() for p in _CAMEL.findall(piece)] or ([piece.lower()] if piece else [])
    return parts


def tokens(text: str) -> list[str]:
    """Each identifier lower-cased whole (dots as underscores) and, when compound, its parts.

    The whole keeps its underscores, so `_clear` (a private name) and `clear` stay apart.
    """
    out: list[str] = []
    for word in _WORD.findall(text):
        out += _word_tokens(word)
    return out


@lru_cache(maxsize=1 << 16)  # a tree repeats its names: each is split once (lexemes ~3x faster)
def _word_tokens(word: str) -> tuple[str, ...]:
    if len(word) > MAX_TOKEN:
        return ()
    whole = word.replace(".", "_").lower()
    parts = split_identifier(word)
    out = [whole] if whole.strip("_") else []
    if len(parts) > 1 or (parts and parts[0] != whole):
        out += parts
    return tuple(out)


def lexemes(text: str, *, path: str, symbol: str | None) -> str:
    """The string the BM25 index holds for a chunk: its path, symbol and text as tokens."""
    return " ".join(tokens(path) + tokens(symbol or "") + tokens(text))


def query_lexemes(query: str) -> str:
    return " ".join(tokens(query))


_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))

# What a name's abbreviated word spells out, so a description meets the name: "Gets an unsigned
# 32 bit integer in little-endian byte order" and `get_u32_le`. Chosen by what the words are,
# not by any query; a word read two ways in common code (`res`, `ch`, `ts`, `cap`) is left out.
# Used by the name signal alone (query/ranking/signals.py): spelled out in every chunk's BM25
# terms they cost the real-task benchmark (benchmarks/DECISIONS.md, "Kept: a name's abbreviations").
ABBREVIATIONS = {word: tuple(spelled.split()) for word, spelled in {
    "le": "little endian", "be": "big endian", "ne": "native endian", "len": "length", "buf": "buffer",
    "ptr": "pointer", "idx": "index", "msg": "message", "err": "error", "cfg": "config", "conf": "config",
    "ctx": "context", "src": "source", "dst": "destination", "req": "request", "resp": "response",
    "iter": "iterator", "fn": "function", "func": "function", "str": "string", "num": "number",
    "cnt": "count", "arg": "argument", "args": "arguments", "param": "parameter", "params": "parameters",
    "val": "value", "var": "variable", "init": "initialize", "alloc": "allocate", "mut": "mutable",
    "ref": "reference", "impl": "implementation", "pos": "position", "prev": "previous", "cur": "current",
    "curr": "current", "tmp": "temporary", "db": "database", "dir": "directory", "env": "environment",
    "addr": "address", "conn": "connection", "sep": "separator", "opt": "option", "opts": "options",
    "max": "maximum", "min": "minimum", "chr": "character", "char": "character", "int": "integer",
    "uint": "unsigned integer", "bool": "boolean", "seq": "sequence", "attr": "attribute",
    "attrs": "attributes", "elem": "element", "expr": "expression", "stmt": "statement",
    "decl": "declaration", "def": "definition", "lib": "library", "pkg": "package", "mgr": "manager",
    "util": "utility", "usize": "unsigned size", "isize": "signed size", "del": "delete", "rm": "remove",
    "cmp": "compare", "eq": "equal", "gt": "greater", "lt": "less", "dup": "duplicate", "sz": "size",
    "nr": "number", "eof": "end file", "fd": "file descriptor", "hdr": "header", "txn": "transaction",
}.items()}


def word_stem(word: str) -> str:
    """A light English stem, enough to meet names: `reads` and `read`, `entries` and `entry`."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def identifiers(query: str) -> set[str]:
    """Words of a query that look like code identifiers (compound, or with _ or .)."""
    found = set()
    for match in _WORD.finditer(query):
        word = match.group(0)
        compound = "_" in word or "." in word or re.search(r"[a-z][A-Z]", word)
        if compound or len(split_identifier(word)) > 1:
            found.add(word.split(".")[-1].lower())
    return found
