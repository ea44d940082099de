"""Cutting files into chunks: tree-sitter units (`ast`) or line windows (`lines`).

This module owns the name -> implementation mapping, one entry per name in models.CHUNKERS;
base.py holds only the interface and the pre-processing every chunker shares.
"""

from __future__ import annotations

from collections.abc import Callable

from sai.chunking.base import Chunker
from sai.models import ChunkerName


# Imported when a chunker is made: tree-sitter and its grammars cost a search nothing
# (sai/project.py reads CHUNKER_VERSION from base.py, which imports this package).
def _tree_sitter(*, max_chunk_chars: int) -> Chunker:
    from sai.chunking.treesitter import TreeSitterChunker

    return TreeSitterChunker(max_chunk_chars=max_chunk_chars)


def _lines(*, max_chunk_chars: int) -> Chunker:
    from sai.chunking.lines import LineChunker

    return LineChunker(max_chunk_chars=max_chunk_chars)


# each takes max_chunk_chars; `ast` falls back to line windows where no grammar applies
CHUNKER_CLASSES: dict[ChunkerName, Callable[..., Chunker]] = {"ast": _tree_sitter, "lines": _lines}


def make_chunker(name: ChunkerName, *, max_chunk_chars: int) -> Chunker:
    """The chunker a config names: `ast` (tree-sitter, line fallback) or `lines`."""
    return CHUNKER_CLASSES[name](max_chunk_chars=max_chunk_chars)


__all__ = ["CHUNKER_CLASSES", "Chunker", "make_chunker"]
