"""One place per hit (docs/design.md, "One place per hit"): which of the ranked candidates take
the answer's slots, and which are listed with an earlier one instead: chunks of its file that
overlap it or continue its unit, a class head with one member of it, near-identical copies in
other files (hybrid search); a file's best chunks (grouped by file)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from sai.models import ChunkRow, ClusterMember, FileChunk, Hit
from sai.query.ranking import Candidate
from sai.store import IndexReader

FILE_CHUNKS = 5  # the chunks listed with a hit: its file's best (grouped by file), or those folded into it
COPY_POOL = 3  # times limit: the best candidates among which near-identical copies are folded
COPY_COSINE = 0.95  # the cosine of two chunks of different files that are copies of one another
COPY_LINES = 0.8  # and the least ratio of their line counts


def places(reader: IndexReader, ordered: list[Candidate], limit: int, *, fold: bool, by_file: bool
           ) -> list[list[Candidate]]:
    """The first `limit` places of the ranked candidates, each led by its best: grouped by file,
    a file's best chunks; else one chunk each. With `fold` (hybrid search), near-identical copies
    in other files join a place too, and ungrouped, so do the chunks of one place (`_same_place`)."""
    same: Joins = _same_file if by_file else _same_place if fold else _never
    if fold:
        return _grouped(ordered, limit, joins=_or_copy(same, _copy_pairs(reader, ordered[:COPY_POOL * limit])))
    return _grouped(ordered, limit, joins=same)


Joins = Callable[[list[Candidate], Candidate], bool]


def _grouped(ordered: list[Candidate], limit: int, *, joins: Joins) -> list[list[Candidate]]:
    """The first `limit` places in rank order, each a list led by its best candidate: a candidate
    that `joins` a chosen place is listed with it (up to FILE_CHUNKS) and takes no slot."""
    groups: list[list[Candidate]] = []
    for c in ordered:
        home = next((g for g in groups if joins(g, c)), None)
        if home is None and len(groups) < limit:
            groups.append([c])
        elif home is not None and len(home) < FILE_CHUNKS:
            home.append(c)
    return groups


def _never(group: list[Candidate], c: Candidate) -> bool:
    return False


def _copy_pairs(reader: IndexReader, candidates: list[Candidate]) -> set[tuple[int, int]]:
    """Pairs of candidate ids in different files that are near-identical copies: cosine of their
    stored vectors at least COPY_COSINE and line counts within COPY_LINES of each other."""
    rows = [c.row for c in candidates]
    vectors = reader.vectors([r.id for r in rows])
    kept = [r for r in rows if r.id in vectors]
    if len(kept) < 2:
        return set()
    matrix = np.stack([vectors[r.id] for r in kept])
    close = np.argwhere(np.triu(matrix @ matrix.T, k=1) >= COPY_COSINE)
    return {(kept[i].id, kept[j].id) for i, j in close
            if kept[i].path != kept[j].path and _similar_length(kept[i], kept[j])}


def _similar_length(a: ChunkRow, b: ChunkRow) -> bool:
    la, lb = a.end_line - a.start_line + 1, b.end_line - b.start_line + 1
    return min(la, lb) >= COPY_LINES * max(la, lb)


def _or_copy(same: Joins, copies: set[tuple[int, int]]) -> Joins:
    """The place a candidate joins: its own (`same`), or that of a chunk it is a copy of."""
    def joins(group: list[Candidate], c: Candidate) -> bool:
        return same(group, c) or any((m.row.id, c.row.id) in copies or (c.row.id, m.row.id) in copies
                                     for m in group)
    return joins


def with_members(hit: Hit, group: list[Candidate]) -> Hit:
    """The hit with the chunks folded into it: the others of its file in `chunks` (best first,
    the windows of one unit that overlap or touch as one range), of other files in `copies`."""
    own = [c for c in group if c.row.path == hit.path]
    others = [c for c in group if c.row.path != hit.path]
    if len(own) > 1:
        hit = replace(hit, chunks=_ranges(own[1:]))
    if others:
        hit = replace(hit, copies=tuple(ClusterMember(c.row.path, c.row.start_line, c.row.end_line, c.row.symbol,
                                                      c.row.chunk_id) for c in others))
    return hit


def _ranges(chunks: list[Candidate]) -> tuple[FileChunk, ...]:
    """One entry per chunk, in order, except that a window of a unit listed already joins it
    when their lines overlap or touch (the entry keeps the first window's chunk_id)."""
    out: list[FileChunk] = []
    for c in chunks:
        r = c.row
        at = next((i for i, f in enumerate(out) if f.symbol is not None and f.symbol == r.symbol
                   and r.start_line <= f.end_line + 1 and f.start_line <= r.end_line + 1), None)
        if at is None:
            out.append(FileChunk(r.start_line, r.end_line, r.symbol, r.chunk_id))
        else:
            f = out[at]
            out[at] = replace(f, start_line=min(f.start_line, r.start_line), end_line=max(f.end_line, r.end_line))
    return tuple(out)


def _same_file(group: list[Candidate], c: Candidate) -> bool:
    return group[0].row.path == c.row.path


def _same_place(group: list[Candidate], c: Candidate) -> bool:
    """One place to read: chunks of a file whose lines overlap (a container and its member, a unit's
    overlapping windows) or that continue one unit (its next window); and the place's lead with
    one container head or member of it (`Settings` and `Settings.read`: its sibling methods are
    places of their own)."""
    if any(_overlapping_or_next(m.row, c.row) for m in group):
        return True
    lead = group[0].row
    return not any(_nested_names(lead, m.row) for m in group[1:]) and _nested_names(lead, c.row)


def _overlapping_or_next(x: ChunkRow, y: ChunkRow) -> bool:
    if x.path != y.path:
        return False
    if x.start_line <= y.end_line and y.start_line <= x.end_line:
        return True
    touching = y.start_line == x.end_line + 1 or x.start_line == y.end_line + 1
    return touching and x.symbol is not None and x.symbol == y.symbol


def _nested_names(x: ChunkRow, y: ChunkRow) -> bool:
    """Chunks of one file, one a container's and the other one of its direct members'."""
    if x.path != y.path or not x.symbol or not y.symbol:
        return False
    return _member_of(x.symbol, y.symbol) or _member_of(y.symbol, x.symbol)


def _member_of(member: str, container: str) -> bool:
    return member.rpartition(".")[0] == container
