"""Long units compared whole: the windows a chunker cut one function into become one row.

A unit longer than the chunk budget is cut into windows (chunking/lines.py) at byte offsets, so
a renamed copy, whose names differ in length, is cut at other lines: no window of the copy holds
what a window of the original holds, and window pairs score low. Joined, the unit's shape is
the union of its windows' shapes, whose MinHash signature is the element-wise minimum of theirs
(what falls across a cut is the only loss), and its vector the normalised sum of theirs.

Windows of one unit are told apart from neighbouring units with the same symbol (overloads) by
how the chunker cuts: consecutive windows of one unit share lines (`lines.OVERLAP`), while two
units never overlap without one holding the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sai.duplicates.edges import Shapes


@dataclass(frozen=True)
class Units:
    """Rows joined into units: each unit's rows (in line order), vector and shape."""

    members: list[list[int]]  # row indices of each unit, its first window first
    matrix: np.ndarray
    shapes: Shapes

    @property
    def first(self) -> list[int]:
        return [m[0] for m in self.members]


def unit_members(
    paths: Sequence[str], starts: Sequence[int], ends: Sequence[int], symbols: Sequence[str | None]
) -> list[list[int]]:
    """Row indices grouped by unit: a row alone, or the windows of one symbol's unit in order."""
    order = sorted(range(len(paths)), key=lambda k: (paths[k], symbols[k] or "", starts[k], ends[k]))
    groups: list[list[int]] = []
    for k in order:
        if groups and _continues(groups[-1][-1], k, paths, starts, ends, symbols):
            groups[-1].append(k)
        else:
            groups.append([k])
    return sorted(groups, key=lambda g: g[0])


def _continues(a: int, b: int, paths: Sequence[str], starts: Sequence[int], ends: Sequence[int],
               symbols: Sequence[str | None]) -> bool:
    """Row b is the window after row a of the same unit: same file and symbol, overlapping lines,
    b starting and ending later."""
    return (symbols[a] is not None and symbols[a] == symbols[b] and paths[a] == paths[b]
            and starts[a] < starts[b] <= ends[a] < ends[b])


def whole_units(members: list[list[int]], matrix: np.ndarray, shapes: Shapes) -> Units:
    """Each unit's vector (its windows' normalised sum) and shape (their signatures' minimum;
    element counts summed)."""
    if all(len(m) == 1 for m in members):
        rows = np.array([m[0] for m in members], dtype=np.int64)
        ordered = rows.size == len(matrix) and bool((rows == np.arange(len(matrix))).all())
        return Units(members, matrix if ordered else matrix[rows], shapes if ordered else shapes.take(rows))
    firsts = np.array([m[0] for m in members], dtype=np.int64)
    out_matrix = matrix[firsts].astype(np.float32, copy=False)  # fancy indexing copies already
    sigs, sizes, known = shapes.sigs[firsts], shapes.sizes[firsts], shapes.known[firsts]
    at = np.array([k for k, m in enumerate(members) if len(m) > 1], dtype=np.int64)
    windows = np.concatenate([members[k] for k in at]).astype(np.int64)
    starts = np.r_[0, np.cumsum([len(members[k]) for k in at])[:-1]]
    total = np.add.reduceat(matrix[windows], starts, axis=0, dtype=np.float32)
    out_matrix[at] = total / np.maximum(np.linalg.norm(total, axis=1, keepdims=True), 1e-12)
    shaped = shapes.known[windows]
    # a window without a shape takes no part in its unit's: its minima count as the largest value
    minima = np.where(shaped[:, None], shapes.sigs[windows], np.uint32(0xFFFFFFFF))
    sigs[at] = np.minimum.reduceat(minima, starts, axis=0)
    sizes[at] = np.add.reduceat(np.where(shaped, shapes.sizes[windows], 0), starts)
    known[at] = np.maximum.reduceat(shaped.astype(np.uint8), starts).astype(bool)
    return Units(members, out_matrix, Shapes(sigs, sizes, known))
