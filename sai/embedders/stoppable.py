"""An embedder that works a model round at a time and can be told to stop between two rounds.

The indexer embeds on a background thread. When a run ends early (Ctrl-C, a lock it could not
get), that thread must be out of the model before the interpreter exits: CPython ends a daemon
thread still inside a native call (torch's forward pass) with pthread_exit, whose unwinding
aborts the process ("terminate called without an active exception", exit 134, not 130). Cut
into rounds, a batch of 256 chunks stops within one round (32 chunks, about a second on a CPU).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from sai.embedders.base import Embedder

STOP_WAIT_S = 30.0  # how long a stopped run waits for the embedding round in hand (or the model load)


class EmbeddingStopped(Exception):  # noqa: N818 (not an error: the run asked for it)
    """Raised by embed_documents after stop(): the rest of the batch was not embedded."""


class StoppableEmbedder:
    """Passes embed_documents to `inner` a round at a time; stop() ends the call in hand."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.model, self.with_chunks, self.served = inner.name, inner.model, inner.with_chunks, inner.served
        # one round: what the embedder sends at once (a model batch; Ollama's parallel requests)
        self.round = max(1, int(getattr(inner, "batch_size", 32)) * int(getattr(inner, "parallel", 1)))
        self.stopped = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' vectors, longest texts first (the batches sentence-transformers would make
        of the whole call, so padding stays as small), in the order given."""
        if len(texts) <= self.round:
            return self._round(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        parts = [self._round([texts[i] for i in order[start:start + self.round]])
                 for start in range(0, len(order), self.round)]
        vectors = np.concatenate(parts)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def runs_elsewhere(self) -> bool:
        return self.inner.runs_elsewhere()

    def stop(self) -> None:
        """Let the round in hand finish, then refuse the rest (from any thread)."""
        self.stopped.set()

    def _round(self, texts: Sequence[str]) -> np.ndarray:
        if self.stopped.is_set():
            raise EmbeddingStopped("the run was stopped")
        return self.inner.embed_documents(texts)
