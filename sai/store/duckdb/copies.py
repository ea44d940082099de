"""The copies a process derives from a collection's chunk rows, and their one owner.

Five copies answer the read path without SQL: the vectors (vectors.VectorTable, over the shared
sidecar of sidecar.py), the rows without their text (chunkrows.RowTable), the BM25 CSR
(postings.LexicalTable), the symbols (store/symbols.SymbolTable) and the shape signatures
(store/shapes.ShapeTable). `Copies` holds each for the
index token it was read at, shared by the process's threads (store/cache.TokenCache), and gets
every copy by one rule:

1. held at this token: the copy held;
2. else a shared file at this token: mapped (the file's pages, held once by every process);
3. else a copy of an older token (held, or a shared file's): patched with the chunks the
   writers' change log (changelog.py) names since, read by id, while they stay under
   PATCH_SHARE of it;
4. else read whole from the index, and saved as the shared file for the next process.

A broken log chain (a write it did not see) means "read whole". A snapshot holding its own
uncommitted rows (a writer's) reads whole and keeps nothing. The vectors' shared file is the
sidecar, which applies the same rule to its own files (append and tombstone, from the same log).

Every other copy is a `Copy`: build (read whole), patched (from the touched ids), save (as one
Arrow table) and load (from one). A shared file is a new `<db>.vectors/<collection>/copies/<name>.<id>.arrow`,
fsynced, then listed with its token by the directory's one manifest (sidecar.py), which drops the
old one's file; no file is changed in place, so a process killed while writing leaves the file
listed before (or none) and an unlisted file the next listing removes; a process that mapped the
old file keeps its pages; the files may be deleted at any time (read whole again).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, BinaryIO, Generic, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from sai.store.cache import TokenCache
from sai.store.duckdb import chunkrows
from sai.store.duckdb.chunk_reads import ChunkReads
from sai.store.duckdb.chunkrows import RowTable
from sai.store.duckdb.postings import LexicalTable
from sai.store.duckdb.sidecar import Sidecar
from sai.store.duckdb.vectors import VectorTable
from sai.store.shapes import ShapeTable, Signatures
from sai.store.symbols import ARRAYS, SymbolTable
from sai.text.shape import SIGNATURE_SIZE

PATCH_SHARE = 0.1  # chunks changed since a copy's full read, past this share of it: read it whole
# Below this many chunks a process reads a copy whole in about the time writing its shared file
# takes (with its fsyncs): the end of a write leaves such a file behind for the next reader.
WARM_MIN_CHUNKS = 1_000
log = logging.getLogger(__name__)
T = TypeVar("T", RowTable, LexicalTable, SymbolTable, ShapeTable)


class Copy(Protocol, Generic[T]):
    """One kind of copy: how it is read whole, patched, saved to and loaded from a shared file."""

    name: str

    def build(self, source: ChunkReads, token: str) -> T: ...
    def patched(self, source: ChunkReads, old: T, token: str, touched: np.ndarray) -> T | None: ...
    def save(self, table: T) -> pa.Table: ...
    def load(self, token: str, data: pa.Table) -> T: ...


class Copies:
    """The derived copies of one connection's snapshot, by the rule above."""

    def __init__(self, source: ChunkReads, cache: TokenCache, sidecar: Sidecar | None) -> None:
        self.source = source
        self.cache = cache
        self.sidecar = sidecar  # None: no shared files (a writer, or vectors held in memory)

    def vectors(self) -> VectorTable:
        """Every chunk's vector, over the shared sidecar when it can be used, else in memory."""
        token = self.source.token
        return self.cache.get(token, lambda: self._mapped(token)) if token else self._mapped("")

    def current_vectors(self) -> VectorTable | None:
        """The vector copy when it costs nothing to have (held, or a sidecar already at this token), else None."""
        token = self.source.token
        held = self.cache.peek(token) if token else None
        if held is None and token and self.sidecar is not None:
            origin, dim = self.source.identity()
            held = self.vectors() if self.sidecar.is_current(token=token, origin=origin, dim=dim) else None
        return held if isinstance(held, VectorTable) else None

    def held(self, kind: Copy[T]) -> T | None:
        """The copy `kind` when held at this token (nothing is read)."""
        token = self.source.token
        return self.cache.peek(token, name=kind.name) if token else None  # type: ignore[return-value]

    def get(self, kind: Copy[T]) -> T:
        """The copy `kind` at this snapshot, by the rule of the module."""
        token = self.source.token
        if not token:
            return kind.build(self.source, "")
        return self.cache.get(token, lambda: self._load(kind, token), name=kind.name,
                              patch=lambda old: self._patched(kind, old, token))

    def warm(self, *, vectors: bool = True) -> None:
        """Bring the vectors to this token, and each other copy where a reader would pay for it:
        when no shared file holds it (read whole and written, whatever this process holds), or
        the collection is large enough that reading it whole costs more than writing it costs
        here. Without `vectors` (a first build's chunks stored, their vectors to come), the
        other copies only: the vectors' writes leave them as they are (changelog.py)."""
        large = not vectors or len(self.vectors()) >= WARM_MIN_CHUNKS
        token = self.source.token
        for kind in KINDS:
            listed = self.sidecar.copy_file(kind.name) if self.sidecar is not None else None
            unlisted = listed is None or not listed[0].exists()
            if unlisted and self.sidecar is not None and token:
                self._hold(kind, token, self._built(kind, token))  # the shared file for the next process
            elif unlisted or large:
                self.get(kind)

    def _hold(self, kind: Copy[T], token: str, table: T) -> None:
        """Hold `table` as the copy `kind` at `token`, unless a copy at this token is held already."""
        self.cache.get(token, lambda: table, name=kind.name)

    def _mapped(self, token: str) -> VectorTable:
        """The sidecar's table at `token`, else (no sidecar, no token, or an unusable one) a copy in memory."""
        if self.sidecar is not None and token:
            origin, dim = self.source.identity()
            try:
                return self.sidecar.view(self.source, token=token, origin=origin, dim=dim)
            except OSError as exc:  # a read-only place, a full disk: this process keeps its own copy
                log.debug("vector sidecar %s unusable (%s); reading the vectors into memory", self.sidecar.dir, exc)
        return VectorTable.from_arrow(token, self.source.vector_rows())

    def _patched(self, kind: Copy[T], old: T, token: str) -> T | None:
        touched = self.source.touched_since(old.token, rows_only=True)  # no copy here holds a vector
        return None if touched is None else kind.patched(self.source, old, token, touched)

    def _load(self, kind: Copy[T], token: str) -> T:
        listed = self.sidecar.copy_file(kind.name) if self.sidecar is not None else None
        found = _read(kind, *listed) if listed is not None else None
        if found is not None:
            if found.token == token:
                return found
            patched = self._patched(kind, found, token)
            if patched is not None:
                return patched
        return self._built(kind, token)

    def _built(self, kind: Copy[T], token: str) -> T:
        """The copy read whole, and written as the shared file for the next process."""
        table = kind.build(self.source, token)
        if self.sidecar is None:
            return table
        origin, dim = self.source.identity()
        try:
            path = self.sidecar.add_copy(kind.name, token, lambda out: _save(out, kind.save(table)),
                                         origin=origin, dim=dim)
        except OSError as exc:  # a read-only place, a full disk: this process keeps its own copy
            log.debug("shared copy %s not written (%s)", kind.name, exc)
            return table
        return _read(kind, path, token) or table


