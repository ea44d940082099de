"""MemoryStore: the store contract (sai/store/base.py) held in Python objects, for the tests whose
subject is not the store (search, ranking, look-ups), as httpx's MockTransport stands in for a
network. No file, sidecar, lease or lock; tests/store/test_store_contract.py runs every verb
against it beside the real backends, so it answers as they do.

It stands in for the DuckDB file: transactional (a write session works on its own copy of the
index, which replaces the committed one when the session ends cleanly, so readers see one state
and an exception leaves nothing), with pending vectors and references. Its answers follow the
DuckDB backend's rules: ids max+1 in the order stored, the exact cosine of the stored vectors,
Okapi BM25 (k1 1.2, b 0.75) over store/terms.py's terms with a scope's own statistics, ties by
id. A test shares one built index between projects by `copy()` (the index, not the store).

Tests open a project on it with `Project(config, store=MemoryStore())`. It lives here rather
than in sai/store: SAI has no use for an index that dies with its process, and `backend` stays
the closed choice of the config (duckdb, qdrant).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk, Reference
from sai.store import terms
from sai.store.base import IndexReader, IndexSummary, IndexWriter, Pending, Scope, Store
from sai.store.symbols import SymbolTable
from sai.store.uses import COLUMNS, FIELDS

K1, B = 1.2, 0.75  # the BM25 of store/duckdb/postings.py


@dataclass(frozen=True)
class Stored:
    """One chunk as the index holds it: its id, what was written, its vector (None: pending)
    and its BM25 term counts."""

    id: int
    chunk: NewChunk
    vector: np.ndarray | None
    tfs: Counter[str]

    def row(self, *, text: bool = True) -> ChunkRow:
        c = self.chunk
        return ChunkRow(id=self.id, path=c.path, language=c.language, start_line=c.start_line,
                        end_line=c.end_line, symbol=c.symbol, text=c.text if text else "",
                        no_duplicate=c.no_duplicate, content_hash=c.content_hash, kind=c.kind)


@dataclass
class Index:
    """One state of the index. A committed Index is never changed: a writer changes a copy."""

    meta: dict[str, str]
    files: dict[str, tuple[FileRow, str]] = field(default_factory=dict)  # key -> (row, indexed_at)
    chunks: dict[int, Stored] = field(default_factory=dict)
    references: dict[str, list[Reference]] = field(default_factory=dict)
    vectors_complete: bool = False

    def copy(self) -> Index:
        return Index(dict(self.meta), dict(self.files), dict(self.chunks), dict(self.references),
                     self.vectors_complete)


class MemoryStore(Store):
    """One index in this process's memory."""

    backend = "memory"
    location = "memory"
    transactional = True
    pending_vectors = True
    references = True
    cheap_shapes = True

    def __init__(self, index: Index | None = None) -> None:
        self.index = index  # the committed state (None: no index)
        self._writing = threading.Lock()
        self._symbols: dict[str, SymbolTable] = {}  # by token

    @property
    def exists(self) -> bool:
        return self.index is not None

    def copy(self) -> MemoryStore:
        """Another store holding this one's index as it stands (a test's copy of a built template)."""
        return MemoryStore(None if self.index is None else self.index.copy())

    @contextlib.contextmanager
    def read(self) -> Iterator[IndexReader]:
        yield MemoryReader(self, self.index)

    @contextlib.contextmanager
    def write(self) -> Iterator[IndexWriter]:
        with self._writing:
            writer = MemoryWriter(self, None if self.index is None else self.index.copy())
            yield writer
            if writer.index is not None and writer.changed:
                writer.index.meta["token"] = uuid.uuid4().hex  # readers build their symbol tables anew
            self.index = writer.index

    def symbols_at(self, index: Index) -> SymbolTable:
        """The symbol table of a committed index, built once per token."""
        token = index.meta.get("token", "")
        if token not in self._symbols:
            self._symbols = {token: symbol_table(token, index)}
        return self._symbols[token]

    def prepare(self) -> None:
        return

    def recreate(self) -> None:
        self.index = None

    def close(self) -> None:
        return


def _by_id(stored: Stored) -> int:
    return stored.id


def symbol_table(token: str, index: Index) -> SymbolTable:
    rows = [(s.id, s.chunk.path, s.chunk.language, s.chunk.start_line, s.chunk.end_line, s.chunk.symbol,
             s.chunk.kind, s.chunk.content_hash) for s in sorted(index.chunks.values(), key=_by_id)]
    return SymbolTable(token, rows)


