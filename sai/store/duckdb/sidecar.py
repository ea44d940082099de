"""The vector sidecar: one memory-mapped copy of a collection's vectors beside the index file.

Every searching process maps the same files, so the page cache holds the vectors once however
many servers search the index, and a write costs its readers the rows it changed, not a reload
(docs/design.md, "Vector search"). The DuckDB file stays the source of truth: the sidecar is
derived from it, may be deleted at any time, and is rebuilt from it when missing or damaged.

Layout, in `<db>.vectors/<collection>/` (`g<n>` is the generation, new at each compaction):

    manifest.json  every derived file: the generation's counts (rows, dead, names_bytes), its token
                   and dim, and each shared copy's file with its token (copies/<name>.<id>.arrow)
    g<n>.ids       int64 per row: the chunk id
    g<n>.present   uint8 per row: 1 when the chunk has its vector
    g<n>.paths     int32 per row: its file key, an index into g<n>.names
    g<n>.langs     int32 per row: its language, an index into g<n>.names (-1: none)
    g<n>.f32       float32 (rows, dim): the vectors, L2-normalised (zeros: a chunk without one yet)
    g<n>.rot       float32 (dim, dim): a random rotation, made with the generation
    g<n>.bits      uint8 (rows, dim / 8): the sign bits of the rotated vectors, the first pass of a large scan
    g<n>.dead      int64: tombstones, the rows whose chunk left the index
    g<n>.names     NUL-terminated UTF-8 strings (paths and languages never hold a NUL)
    lock           flock: exclusive while patching or listing a copy, shared while opening a generation
    copies/        the shared copies' files (copies.py): each new, never changed, listed by the manifest

Ordering and recovery. DuckDB commits first; the sidecar follows, patched by the first process
that reads at the new token (a writer never touches it, so a writer killed anywhere leaves it
merely behind). A patch appends rows past the manifest's counts, then replaces the manifest
atomically (written aside, fsynced, renamed): a process killed during a patch leaves the old
manifest, whose counts describe complete data, and the next patch cuts the tail it left. A
reader uses the sidecar only when the manifest's token is the token of its own DuckDB snapshot;
otherwise it patches it, under the lock: the sidecar's live rows of every chunk the writers'
change log (changelog.py) names since the manifest's token are tombstoned, and those chunks'
rows are read from DuckDB and appended; where the log misses a write, a new generation is read
whole. The log names a chunk whenever its row changes, `set_vectors` included (a chunk is stored
first without a vector and given it later in place, keeping its id: the pending row is then
tombstoned and the row with its vector appended). So the vectors served are those DuckDB holds
at the reader's snapshot, after any sequence of writes and kills.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np
import pyarrow as pa

from sai.store.dirs import replace_synced
from sai.store.duckdb.rows import matrix_of
from sai.store.duckdb.vectors import VectorTable
from sai.store.locks import EXCLUSIVE, SHARED, FileLock

FORMAT = 3  # the layout above, the shared copies' included; a manifest of another format is rebuilt
COMPACT_MIN_DEAD = 50_000  # tombstones are cheap below this many: a compaction rewrites every row
COMPACT_DEAD_SHARE = 0.25  # and above this share of the rows (scans pay for dead rows)
_COPY_ROWS = 65_536  # rows copied per step of a compaction (bounds its memory)
_DAMAGED = (ValueError, OSError)  # what mapping a file shorter than its manifest's counts raises
_COLUMNS = {"ids": np.int64, "present": np.uint8, "paths": np.int32, "langs": np.int32}
_ROTATION_SEED = 20_260_101  # any fixed seed: the rotation is stored with the codes it made


class VectorSource(Protocol):
    """What the sidecar reads from the index (chunk_reads.ChunkReads): a snapshot of one lease."""

    def vector_batches(self, ids: np.ndarray | None) -> Iterator[pa.RecordBatch]:
        """id, present, path, language, embedding (null: none yet) of these chunks (None: all)."""
        ...

    def touched_since(self, token: str) -> np.ndarray | None:
        """The ids of every chunk written since `token` (None: not known)."""
        ...


@dataclass(frozen=True)
class Manifest:
    """Every derived file of the directory: the vector files of one generation (their counts) and
    each shared copy's file (copies.py), with the token each holds."""

    generation: int  # 0: no vector file yet
    token: str
    origin: str  # the collection's created_at: a new collection under the same path starts over
    dim: int
    rows: int
    dead: int
    names_bytes: int
    copies: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (file in copies/, token)

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.pop("format", None) != FORMAT:
                return None
            return cls(**data | {"copies": {k: (f, t) for k, (f, t) in data.get("copies", {}).items()}})
        except (OSError, ValueError, TypeError):
            return None  # missing or damaged: rebuilt from the index

    def write(self, path: Path) -> None:
        replace_synced(path, lambda out: out.write(json.dumps({"format": FORMAT, **self.__dict__}).encode()))


