"""What a change touches (`sai impact`, sai_impact): the stored units a git diff changes (chunks
overlapping its changed lines), who calls each (sai/query/calls.py), and the near-duplicates of
each that the diff left alone, the "copies left behind" (sai/duplicates/copies.py).

It reads the index as it is: after an edit, `sai refresh` / `sai sync` (or `sai watch`) first,
so the stored chunks are the edited ones. Units are ranked by how much they reach: copies
left behind first, then callers; module-level chunks after the named units.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sai.duplicates.copies import near_copies
from sai.models import ChangedUnit, ChunkRow, Copy, Impact
from sai.project import Project
from sai.query.calls import callers_of
from sai.query.references import KnownUses, open_references, warm_resolution
from sai.source.git import changed_lines
from sai.store import IndexReader

COPIES_PER_UNIT = 5
CALLERS_PER_UNIT = 5


def impact(project: Project, *, since: str | None = None, limit: int = 10) -> Impact:
    """The units changed against `since` (default HEAD: the working tree's edits), best first."""
    with ThreadPoolExecutor(1) as git, open_references(project) as reader:
        diff = git.submit(changed_lines, project.config.root, since=since)
        warm_resolution(reader)  # while git reads the tree (at 5,000 files, 15-30 ms each)
        ranges = diff.result()
        changed = _changed_units(reader, ranges)

        def outside(row: ChunkRow) -> bool:
            return not _overlaps(row, ranges.get(row.path, []))

        copies = near_copies(reader, changed, keep=outside, min_score=project.config.similarity.duplicate_min_score,
                             limit=COPIES_PER_UNIT)
        known = KnownUses(reader, [row.symbol for row in changed if row.symbol])
        units = [_unit(reader, row, copies.get(row.id, []), known) for row in changed]
    units.sort(key=lambda u: (u.symbol is None, -len(u.copies), -(len(u.callers) + u.callers_more), u.path,
                              u.start_line))
    shown = max(1, int(limit))
    return Impact(since=since or "HEAD", changed_files=tuple(sorted(ranges)), units=tuple(units[:shown]),
                  more=max(0, len(units) - shown))


def _changed_units(reader: IndexReader, ranges: dict[str, list[tuple[int, int]]]) -> list[ChunkRow]:
    stored = reader.files(sorted(ranges))
    changed = []
    for key in sorted(stored):
        changed += [row for row in reader.chunks_of_file(key) if _overlaps(row, ranges[key])]
    return changed


def _overlaps(row: ChunkRow, ranges: list[tuple[int, int]]) -> bool:
    return any(first <= row.end_line and row.start_line <= last for first, last in ranges)


def _unit(reader: IndexReader, row: ChunkRow, copies: list[Copy], known: KnownUses) -> ChangedUnit:
    callers, more = callers_of(reader, row.symbol, limit=CALLERS_PER_UNIT, known=known) if row.symbol else ([], 0)
    return ChangedUnit(symbol=row.symbol, kind=row.kind, path=row.path, start_line=row.start_line,
                       end_line=row.end_line, chunk_id=row.chunk_id, callers=tuple(callers), callers_more=more,
                       copies=tuple(copies))
