"""The Chunker seam and the pre-processing every chunker shares."""

from __future__ import annotations

import re
from typing import Protocol

from sai.models import Chunk

CHUNKER_VERSION = 1  # bump when chunk boundaries change, so indexes are rebuilt
NOINDEX_MARKER = "sai-noindexing"
_C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


class Chunker(Protocol):
    name: str

    def chunk(self, key: str, text: str, language: str | None) -> list[Chunk]:
        """Cut a file's text into chunks; every non-blank line lands in at least one chunk."""
        ...


def split_lines(text: str) -> list[str]:
    """Lines split on '\\n' only, a trailing '\\r' dropped (SAI-SPEC §4)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def strip_c_comments(text: str) -> str:
    """Blank out /* */ and // comments, keeping every newline so line numbers hold."""
    return _C_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def drop_noindex(chunks: list[Chunk]) -> list[Chunk]:
    return [c for c in chunks if NOINDEX_MARKER not in c.text]


def make_chunker(name: str, *, max_chunk_chars: int) -> Chunker:
    """The chunker a config names: `ast` (tree-sitter, line fallback) or `lines`."""
    from sai.chunking.lines import LineChunker

    if name == "lines":
        return LineChunker(max_chunk_chars=max_chunk_chars)
    from sai.chunking.treesitter import TreeSitterChunker

    return TreeSitterChunker(max_chunk_chars=max_chunk_chars)