class Sidecar:
    """The sidecar of one collection of one index file."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    @classmethod
    def beside(cls, db: Path, collection: str) -> Sidecar:
        return cls(db.with_name(db.name + ".vectors") / collection)

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.json"

    def view(self, source: VectorSource, *, token: str, origin: str, dim: int) -> VectorTable:
        """The sidecar at `token` (the reader's snapshot of `source`), patched first if behind.

        Opening holds the lock shared (a compaction removes old generations under it); a patch
        holds it exclusively, so the readers of other processes wait for one patch, not make their own."""
        with self.locked(SHARED):
            held = Manifest.read(self.manifest_path)
            if _matches(held, token, origin, dim):
                with contextlib.suppress(*_DAMAGED):  # files shorter than the manifest says: rebuilt below
                    return self._open(held)  # type: ignore[arg-type]
        with self.locked(EXCLUSIVE):
            held = Manifest.read(self.manifest_path)  # another process may have patched it meanwhile
            if _matches(held, token, origin, dim):
                with contextlib.suppress(*_DAMAGED):
                    return self._open(held)  # type: ignore[arg-type]
                held = None
            try:
                done = self._patch(source, held if _same_index(held, origin, dim) else None,
                                   token=token, origin=origin, dim=dim)
            except _DAMAGED:
                done = self._rebuild(source, None, token=token, origin=origin, dim=dim)
            return self._open(done)

    def is_current(self, *, token: str, origin: str, dim: int) -> bool:
        """Whether the sidecar holds the state at `token`, so `view` would only map it."""
        return _matches(Manifest.read(self.manifest_path), token, origin, dim)

    # -- reading ----------------------------------------------------------------------------

    def _file(self, generation: int, name: str) -> Path:
        return self.dir / f"g{generation}.{name}"

    def _open(self, m: Manifest) -> VectorTable:
        """The generation's rows [0, m.rows) mapped read-only, as one table (paths and languages
        share its one list of names)."""
        cols = {name: _map(self._file(m.generation, name), kind, (m.rows,)) for name, kind in _COLUMNS.items()}
        dead = np.fromfile(self._file(m.generation, "dead"), np.int64, count=m.dead) if m.dead else None
        if dead is not None and (len(dead) != m.dead or (len(dead) and int(dead.max()) >= m.rows)):
            raise ValueError(f"{self.dir}: fewer tombstones than the manifest counts")
        live = None
        if dead is not None:
            live = np.ones(m.rows, dtype=bool)
            live[dead] = False
        present = np.asarray(cols["present"]).astype(bool)
        names = self._names(m)
        return VectorTable(token=m.token, ids=cols["ids"], matrix=_map(self._file(m.generation, "f32"), np.float32,
                           (m.rows, m.dim)), paths=names, path_of=cols["paths"], languages=names,
                           language_of=cols["langs"], present=None if present.all() else present, live=live,
                           bits=_map(self._file(m.generation, "bits"), np.uint8, (m.rows, _bit_width(m.dim))),
                           rotation=self._rotation(m))

    def _rotation(self, m: Manifest) -> np.ndarray | None:
        if not m.dim:
            return None
        rotation = np.fromfile(self._file(m.generation, "rot"), np.float32)
        if rotation.size != m.dim * m.dim:
            raise ValueError(f"{self.dir}: the rotation does not hold {m.dim} x {m.dim} values")
        return rotation.reshape(m.dim, m.dim)

    def _names(self, m: Manifest) -> tuple[str, ...]:
        if not m.names_bytes:
            return ()
        with open(self._file(m.generation, "names"), "rb") as f:
            data = f.read(m.names_bytes)
        if len(data) != m.names_bytes:
            raise ValueError(f"{self.dir}: fewer names than the manifest counts")
        return tuple(data.decode("utf-8").split("\0")[:-1])

    # -- patching (under the exclusive lock) --------------------------------------------------

    def _patch(self, source: VectorSource, held: Manifest | None, *, token: str, origin: str, dim: int) -> Manifest:
        # the chunks the writers' log names since the held state; None (no state, or the log misses a write): read whole
        wanted = None if held is None else source.touched_since(held.token)
        if held is None or wanted is None:
            return self._rebuild(source, None, token=token, origin=origin, dim=dim)
        view = self._open(held)
        gone_rows = _rows_of(view, wanted)
        if held.dead + len(gone_rows) > max(COMPACT_MIN_DEAD, COMPACT_DEAD_SHARE * held.rows):
            live = np.ones(held.rows, bool) if view.live is None else view.live.copy()
            live[gone_rows] = False
            return self._rebuild(source, (view, np.flatnonzero(live)), token=token, origin=origin, dim=dim,
                                 wanted=wanted)
        writer = _Appender(self, held, view.paths)
        writer.add_dead(gone_rows)
        if len(wanted):
            for batch in source.vector_batches(wanted):
                writer.add_batch(batch)
        return writer.commit(token)

    def _rebuild(
        self, source: VectorSource, keep: tuple[VectorTable, np.ndarray] | None, *,
        token: str, origin: str, dim: int, wanted: np.ndarray | None = None,
    ) -> Manifest:
        """A new generation: the kept rows of the old one, then `wanted` (or every chunk) from DuckDB."""
        old = Manifest.read(self.manifest_path)
        generation = (old.generation + 1) if old else 1
        self.dir.mkdir(parents=True, exist_ok=True)
        # copies follow the log, and hold no vector: a first build learning its dimension keeps them
        kept = old.copies if old is not None and old.origin == origin else {}
        fresh = Manifest(generation, "", origin, dim, 0, 0, 0, kept)
        for stale in self.dir.glob(f"g{generation}.*"):  # a killed rebuild's, or the copies of a lost manifest
            stale.unlink(missing_ok=True)
        if dim:
            _write_synced(self._file(generation, "rot"), lambda out: out.write(random_rotation(dim).tobytes()))
        writer = _Appender(self, fresh, ())
        if keep is not None:
            view, rows = keep
            writer.add_names(view.paths)  # the old codes stay valid: rows are copied as they are
            for start in range(0, len(rows), _COPY_ROWS):
                writer.add_rows(view, rows[start:start + _COPY_ROWS])
        if keep is None or (wanted is not None and len(wanted)):
            for batch in source.vector_batches(wanted if keep is not None else None):
                writer.add_batch(batch)
        done = writer.commit(token)
        for stale in self.dir.glob("g*.*"):  # older generations: their readers keep their maps
            if not stale.name.startswith(f"g{generation}."):
                stale.unlink(missing_ok=True)
        self._sweep(done)
        return done

    # -- the shared copies' files (copies.py) ---------------------------------------------------

    def copy_file(self, name: str) -> tuple[Path, str] | None:
        """The file the manifest lists for the shared copy `name`, and the token it holds."""
        held = Manifest.read(self.manifest_path)
        entry = held.copies.get(name) if held is not None else None
        return (self.dir / "copies" / entry[0], entry[1]) if entry else None

    def add_copy(self, name: str, token: str, write: Callable[[BinaryIO], object], *, origin: str, dim: int) -> Path:
        """Write a new file for the shared copy `name` at `token` and list it in the manifest in
        place of the old one, which goes (a process that mapped it keeps its pages). No file is
        changed in place: one killed before the listing leaves an unlisted file, swept here."""
        with self.locked(EXCLUSIVE):
            held = Manifest.read(self.manifest_path)
            if held is None or held.origin != origin:  # (the copies hold no vector: the dimension is not theirs)
                held = Manifest(0, "", origin, dim, 0, 0, 0)  # no vector file yet (or another index's)
            path = self.dir / "copies" / f"{name}.{uuid.uuid4().hex[:12]}.arrow"
            path.parent.mkdir(exist_ok=True)
            _write_synced(path, write)
            listed = replace(held, copies=held.copies | {name: (path.name, token)})
            listed.write(self.manifest_path)
            self._sweep(listed)
        return path

    def _sweep(self, listed: Manifest) -> None:
        """Remove the copies' files the manifest does not list (replaced, or a killed writer's)."""
        files = {file for file, _ in listed.copies.values()}
        for path in (self.dir / "copies").glob("*"):
            if path.name not in files:
                path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def locked(self, mode: int) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with FileLock(self.dir / "lock").hold(mode):
            yield


class _Appender:
    """Appends rows to a generation's files past the manifest's counts, then commits a manifest."""

    def __init__(self, sidecar: Sidecar, m: Manifest, names: tuple[str, ...]) -> None:
        self.sidecar = sidecar
        self.m = m
        self.names = names
        self.rotation = sidecar._rotation(m)
        self.codes = {name: k for k, name in enumerate(names)}
        self.rows = m.rows
        self.dead = m.dead
        self.names_bytes = m.names_bytes
        sizes = {name: np.dtype(kind).itemsize * m.rows for name, kind in _COLUMNS.items()}
        sizes |= {"f32": 4 * m.dim * m.rows, "bits": _bit_width(m.dim) * m.rows, "dead": 8 * m.dead,
                  "names": m.names_bytes}
        self.files = {}
        for name, size in sizes.items():  # cut what a killed patch left past the counts
            f = open(sidecar._file(m.generation, name), "ab+")  # noqa: SIM115 (closed in commit)
            f.truncate(size)
            f.seek(size)
            self.files[name] = f

    def add_dead(self, rows: np.ndarray) -> None:
        self.files["dead"].write(np.asarray(rows, np.int64).tobytes())
        self.dead += len(rows)

    def add_batch(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        column = batch.column("embedding")
        if not self.m.dim:
            matrix = np.zeros((batch.num_rows, 0), np.float32)
        else:
            matrix = matrix_of(pa.chunked_array([column]))
            if column.null_count:
                matrix[~column.is_valid().to_numpy(zero_copy_only=False)] = 0.0  # a null's slots hold anything
        self._append(batch.column("id").to_numpy().astype(np.int64),
                     batch.column("present").to_numpy(zero_copy_only=False).astype(np.uint8),
                     self._codes(batch.column("path").to_pylist()),
                     self._codes(batch.column("language").to_pylist()), matrix)

    def add_names(self, names: tuple[str, ...]) -> None:
        """Another generation's names, first and in order (a compaction keeps their codes)."""
        assert self.names_bytes == 0
        data = b"".join(name.encode("utf-8") + b"\0" for name in names)
        self.files["names"].write(data)
        self.names_bytes, self.names, self.codes = len(data), names, {name: k for k, name in enumerate(names)}

    def add_rows(self, view: VectorTable, rows: np.ndarray) -> None:
        """Rows of another generation whose names add_names copied (a compaction)."""
        present = np.ones(len(rows), np.uint8) if view.present is None else view.present[rows]
        self._append(view.ids[rows], present, np.asarray(view.path_of[rows]),
                     np.asarray(view.language_of[rows]), np.asarray(view.matrix[rows]))

    def _append(self, ids: np.ndarray, present: np.ndarray, paths: np.ndarray, langs: np.ndarray,
                matrix: np.ndarray) -> None:
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        for name, values in (("ids", ids), ("present", present), ("paths", paths), ("langs", langs)):
            self.files[name].write(np.ascontiguousarray(values, _COLUMNS[name]).tobytes())
        self.files["f32"].write(matrix.tobytes())
        if self.rotation is not None:
            self.files["bits"].write(np.packbits(matrix @ self.rotation > 0, axis=1).tobytes())
        self.rows += len(ids)

    def _codes(self, names: list[str | None]) -> np.ndarray:
        out = np.empty(len(names), np.int32)
        for k, name in enumerate(names):
            if name is None:
                out[k] = -1
                continue
            code = self.codes.get(name)
            if code is None:
                code = self.codes[name] = len(self.codes)
                data = name.encode("utf-8") + b"\0"
                self.files["names"].write(data)
                self.names_bytes += len(data)
            out[k] = code
        return out

    def commit(self, token: str) -> Manifest:
        """Make the appended rows durable, then let the manifest say they are there."""
        for f in self.files.values():
            f.flush()
            os.fsync(f.fileno())
            f.close()
        done = Manifest(self.m.generation, token, self.m.origin, self.m.dim, self.rows, self.dead, self.names_bytes,
                        self.m.copies)
        done.write(self.sidecar.manifest_path)
        return done


