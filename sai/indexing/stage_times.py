"""Where an index run's time goes: seconds per stage, for benchmarks/index_throughput.py."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass


@dataclass
class StageTimes:
    """Seconds a run spent in each stage (cheap perf_counter sums).

    read_chunk, lexemes, shapes, references and embed are summed over files, so with worker processes they add up
    the workers' time (more than the wall clock); embed_wait and write are what the writing
    thread waited; walk, close and warm fall outside the writes. Logged at debug level at the end of
    index() with the record's `stage_times` attribute set, for benchmarks/index_throughput.py.
    """

    walk: float = 0.0
    read_chunk: float = 0.0  # reading files and cutting them into chunks
    lexemes: float = 0.0
    shapes: float = 0.0  # shape signatures and the rest of row building
    references: float = 0.0  # the uses of names (index_references)
    embed: float = 0.0  # embedding in the CPU stage (an embedder `with_chunks`)
    embed_wait: float = 0.0  # waiting for the embedder
    write: float = 0.0  # database writes
    close: float = 0.0  # closing the run's writer connection (DuckDB checkpoints the file)
    warm: float = 0.0  # building the copies searching processes map, after a run that wrote (Store.warm)
    transactions: int = 0  # write transactions of chunk batches

    @contextlib.contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, stage, getattr(self, stage) + time.perf_counter() - started)

    def summary(self) -> str:
        return ", ".join(f"{k} {v:.2f}s" if isinstance(v, float) else f"{k} {v}" for k, v in asdict(self).items())
