"""What an agent does after a hit: read a chunk with what surrounds it, look a name up.

Neither needs the embedder: both read stored rows and the per-token SymbolTable
(sai/store/symbols.py), which also maps every chunk_id to its row.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sai.errors import NotFoundError, UsageError, shown
from sai.models import ChunkContext, ChunkRow, Definition, StoredChunk
from sai.project import Project
from sai.query.freshness import stale_keys
from sai.source import files
from sai.source.languages import canonical_language
from sai.store import IndexReader

MAX_NEIGHBOURS = 5
_CHUNK_ID = re.compile(r"^[0-9a-f]{16}$")


def read_chunk(
    project: Project,
    *,
    chunk_id: str | None = None,
    path: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    neighbours: int = 1,
    enclosing: bool = False,
) -> ChunkContext:
    """A stored chunk, by chunk_id or by path and lines, with `neighbours` chunks (clamped 0-5)
    before and after it in its file and, with `enclosing`, the unit it belongs to.

    By path: the smallest chunk holding all of start_line..end_line (end_line defaults to
    start_line), else the smallest holding start_line. `path` is a key.
    """
    _check_target(chunk_id, path, start_line, end_line)
    with project.store.read() as reader:
        project.indexed_meta(reader)
        if chunk_id is not None:
            rows, target = _by_chunk_id(reader, chunk_id.strip().lower())
        else:
            rows = reader.chunks_of_file(str(path))
            target = _at_lines(rows, str(path), int(start_line or 0), int(end_line or start_line or 0))
        stored = reader.files([target.path])
    count = max(0, min(MAX_NEIGHBOURS, int(neighbours)))
    before, after = _neighbours(rows, target, count)
    around = _enclosing(rows, target) if enclosing else None
    return ChunkContext(
        chunk=_stored(target),
        stale=bool(stale_keys(project.config.root, stored, [target.path])),
        before=tuple(_stored(r) for r in before),
        after=tuple(_stored(r) for r in after),
        enclosing=_stored(around) if around is not None else None,
    )


def _check_target(chunk_id: str | None, path: str | None, start: int | None, end: int | None) -> None:
    if chunk_id is not None:
        if path is not None or start is not None or end is not None:
            raise UsageError("give either chunk_id or path with start_line, not both")
        if not _CHUNK_ID.match(chunk_id.strip().lower()):
            raise UsageError(f"chunk_id {shown(repr(chunk_id))} is not a chunk_id; give the 16 hex characters "
                             "a search hit's chunk_id holds")
        return
    if path is None or start is None:
        if path is not None or start is not None or end is not None:
            raise UsageError("path and start_line go together; give both (end_line is optional)")
        raise UsageError("give a chunk_id from a search hit, or path and start_line")
    if start < 1 or (end is not None and end < start):
        raise UsageError(f"lines {start}-{end if end is not None else start} are not a range; give "
                         "1 <= start_line <= end_line")


def _by_chunk_id(reader: IndexReader, wanted: str) -> tuple[list[ChunkRow], ChunkRow]:
    row_id = reader.symbols().row_id(wanted)
    found = reader.chunks([row_id], text=False) if row_id is not None else []
    if not found:
        raise NotFoundError(f"chunk {wanted} is not in the index (the code changed or was re-indexed); "
                            "search again to get a current chunk_id")
    rows = reader.chunks_of_file(found[0].path)
    return rows, next(r for r in rows if r.id == row_id)


def _at_lines(rows: list[ChunkRow], key: str, start: int, end: int) -> ChunkRow:
    """The smallest chunk holding start..end, else the smallest holding start."""
    for first, last in ((start, end), (start, start)):
        holding = [r for r in rows if r.start_line <= first and r.end_line >= last]
        if holding:
            return min(holding, key=lambda r: (r.end_line - r.start_line, -r.start_line, r.id))
    raise NotFoundError(f"no indexed chunk at {key}:{start}")


def _nested(a: ChunkRow, b: ChunkRow) -> bool:
    """One range holds the other (a method and its class): not neighbours."""
    return (a.start_line <= b.start_line and a.end_line >= b.end_line) or (
        b.start_line <= a.start_line and b.end_line >= a.end_line)


def _neighbours(rows: list[ChunkRow], target: ChunkRow, count: int) -> tuple[list[ChunkRow], list[ChunkRow]]:
    """The `count` chunks before and after the target in (start, end) order, leaving out the
    chunks that hold it or that it holds."""
    if count == 0:
        return [], []
    place = (target.start_line, target.end_line)
    others = [r for r in rows if r.id != target.id and not _nested(r, target)]
    before = [r for r in others if (r.start_line, r.end_line) < place]
    after = [r for r in others if (r.start_line, r.end_line) >= place]
    return before[-count:], after[:count]


def _enclosing(rows: list[ChunkRow], target: ChunkRow) -> ChunkRow | None:
    """The chunk of the unit that qualifies the target's symbol (`Cart` for `Cart.computeTotal`),
    the one holding it or else the nearest before it; without such a symbol, the smallest other
    chunk whose range holds the target's."""
    parent = target.symbol.rsplit(".", 1)[0] if target.symbol and "." in target.symbol else None
    if parent is not None:
        owners = [r for r in rows if r.symbol == parent and r.start_line <= target.start_line]
        holding = [r for r in owners if r.end_line >= target.end_line]
        if holding or owners:
            return (holding or owners)[-1]
    size = target.end_line - target.start_line
    holding = [r for r in rows if r.id != target.id and r.start_line <= target.start_line
               and r.end_line >= target.end_line and r.end_line - r.start_line > size]
    return min(holding, key=lambda r: (r.end_line - r.start_line, r.id)) if holding else None


def _stored(row: ChunkRow) -> StoredChunk:
    return StoredChunk(path=row.path, start_line=row.start_line, end_line=row.end_line, symbol=row.symbol,
                       kind=row.kind, language=row.language, chunk_id=row.chunk_id, text=row.text)


def find_symbol(
    project: Project, name: str, *, language: str | None = None, path_glob: str | None = None,
    limit: int = 20,
) -> list[Definition]:
    """Definitions of `name`: its exact symbol, then symbols it ends (`computeTotal` finds
    `Cart.computeTotal`), the same ignoring case, then prefixes (store/symbols.py MATCHES)."""
    if not name.strip():
        raise UsageError("the symbol name is empty; give a name such as computeTotal or Cart.computeTotal")
    wanted = canonical_language(language) if language else None
    path_ok = path_filter(path_glob) if path_glob else None
    with project.store.read() as reader:
        project.indexed_meta(reader)
        table = reader.symbols()
    return table.lookup(name, limit=max(1, int(limit)), language=wanted, path_ok=path_ok)


def path_filter(path_glob: str) -> Callable[[str], bool]:
    """The glob as a predicate on keys, each key tested once; an invalid glob fails here."""
    matches = files.compile_glob(path_glob)
    matches("")
    seen: dict[str, bool] = {}

    def passes(key: str) -> bool:
        if key not in seen:
            seen[key] = matches(key)
        return seen[key]

    return passes
