"""The Embedder seam (the interface only), prefix conventions and vector normalisation;
sai/embedders/__init__.py maps names to implementations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from sai.models import PrefixStyle

# prefix_style -> (passage prefix, query prefix), docs/configuration.md `prefix_style`
PREFIXES: dict[PrefixStyle, tuple[str, str]] = {
    "nomic": ("search_document: ", "search_query: "),
    "e5": ("passage: ", "query: "),
    "qwen": ("", "Instruct: Given a code search query, retrieve relevant code\nQuery: "),
    "none": ("", ""),
}


class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors; prefixes are applied inside."""

    name: str
    model: str
    # cheap and pure enough to embed in the indexer's CPU stage, beside the chunking, in each
    # worker process (the static table: ~0.2 ms a chunk): a first build then writes every chunk
    # with its vector (sai/indexing/prepare.py)
    with_chunks: bool
    # a model another process serves (Ollama): several calls in flight keep it busy while this
    # side decodes answers and writes vectors (sai/indexing/backfill.py)
    served: bool

    def runs_elsewhere(self) -> bool:
        """Whether the model computes off this machine's CPU (a server on another host, or its model
        in a GPU's memory): then the indexer embeds beside its first stage (sai/indexing/backfill.py)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors (n, d) for stored chunks or code snippets (passage prefix)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector (d,) for a search query (query prefix)."""
        ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
