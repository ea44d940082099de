"""A chunk in hybrid ranking: its place in each candidate list and, once fused, its score."""

from __future__ import annotations

from dataclasses import dataclass

from sai.models import ChunkRow, Signals


@dataclass(frozen=True)
class Candidate:
    row: ChunkRow
    cosine: float | None = None
    bm25: float | None = None
    semantic_rank: int | None = None  # 1-based
    lexical_rank: int | None = None
    fused: float = 0.0
    rrf: float = 0.0  # the reciprocal-rank part of `fused`, before the signals
    signals: Signals | None = None  # what each signal contributed (set by fuse)


def order_key(c: Candidate) -> tuple[float, str, int, int]:
    """Best fused score first; ties by path and line, so the order is deterministic."""
    return (-c.fused, c.row.path, c.row.start_line, c.row.id)