def _read(kind: Copy[T], path: Path, token: str) -> T | None:
    """The copy a shared file holds, mapped (no copy); None when missing or damaged."""
    try:
        with pa.memory_map(str(path)) as source:
            return kind.load(token, pa.ipc.open_file(source).read_all())
    except (OSError, KeyError, IndexError, pa.ArrowException):
        return None


def _save(out: BinaryIO, data: pa.Table) -> None:
    with pa.ipc.new_file(out, data.schema) as writer:
        writer.write_table(data, max_chunksize=max(data.num_rows, 1))


def _packed(arrays: dict[str, Any]) -> pa.Table:
    """Flat arrays as one table of one row, each a list column (a shared file of them)."""
    return pa.table({k: pa.ListArray.from_arrays(pa.array([0, len(v)], pa.int32()), pa.array(v))
                     for k, v in arrays.items()})


def _unpacked(data: pa.Table, names: tuple[str, ...]) -> dict[str, Any]:
    """_packed's arrays back: numbers as numpy views of the file, strings as Arrow arrays."""
    out = {}
    for name in names:
        values = data.column(name).chunk(0).values
        out[name] = values if pa.types.is_string(values.type) else values.to_numpy()
    return out


def _too_many(changed: int, base: int) -> bool:
    return changed > PATCH_SHARE * max(base, 1)


