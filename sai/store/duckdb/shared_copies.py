"""The row table, the BM25 CSR and the symbol table of a collection as files beside the vector
sidecar, mapped by every searching process, so the page cache holds them once however many
processes search.

Each copy is one Arrow IPC file in the sidecar's directory, `g<n>.rows.arrow`,
`g<n>.lexicon.arrow` and `g<n>.symbols.arrow` (`n`: the sidecar generation whose mark it
records; the symbol table's flat arrays, store/symbols.py), holding the table at one token,
with that token and the sidecar's mark at it in its schema's metadata. A file is never changed
in place: a process that reads a table whole writes it aside, fsyncs it and renames it over the
old one, under the sidecar's exclusive lock. So a process killed while writing leaves the
previous file (or none) and a stray `.new` file that the next writer removes; a process that
mapped the old file keeps its pages; the files may be deleted at any time (the next reader
writes them again), and the DuckDB file stays the source of truth.

A process at a later token maps the file and patches its mapped copy as it patches its own
(store/duckdb/sidecar_source.py): the chunks the sidecar changed since the file's mark masked
out, their rows read from DuckDB into a small per-process part. Past the patch share, or at
another generation (a compaction or rebuild removes the old generation's files), it reads the
table whole and writes the file again.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa

from sai.store.dirs import fsync_path
from sai.store.duckdb.chunkrows import RowTable
from sai.store.duckdb.postings import LEXICON_VERSION, LexicalTable
from sai.store.duckdb.sidecar import Manifest, Mark
from sai.store.symbols import ARRAYS, SymbolTable

if TYPE_CHECKING:
    from sai.store.duckdb.derived import DerivedTables

# the metadata and columns below, and the terms the postings hold: a file of another format is written again
FORMAT = f"1-{LEXICON_VERSION}"
_LEXICON_ARRAYS = ("ids", "doc_len", "hashes", "hashed", "starts", "rows", "tfs")
log = logging.getLogger(__name__)
# Below this many chunks a process reads a table whole in about the time writing its shared file
# takes (with its fsyncs): the end of a write leaves such a file behind for the next reader.
WARM_MIN_CHUNKS = 1_000
T = TypeVar("T", RowTable, LexicalTable, SymbolTable)
Shared = RowTable | LexicalTable | SymbolTable


def file_of(conn: DerivedTables, name: str, generation: int) -> Path:
    assert conn.sidecar is not None
    return conn.sidecar.dir / f"g{generation}.{name}.arrow"


def load(conn: DerivedTables, name: str, token: str, *, build: Callable[[], T],
         patch: Callable[[DerivedTables, T, str, Mark], T | None]) -> T:
    """The table `name` ("rows", "lexicon" or "symbols") at `token`: the shared file's, patched when it is
    of an older token, else `build()` (a read of DuckDB) written as the new shared file and mapped."""
    view = conn.vector_table().view  # the sidecar at this snapshot: its mark is what patches start from
    if view is None or (name == "lexicon" and not _postings_current(conn)):
        return build()  # no usable sidecar, or postings behind the chunks (rebuilt later): this process's own
    path = file_of(conn, name, view.mark.generation)
    found = _read(path, name)
    if found is not None:
        mapped, mark = found
        if mapped.token == token:
            return mapped  # type: ignore[return-value]
        patched = patch(conn, mapped, token, mark)  # type: ignore[arg-type]
        if patched is not None:
            return patched
    table = build()
    try:
        _write(conn, path, name, table, view.mark)
    except OSError as exc:  # a read-only place, a full disk: this process keeps its own copy
        log.debug("shared copy %s not written (%s)", path, exc)
        return table
    again = _read(path, name)
    return again[0] if again is not None and again[0].token == token else table  # type: ignore[return-value]


def worth_warming(conn: DerivedTables, name: str) -> bool:
    """Whether the end of a write should bring the table `name` to this snapshot's token: when no
    file of the sidecar's generation holds it (a first question would read it whole), or the
    collection is large enough that reading it whole costs a reader more than writing it costs
    here (WARM_MIN_CHUNKS); else the next reader patches it or reads it whole, for less."""
    view = conn.vector_table().view
    if view is None:
        return True  # no usable sidecar: this process's own copy is what there is to warm
    return (not file_of(conn, name, view.mark.generation).exists()
            or view.mark.rows - view.mark.dead >= WARM_MIN_CHUNKS)


def _postings_current(conn: DerivedTables) -> bool:
    """Whether the postings hold the chunks of this snapshot (else an index run rebuilds them,
    renumbering their terms, without a new token: a file of them would outlive the rebuild)."""
    meta = conn.meta()
    return meta.get("lexicon") == LEXICON_VERSION and meta.get("lexicon_token") == meta.get("token")


def _read(path: Path, name: str) -> tuple[T, Mark] | None:
    """The table a shared file holds, mapped (no copy), and the sidecar mark it was read at;
    None when the file is missing, damaged or of another format."""
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowException):
        return None
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    try:
        if meta.pop("format") != FORMAT:
            return None
        mark = Mark(int(meta["generation"]), int(meta["rows"]), int(meta["dead"]))
        token = meta["token"]
    except (KeyError, ValueError):
        return None
    table = table.replace_schema_metadata(None)
    held: Shared
    if name == "rows":
        held = RowTable.from_arrow(token, table)
    elif name == "lexicon":
        held = LexicalTable(token=token, **{k: table.column(k).chunk(0).values.to_numpy() for k in _LEXICON_ARRAYS})
    else:
        held = SymbolTable.of_arrays(token, {k: _values(table, k) for k in ARRAYS})
    size = held.built_rows if isinstance(held, SymbolTable) else len(held.ids)
    return (held, mark) if size == mark.rows - mark.dead else None  # type: ignore[return-value]


def _values(table: pa.Table, name: str) -> pa.Array | np.ndarray:
    """A column's one list as numbers (a numpy view of the file) or strings (an Arrow array)."""
    values = table.column(name).chunk(0).values
    return values if pa.types.is_string(values.type) else values.to_numpy()


