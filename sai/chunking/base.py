"""The Chunker seam (the interface only) and the pre-processing every chunker shares;
sai/chunking/__init__.py maps names to implementations."""

from __future__ import annotations

import re
from typing import Protocol

from sai.models import Chunk
from sai.source.languages import STRING_LITERAL

# bump when chunks change (2: strip_comments keeps string literals; 3: chunks carry a kind;
# 4: JavaScript/TypeScript functions assigned to a property are units; 5: one grammar set on every
# Python, the per-grammar wheels; 6: C-family macros blanked before the parse, C++ specialisations
# of kind `specialization`; 7: type aliases of TypeScript, C and C++ and C function-like macros
# of two lines or more are units; 8: a macro before a function's type and name is blanked; 9:
# comments inside a continued `#define` blanked, a macro before a class's attributes; a C++ or
# Objective-C `.h` parsed as such; 10: a conversion operator's type keeps its `::`): the next
# index run re-chunks
CHUNKER_VERSION = 10
NOINDEX_MARKER = "sai-noindexing"
# string literals are matched (and kept) so a `//` or `/*` inside one does not start a comment
C_COMMENT = re.compile(rf"(?P<string>{STRING_LITERAL})|/\*.*?\*/|//[^\n]*", re.DOTALL)


class Chunker(Protocol):
    name: str

    def chunk(self, key: str, text: str, language: str | None) -> list[Chunk]:
        """Cut a file's text into chunks; every non-blank line lands in at least one chunk."""
        ...


def split_lines(text: str) -> list[str]:
    """Lines split on '\\n' only, a trailing '\\r' dropped (docs/design.md, "Chunking")."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def strip_c_comments(text: str) -> str:
    """Blank out /* */ and // comments, keeping every newline so line numbers hold."""
    return C_COMMENT.sub(lambda m: m.group(0) if m.group("string") else "\n" * m.group(0).count("\n"), text)


def drop_noindex(chunks: list[Chunk]) -> list[Chunk]:
    return [c for c in chunks if NOINDEX_MARKER not in c.text]