def _patches_too_many(old: RowTable | ShapeTable, touched: np.ndarray) -> bool:
    """Whether a copy of rows read whole plus a patch (store/patched.py) would hold too many
    patched rows once these are."""
    return _too_many(old.patch_rows + len(touched), len(old.base.ids))


class Rows:
    name = "rows"

    def build(self, source: ChunkReads, token: str) -> RowTable:
        return RowTable.from_arrow(token, source.row_rows())

    def patched(self, source: ChunkReads, old: RowTable, token: str, touched: np.ndarray) -> RowTable | None:
        """`old` without the touched chunks, with their rows read now."""
        if _patches_too_many(old, touched):
            return None
        return old.patched(token, touched, chunkrows.Rows.of(source.row_rows(touched).cast(old.base.table.schema)))

    def save(self, table: RowTable) -> pa.Table:
        return table.base.table.combine_chunks()

    def load(self, token: str, data: pa.Table) -> RowTable:
        return RowTable.from_arrow(token, data)


_LEXICON_ARRAYS = ("ids", "doc_len", "hashes", "hashed", "starts", "rows", "tfs")


class Lexicon:
    name = "lexicon"

    def build(self, source: ChunkReads, token: str) -> LexicalTable:
        return LexicalTable.from_arrow(token, source.lexicon_rows())

    def patched(self, source: ChunkReads, old: LexicalTable, token: str, touched: np.ndarray) -> LexicalTable | None:
        """`old` with the touched chunks masked out, and a new delta of every chunk written since its full read."""
        written = np.union1d(old.written, touched)
        if _too_many(len(written), len(old.ids)):
            return None
        delta = LexicalTable.from_arrow(token, source.lexicon_rows(written, after_termid=old.last_termid))
        return old.patched(token, touched, delta)

    def save(self, table: LexicalTable) -> pa.Table:
        return _packed({k: getattr(table, k) for k in _LEXICON_ARRAYS})

    def load(self, token: str, data: pa.Table) -> LexicalTable:
        return LexicalTable(token=token, **_unpacked(data, _LEXICON_ARRAYS))


class Symbols:
    name = "symbols"

    def build(self, source: ChunkReads, token: str) -> SymbolTable:
        return SymbolTable.from_arrow(token, source.symbol_rows())

    def patched(self, source: ChunkReads, old: SymbolTable, token: str, touched: np.ndarray) -> SymbolTable | None:
        """`old` with every file written since it was built answered from its rows read now."""
        files = frozenset(old.patched_files | old.files_of(touched) | source.files_of(touched))
        rows = source.symbol_rows_of(files) if files else []
        return None if _too_many(len(rows), old.built_rows) else old.patched(token, files, rows)

    def save(self, table: SymbolTable) -> pa.Table:
        return _packed(table.arrays)

    def load(self, token: str, data: pa.Table) -> SymbolTable:
        return SymbolTable.of_arrays(token, _unpacked(data, ARRAYS))


_SHAPE_ARRAYS = ("ids", "columns", "sizes")


class Shapes:
    name = "shapes"

    def build(self, source: ChunkReads, token: str) -> ShapeTable:
        return ShapeTable.of_blobs(token, *source.shape_rows())

    def patched(self, source: ChunkReads, old: ShapeTable, token: str, touched: np.ndarray) -> ShapeTable | None:
        """`old` without the touched chunks, with their signatures read now."""
        if _patches_too_many(old, touched):
            return None
        return old.patched(token, touched, Signatures.of_blobs(*source.shape_rows(touched)))

    def save(self, table: ShapeTable) -> pa.Table:
        return _packed({"ids": table.base.ids, "columns": table.base.columns.ravel(), "sizes": table.base.sizes})

    def load(self, token: str, data: pa.Table) -> ShapeTable:
        arrays = _unpacked(data, _SHAPE_ARRAYS)
        return ShapeTable(token=token, base=Signatures(ids=arrays["ids"], sizes=arrays["sizes"],
                                                       columns=arrays["columns"].reshape(SIGNATURE_SIZE, -1)))


ROWS, LEXICON, SYMBOLS, SHAPES = Rows(), Lexicon(), Symbols(), Shapes()
KINDS: tuple[Copy[Any], ...] = (ROWS, LEXICON, SYMBOLS, SHAPES)
