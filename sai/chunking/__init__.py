"""Cutting files into chunks: tree-sitter units (`ast`) or line windows (`lines`).

This module owns the name -> implementation mapping, one entry per name in models.CHUNKERS;
base.py holds only the interface and the pre-processing every chunker shares.
"""

from __future__ import annotations

from collections.abc import Callable

from sai.chunking.base import Chunker
from sai.chunking.lines import LineChunker
from sai.chunking.treesitter import TreeSitterChunker
from sai.models import ChunkerName

# each takes max_chunk_chars; `ast` falls back to line windows where no grammar applies
CHUNKER_CLASSES: dict[ChunkerName, Callable[..., Chunker]] = {"ast": TreeSitterChunker, "lines": LineChunker}


def make_chunker(name: ChunkerName, *, max_chunk_chars: int) -> Chunker:
    """The chunker a config names: `ast` (tree-sitter, line fallback) or `lines`."""
    return CHUNKER_CLASSES[name](max_chunk_chars=max_chunk_chars)


__all__ = ["CHUNKER_CLASSES", "Chunker", "make_chunker"]