class MemoryReader(IndexReader):
    """Reads one state of the index (the committed one when the session began)."""

    def __init__(self, store: MemoryStore, index: Index | None) -> None:
        self.store = store
        self.index = index

    def _held(self) -> list[Stored]:
        return [] if self.index is None else sorted(self.index.chunks.values(), key=_by_id)

    # -- the index and its files
    def has_index(self) -> bool:
        return self.index is not None

    def meta(self) -> dict[str, str]:
        return {} if self.index is None else dict(self.index.meta)

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        held = {} if self.index is None else self.index.files
        wanted = held if keys is None else [k for k in keys if k in held]
        return {key: held[key][0] for key in wanted}

    def chunk_count(self, keys: list[str] | None = None) -> int:
        return sum(1 for s in self._held() if keys is None or s.chunk.path in keys)

    def summary(self) -> IndexSummary:
        if self.index is None:
            return IndexSummary()
        languages = Counter(s.chunk.language for s in self._held() if s.chunk.language is not None)
        stamps = [stamp for _, stamp in self.index.files.values()]
        return IndexSummary(meta=self.meta(), files=self.files(), chunk_count=self.chunk_count(),
                            languages={name: languages[name] for name in sorted(languages)},
                            indexed_at=max(stamps) if stamps else None, pending=self.pending_count())

    def content_hashes(self) -> set[str]:
        return {s.chunk.content_hash for s in self._held() if s.vector is not None}

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        wanted, found = set(hashes), {}
        for s in self._held():
            if s.vector is not None and s.chunk.content_hash in wanted:
                found.setdefault(s.chunk.content_hash, s.vector)
        return found

    # -- search
    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        scope = scope or Scope()
        held = [s for s in self._held() if s.vector is not None and s.id != exclude
                and scope.admits(s.chunk.language, s.chunk.path)]
        if not held or k <= 0:
            return []
        scores = np.vstack([s.vector for s in held]) @ np.asarray(vector, dtype=np.float32)
        return _best(np.array([s.id for s in held], np.int64), scores, k)

    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        scope = scope or Scope()
        held = [s for s in self._held() if scope.admits(s.chunk.language, s.chunk.path)]
        wanted = set(terms.stems(lexemes.split()).values())
        if not held or not wanted or k <= 0:
            return []
        lengths = np.array([sum(s.tfs.values()) for s in held], np.float64)
        if lengths.mean() <= 0:
            return []
        scores = np.zeros(len(held))
        for term in wanted:
            tfs = np.array([s.tfs.get(term, 0) for s in held], np.float64)
            having = int(np.count_nonzero(tfs))
            if having:
                idf = np.log((len(held) - having + 0.5) / (having + 0.5) + 1)
                scores += idf * tfs * (K1 + 1) / (tfs + K1 * (1 - B + B * lengths / lengths.mean()))
        positive = scores > 0
        return _best(np.array([s.id for s in held], np.int64)[positive], scores[positive], k)

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        held = {} if self.index is None else self.index.chunks
        found = ((int(i), held[int(i)].vector) for i in ids if int(i) in held)
        return {i: vector for i, vector in found if vector is not None}

    # -- chunks
    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        held = {} if self.index is None else self.index.chunks
        return [held[int(i)].row(text=text) for i in ids if int(i) in held]

    def chunks_of_file(self, key: str, *, line: int | None = None) -> list[ChunkRow]:
        rows = [s.row() for s in self._held() if s.chunk.path == key]
        if line is None:
            return sorted(rows, key=lambda r: (r.start_line, r.end_line, r.id))
        rows = [r for r in rows if r.start_line <= line <= r.end_line]
        return sorted(rows, key=lambda r: (r.end_line - r.start_line, r.start_line, r.id))

    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        held = sorted((s for s in self._held() if s.vector is not None),
                      key=lambda s: (s.chunk.path, s.chunk.start_line, s.chunk.end_line, s.id))
        if not held:
            return [], np.zeros((0, 0), dtype=np.float32), []
        return [s.row(text=False) for s in held], np.vstack([s.vector for s in held]), [s.chunk.shape for s in held]

    def symbols(self) -> SymbolTable:
        return SymbolTable("", []) if self.index is None else self.store.symbols_at(self.index)

    # -- pending vectors
    def pending_count(self) -> int:
        return sum(1 for s in self._held() if s.vector is None)

    def pending(self, after: int = 0) -> list[Pending]:
        first: dict[str, int] = {}
        counts: Counter[str] = Counter()
        for s in self._held():
            if s.vector is None and s.id > after:
                first.setdefault(s.chunk.content_hash, s.id)
                counts[s.chunk.content_hash] += 1
        return [Pending(h, first[h], counts[h]) for h in sorted(first, key=first.__getitem__)]

    def vectors_complete(self) -> bool:
        return self.index is None or self.index.vectors_complete

    def texts_by_id(self, ids: list[int]) -> dict[int, str]:
        held = {} if self.index is None else self.index.chunks
        return {int(i): held[int(i)].chunk.text for i in ids if int(i) in held}

    # -- references
    def references(self, names: list[str]) -> list[Reference]:
        wanted = set(names)
        return _in_order(r for refs in self._references() for r in refs if r.name in wanted)

    def references_in(self, key: str, start: int, end: int) -> list[Reference]:
        held = {} if self.index is None else self.index.references
        return _in_order(r for r in held.get(key, []) if start <= r.line <= end)

    def _references(self) -> list[list[Reference]]:
        return [] if self.index is None else list(self.index.references.values())


