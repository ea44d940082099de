"""Embedding models behind one seam: `embed_documents` and `embed_query`."""

from sai.embedders.base import Embedder, make_embedder

__all__ = ["Embedder", "make_embedder"]
