"""The candidate edges of find_duplicates, assembled from stored rows: plain-cosine edges (the
original tool's metric), duplicate-score edges between whole units, and score-1 edges between
tiny chunks of the same text (the scoring itself: sai/duplicates/score.py)."""

from __future__ import annotations

import numpy as np

from sai.duplicates.edges import Edges, Nesting, Shapes
from sai.duplicates.score import duplicate_edges, neighbour_edges
from sai.duplicates.units import Units, unit_members, whole_units
from sai.models import ChunkRow


def cosine_edges(
    rows: list[ChunkRow], matrix: np.ndarray, chosen: list[int], *, top_k: int, min_score: float,
    seeds: list[str] | None,
) -> Edges:
    subset = matrix[chosen] if len(chosen) < len(rows) else matrix  # (a copy costs 150 MB at 100k)
    return neighbour_edges(subset, top_k=top_k, min_score=min_score,
                           queries=_seed_rows(rows, chosen, seeds), nesting=nesting([rows[i] for i in chosen]))


def units_of(rows: list[ChunkRow], matrix: np.ndarray, shapes: Shapes, eligible: list[int]) -> Units:
    """The eligible rows joined into units (a long unit's windows into one), those with a shape."""
    picked = [rows[i] for i in eligible]
    members = unit_members([r.path for r in picked], [r.start_line for r in picked],
                           [r.end_line for r in picked], [r.symbol for r in picked])
    groups = [[eligible[k] for k in m] for m in members]
    groups = [g for g in groups if shapes.known[g].any()]
    return whole_units(groups, matrix, shapes)


def shape_edges(
    rows: list[ChunkRow], matrix: np.ndarray, shapes: Shapes, *, top_k: int, min_score: float,
    seeds: list[str] | None, semantic: bool = False,
) -> Edges:
    everyone = list(range(len(rows)))
    return duplicate_edges(matrix, shapes, top_k=top_k, min_score=min_score,
                           queries=_seed_rows(rows, everyone, seeds), nesting=nesting(rows), semantic=semantic)


def identical_edges(
    tiny: list[ChunkRow], texts: dict[int, str], *, offset: int, seeds: list[str] | None
) -> Edges:
    """Chunks too small for a shape whose text, line by line stripped, is the same: a chain of
    score-1 edges per group (from a seed file's chunk when seeded). Nested chunks never pair."""
    groups: dict[str, list[int]] = {}
    for k, row in enumerate(tiny):
        lines = [line.strip() for line in texts.get(row.id, "").split("\n")]
        groups.setdefault("\n".join(line for line in lines if line), []).append(k)
    seeded = None if seeds is None else set(seeds)
    nested = nesting(tiny)
    i, j = [], []
    for members in groups.values():
        if len(members) < 2 or (seeded is not None and not any(tiny[m].path in seeded for m in members)):
            continue
        i += members[:-1]
        j += members[1:]
    a, b = np.array(i, dtype=np.int64), np.array(j, dtype=np.int64)
    keep = ~nested.excluded(a, b) if len(a) else np.zeros(0, dtype=bool)
    return Edges(a[keep] + offset, b[keep] + offset, np.ones(int(keep.sum()), dtype=np.float32))


def nesting(rows: list[ChunkRow]) -> Nesting:
    """Chunks of one file whose ranges hold one another (a method in its class) never pair."""
    return Nesting.of([r.path for r in rows], [r.start_line for r in rows],
                      [r.end_line for r in rows])


def _seed_rows(rows: list[ChunkRow], chosen: list[int], seed_paths: list[str] | None) -> np.ndarray | None:
    """Positions in `chosen` of the seed files' chunks (None: not seeded)."""
    if seed_paths is None:
        return None
    seeds = set(seed_paths)
    return np.array([k for k, i in enumerate(chosen) if rows[i].path in seeds], dtype=np.int64)