def _rows_of(view: VectorTable, ids: np.ndarray) -> np.ndarray:
    """The view's live rows of these chunk ids."""
    if not len(ids) or not len(view.ids):
        return np.zeros(0, np.int64)
    top = int(max(ids.max(), view.ids.max())) + 1
    named = np.zeros(top, dtype=bool)
    named[ids] = True
    hit = named[view.ids]
    if view.live is not None:
        hit &= view.live
    return np.flatnonzero(hit)


def _matches(m: Manifest | None, token: str, origin: str, dim: int) -> bool:
    return m is not None and m.token == token and _same_index(m, origin, dim)


def _same_index(m: Manifest | None, origin: str, dim: int) -> bool:
    return m is not None and m.origin == origin and m.dim == dim


def _bit_width(dim: int) -> int:
    return (dim + 7) // 8


def _map(path: Path, kind: type, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only map of the first rows of a file (an empty array for no rows)."""
    if not all(shape):
        return np.zeros(shape, dtype=kind)
    return np.memmap(path, dtype=kind, mode="r", shape=shape)


@functools.cache  # a QR of 384 x 384 takes 0.03-1.4 s, as loaded cores slow OpenBLAS's threads
def random_rotation(dim: int) -> np.ndarray:
    """A (dim, dim) orthogonal matrix, the same for a dimension on a machine (QR of a seeded Gaussian);
    read-only, computed once a process."""
    gaussian = np.random.default_rng(_ROTATION_SEED).standard_normal((dim, dim))
    q, r = np.linalg.qr(gaussian)
    rotation = (q * np.sign(np.diag(r))).astype(np.float32)  # the signs make it uniformly random
    rotation.setflags(write=False)
    return rotation


def _write_synced(path: Path, write: Callable[[BinaryIO], object]) -> None:
    with open(path, "wb") as out:
        write(out)
        out.flush()
        os.fsync(out.fileno())