def _arrow_of(table: Shared) -> pa.Table:
    if isinstance(table, RowTable):
        return table.table.combine_chunks()
    arrays = table.arrays if isinstance(table, SymbolTable) else {k: getattr(table, k) for k in _LEXICON_ARRAYS}
    return pa.table({k: pa.ListArray.from_arrays(pa.array([0, len(v)], pa.int32()), pa.array(v))
                     for k, v in arrays.items()})


def _write(conn: DerivedTables, path: Path, name: str, table: Shared, mark: Mark) -> None:
    """Write `table` (read at `mark`) as the shared file, unless the sidecar moved to another
    generation meanwhile (then its mark means nothing to the next reader)."""
    assert conn.sidecar is not None
    data = _arrow_of(table)
    meta = {"format": FORMAT, "token": table.token, "generation": str(mark.generation),
            "rows": str(mark.rows), "dead": str(mark.dead)}
    data = data.replace_schema_metadata(meta)
    with conn.sidecar.locked(fcntl.LOCK_EX):
        held = Manifest.read(conn.sidecar.manifest_path)
        if held is None or held.generation != mark.generation or held.rows < mark.rows or held.dead < mark.dead:
            return
        for stray in conn.sidecar.dir.glob(f"g*.{name}.arrow.*.new"):  # left by a killed writer
            with contextlib.suppress(OSError):
                stray.unlink()
        aside = path.with_name(f"{path.name}.{os.getpid()}.new")
        with open(aside, "wb") as out:
            with pa.ipc.new_file(out, data.schema) as writer:
                writer.write_table(data, max_chunksize=max(data.num_rows, 1))
            out.flush()
            os.fsync(out.fileno())
        os.replace(aside, path)
        fsync_path(path.parent)
