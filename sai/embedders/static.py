"""The static embedder (`model: minilm-static`): MiniLM distilled into one vector per token.

A chunk's vector is the normalised sum of the table rows (sai/embedders/static_table.py) of its
tokens, no neural network at run time: the tokenizer (MiniLM's own, untruncated, camelCase
identifiers split into words first) and one gather-and-sum in numpy. The table is built once per
machine from the bundled MiniLM; its figures and when to choose it: docs/embedders.md.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from sai.embedders.base import normalize
from sai.embedders.minilm import load_tokenizer, model_dir, read_shape
from sai.embedders.static_table import Recipe, load_table
from sai.settings import MINILM_STATIC

# lower-then-upper and the end of an acronym (HTTPServer -> HTTP Server): where a camelCase word
# splits; MiniLM's tokenizer lower-cases, so without this getUserName is one unknown word to it.
# how camelCase identifiers reach the tokenizer: split into words, whole, or both (the text twice)
Identifiers = Literal["split", "whole", "both"]
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


class StaticEmbedder:
    """Vectors from the static table; the table loads (or is built) on first use."""

    name = "local"
    with_chunks = True
    served = False
    model = MINILM_STATIC
    # texts per round of the indexer's stoppable embedding (sai/embedders/stoppable.py): a round
    # of 1,024 chunks takes well under a second here, where MiniLM's rounds are 16 to 32
    batch_size = 1024

    def __init__(
        self, *, cache_dir: Path | None = None, recipe: Recipe | None = None, identifiers: Identifiers = "split",
        threads: int | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir else Path.home() / ".cache" / "sai"
        self.recipe = recipe or Recipe()
        self.identifiers = identifiers
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self._table: np.ndarray | None = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.recipe.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors (n, d) for stored chunks or code snippets."""
        return self._encode(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        """One vector (d,) for a search query."""
        return self._encode([text])[0]

    def runs_elsewhere(self) -> bool:
        return False  # on this machine's cores

    def load(self) -> None:
        """Load the table and tokenizer now rather than on first use (idempotent, thread-safe)."""
        with self._load_lock:
            if self._table is not None:
                return
            path = model_dir()
            shape = read_shape(path)
            tokenizer = load_tokenizer(path, shape.max_seq_length)
            tokenizer.no_truncation()  # a static model reads the whole chunk
            self._table = load_table(self.cache_dir, path, shape, self.recipe, threads=self.threads)
            self._tokenizer = tokenizer

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.load()
        table = self._table
        assert table is not None
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if self.identifiers == "split":
            texts = [_CAMEL.sub(" ", text) for text in texts]
        elif self.identifiers == "both":
            texts = [f"{text}\n{_CAMEL.sub(' ', text)}" for text in texts]
        # One gather-and-sum per text: 25x less CPU than one np.add.reduceat over the batch's rows
        # (benchmarks/static_embedder.py), whose rows outgrow the cache.
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts, add_special_tokens=False)):
            if encoding.ids:
                out[row] = table[encoding.ids].sum(axis=0)
        return normalize(out)
