"""Cutting files into chunks: tree-sitter units (`ast`) or line windows (`lines`)."""

from sai.chunking.base import Chunker, make_chunker

__all__ = ["Chunker", "make_chunker"]