def _best(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best (id, score), best first, ties by id."""
    order = np.lexsort((ids, -scores))[:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def _in_order(found: Iterator[Reference]) -> list[Reference]:
    return sorted(found, key=lambda r: (r.path, r.line, r.column))


def _now() -> str:
    return datetime.now(UTC).isoformat()


class MemoryWriter(MemoryReader, IndexWriter):
    """A write session on its own copy of the index (MemoryStore.write commits it)."""

    def __init__(self, store: MemoryStore, index: Index | None) -> None:
        super().__init__(store, index)
        self.changed = False  # chunks changed: a new token at commit

    @property
    def _index(self) -> Index:
        assert self.index is not None, "write to an index that does not exist: create() it first"
        return self.index

    def symbols(self) -> SymbolTable:
        """From this session's own rows, uncommitted ones included (never the store's table)."""
        return SymbolTable("", []) if self.index is None else symbol_table("", self.index)

    def create(self, meta: IndexMeta) -> None:
        self.index = Index(meta={k: str(v) for k, v in dataclasses.asdict(meta).items()} | {"created_at": _now()})
        self.changed = True

    def drop(self) -> None:
        self.index, self.changed = None, False

    def set_meta(self, values: dict[str, str]) -> None:
        self._index.meta.update({k: str(v) for k, v in values.items()})

    def chunk_hashes(self, keys: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in self._held():
            if s.chunk.path in keys:
                out.setdefault(s.chunk.path, []).append(s.chunk.content_hash)
        return out

    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        index = self._index
        self._delete([f.path for f in files if f.path in index.files])  # a file never written has no chunks
        start = max(index.chunks, default=0) + 1
        for n, (chunk, vector) in enumerate(zip(chunks, _rows(vectors, len(chunks)), strict=True)):
            if vector is None:
                index.vectors_complete = False
            elif index.meta.get("vector_dim", "0") == "0":
                index.meta["vector_dim"] = str(len(vector))
            index.chunks[start + n] = Stored(start + n, chunk, vector, Counter(terms.terms(chunk.lexemes)))
        self.changed = self.changed or bool(chunks)
        self.touch_files(files)

    def replace_references(self, by_key: dict[str, pa.Table]) -> None:
        for key, refs in by_key.items():
            columns = [refs.column(c).to_pylist() for c in COLUMNS]
            self._index.references[key] = [Reference(**dict(zip(FIELDS, row, strict=True)), path=key)
                                           for row in zip(*columns, strict=True)]

    def touch_files(self, files: list[FileRow]) -> None:
        stamp = _now()
        self._index.files.update({f.path: (f, stamp) for f in files})

    def remove_files(self, keys: list[str]) -> int:
        if self.index is None:
            return 0
        removed = self._delete(keys)
        for key in keys:
            self.index.files.pop(key, None)
        return removed

    def _delete(self, keys: list[str]) -> int:
        """Forget the chunks and references of these files; how many chunks went."""
        index, wanted = self._index, set(keys)
        gone = [i for i, s in index.chunks.items() if s.chunk.path in wanted]
        for i in gone:
            del index.chunks[i]
        for key in wanted:
            index.references.pop(key, None)
        self.changed = self.changed or bool(gone)
        return len(gone)

    def set_vectors(self, hashes: list[str], vectors: np.ndarray, *, ids: tuple[int, int] | None = None) -> int:
        if not hashes or self.index is None:
            return 0
        by_hash = dict(zip(hashes, np.asarray(vectors, dtype=np.float32), strict=True))
        if self.index.meta.get("vector_dim", "0") == "0":
            self.index.meta["vector_dim"] = str(vectors.shape[1])
        return self._fill({i: by_hash[s.chunk.content_hash] for i, s in self.index.chunks.items()
                           if s.vector is None and s.chunk.content_hash in by_hash
                           and (ids is None or ids[0] <= i <= ids[1])})

    def copy_vectors(self, hashes: list[str]) -> int:
        if self.index is None:
            return 0
        having = self.vectors_by_hash(hashes)
        return self._fill({i: having[s.chunk.content_hash] for i, s in self.index.chunks.items()
                           if s.vector is None and s.chunk.content_hash in having})

    def _fill(self, vectors: dict[int, np.ndarray]) -> int:
        """Give these chunks these vectors (new Stored rows: a committed index shares the old ones)."""
        for i, vector in vectors.items():
            self._index.chunks[i] = dataclasses.replace(self._index.chunks[i], vector=vector)
        self.changed = self.changed or bool(vectors)
        return len(vectors)

    def mark_vectors_complete(self) -> None:
        if self.index is not None:
            self.index.vectors_complete = True


def _rows(vectors: np.ndarray, count: int) -> list[np.ndarray | None]:
    """Each chunk's vector, or None where its row is NaN or the matrix has no columns (pending)."""
    if vectors.shape[1] == 0:
        return [None] * count
    matrix = np.asarray(vectors, dtype=np.float32)
    return [None if np.isnan(row[0]) else row.copy() for row in matrix]
