"""The storage seam: what every backend (the DuckDB file, Qdrant) offers the core.

The indexer, search, duplicates and look-ups speak only these verbs, with the typed rows of
`sai.models` (`ChunkRow`, `FileRow`, `IndexMeta`, `NewChunk`); no SQL, connection or client
crosses this line. Derived state (the lexical index, in-memory vector and symbol tables) is the
backend's own business, kept current by every write.

Capabilities: what a backend does beyond the verbs is declared on its Store (`transactional`,
`pending_vectors`, `can_upgrade`, `keeps_old_on_recreate`, `references`), and callers and the contract test
read those flags, never the backend's name.

Ids: `ChunkRow.id` is an integer the backend chooses, stable while its index is unchanged; the
public name of a chunk is `chunk_id` (models.chunk_id), the same on every backend and machine.

Pending vectors: a store that declares `pending_vectors` may hold chunks without a vector yet
(the indexer stores chunks, postings and symbols first and embeds after, docs/design.md
"Incremental indexing"): `replace_files` takes a row of NaN for such a chunk, `pending` names
them by first id, `set_vectors` and `copy_vectors` fill them later, and nearest/vectors/all_chunks
see only chunks that have one. A store without it (the default) holds every chunk with its
vector, and the indexer embeds before it writes.

Keys: every path here is a *key* (project-root-relative, '/'-separated); front ends turn what a
user typed into a key before calling the core (sai.source.files.key_for).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from sai.errors import StoreCorruptError
from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk, Reference
from sai.store.shapes import ShapeTable
from sai.store.symbols import SymbolTable


@dataclass(frozen=True)
class Scope:
    """Which chunks a question is about: one language and the keys a glob passes (None: all)."""

    language: str | None = None
    keys: frozenset[str] | None = None

    @property
    def everything(self) -> bool:
        return self.language is None and self.keys is None

    def admits(self, language: str | None, key: str) -> bool:
        """Whether a chunk of this language in this file is among the chunks the scope chooses."""
        return (self.language is None or language == self.language) and (self.keys is None or key in self.keys)


@dataclass(frozen=True)
class Pending:
    """A text waiting for a vector: its content hash, the id of its first chunk, and how many
    chunks hold it (more than one: copies, which `copy_vectors` fills from the first)."""

    content_hash: str
    first_id: int
    chunks: int = 1


@dataclass(frozen=True)
class IndexSummary:
    """What `status` reports of an index, read in one session (an empty one without an index)."""

    meta: dict[str, str] = field(default_factory=dict)
    files: dict[str, FileRow] = field(default_factory=dict)
    chunk_count: int = 0
    languages: dict[str, int] = field(default_factory=dict)  # chunks per known language
    indexed_at: str | None = None  # when a file was last recorded (ISO 8601, UTC)
    pending: int = 0  # chunks waiting for a vector


class IndexReader(ABC):
    """What a reader sees: the index while the session lasts (one consistent state on a
    `transactional` store). Without an index (never created, or dropped) every verb answers as
    an empty index does."""

    # -- the index and its files
    @abstractmethod
    def has_index(self) -> bool:
        """True once chunks were written (the collection exists)."""

    @abstractmethod
    def meta(self) -> dict[str, str]:
        """What the index was built with (IndexMeta's fields as strings, plus `token`,
        `chunking`, ...); {} when there is no index."""

    @abstractmethod
    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        """The indexed files' state (size, mtime, hash, chunk count) by key; all when keys is None."""

    def file_hashes(self) -> dict[str, str]:
        """Every indexed file's content hash by key (what the resolver keeps per index state)."""
        return {key: row.file_hash for key, row in self.files().items()}

    @abstractmethod
    def chunk_count(self, keys: list[str] | None = None) -> int: ...

    @abstractmethod
    def summary(self) -> IndexSummary:
        """The meta, the files, and the counts `status` shows."""

    @abstractmethod
    def content_hashes(self) -> set[str]:
        """Content hashes of every chunk stored with its vector: texts an index run need not embed again."""

    @abstractmethod
    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """A stored vector for each content hash found, under any key (what a run of a few files
        asks instead of reading every hash)."""

    # -- search
    @abstractmethod
    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        """The k chunks (id, cosine) nearest to `vector` (L2-normalised, as embedders give it) within
        `scope`, best first. Exact on Qdrant, and on DuckDB up to 150,000 rows; above that a sign-bit
        pass picks the rows scored exactly (recall@10 0.997 against the exact scan at 1M chunks)."""

    def nearest_each(self, vectors: np.ndarray, k: int, *, exclude: list[int],
                     floor: float = -1.0) -> list[list[tuple[int, float]]]:
        """nearest(vectors[i], k, exclude=exclude[i]) over the whole index for each row, only the
        chunks of cosine >= floor: what `impact` asks for every unit a diff changes (its near
        copies). A store may answer them together."""
        return [[hit for hit in self.nearest(v, k, exclude=e) if hit[1] >= floor]
                for v, e in zip(vectors, exclude, strict=True)]

    @abstractmethod
    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        """The k chunks (id, BM25) best matching the query's lexemes (sai.text.lexical.query_lexemes)
        within `scope`, best first; statistics over the scope as if the index held only it."""

    @abstractmethod
    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        """The stored vector of each of these chunks (chunks unknown or without one left out)."""

    # -- chunks
    @abstractmethod
    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        """The chunks with these ids, in the order given (unknown ids left out); without `text`
        their text is '' (the costly column: ranking needs only paths and symbols)."""

    @abstractmethod
    def chunks_of_file(self, key: str, *, line: int | None = None) -> list[ChunkRow]:
        """Every chunk of one file with its text, in (start_line, end_line) order; with `line`,
        only those whose range holds it, innermost (shortest range) first."""

    @abstractmethod
    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        """Every chunk without its text, the matrix of their vectors and their shape signatures,
        row-aligned, in (key, start_line, end_line) order: what duplicate search reads."""

    @abstractmethod
    def symbols(self) -> SymbolTable:
        """Where names are defined and which chunk a chunk_id names (store/symbols.py)."""

    def shapes(self) -> ShapeTable:
        """Every chunk's shape signature by id (store/shapes.py): what `impact` finds copies by.
        Read from all_chunks here; a store that holds a copy of them answers from it."""
        rows, _, blobs = self.all_chunks()
        return ShapeTable.of_blobs("", np.array([row.id for row in rows], dtype=np.int64), blobs)

    # -- pending vectors (stores with `pending_vectors`; the others never hold a chunk without one)
    def pending_count(self) -> int:
        """How many chunks wait for a vector."""
        return 0

    def pending(self, after: int = 0) -> list[Pending]:
        """The distinct texts waiting for a vector among the chunks of id above `after`, each
        with the id of its first chunk, in the order stored (ids grow as chunks are stored)."""
        return []

    def vectors_complete(self) -> bool:
        """Whether the store has recorded that no chunk waits for a vector (see
        `IndexWriter.mark_vectors_complete`), so that this is known without looking at every chunk."""
        return True

    def texts_by_id(self, ids: list[int]) -> dict[int, str]:
        """The text of each of these chunks found (what the embedder is given)."""
        return {}

    # -- references (stores with `references`; the others hold none)
    def references(self, names: list[str]) -> list[Reference]:
        """Every stored use of one of these names, by path and position."""
        return []

    def references_in(self, key: str, start: int, end: int) -> list[Reference]:
        """Every stored use in lines start..end of one file, by position."""
        return []

    def files_using(self, names: list[str]) -> dict[str, set[str]]:
        """The files holding a stored use of each name (name -> keys), without the uses."""
        out: dict[str, set[str]] = {name: set() for name in names}
        for ref in self.references(names):
            out[ref.name].add(ref.path)
        return out


class EmptyReader(IndexReader):
    """The reader of an index that does not exist: every verb answers as an empty index does
    (a store hands out the one EMPTY instead of guarding each verb)."""

    def has_index(self) -> bool:
        return False

    def meta(self) -> dict[str, str]:
        return {}

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        return {}

    def chunk_count(self, keys: list[str] | None = None) -> int:
        return 0

    def summary(self) -> IndexSummary:
        return IndexSummary()

    def content_hashes(self) -> set[str]:
        return set()

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        return {}

    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        return []

    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        return []

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        return {}

    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        return []

    def chunks_of_file(self, key: str, *, line: int | None = None) -> list[ChunkRow]:
        return []

    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        return [], np.zeros((0, 0), dtype=np.float32), []

    def symbols(self) -> SymbolTable:
        return SymbolTable("", [])


EMPTY = EmptyReader()


class IndexWriter(IndexReader):
    """A write session, committed when it ends cleanly: one transaction on a `transactional`
    store (readers never see it half done, an exception undoes it); elsewhere each verb lands
    when called, in an order that leaves a killed run harmless (the backend's docstring)."""

    @abstractmethod
    def create(self, meta: IndexMeta) -> None:
        """Create the (empty) index recording `meta`; the index must not exist."""

    @abstractmethod
    def drop(self) -> None:
        """Remove the index, its files and its metadata (flush)."""

    @abstractmethod
    def set_meta(self, values: dict[str, str]) -> None: ...

    @abstractmethod
    def chunk_hashes(self, keys: list[str]) -> dict[str, list[str]]:
        """The content hashes of each file's stored chunks (what a rewrite keeps)."""

    @abstractmethod
    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        """Replace the chunks of these files by `chunks` (row-aligned with `vectors`; a row of NaN,
        or a matrix of no columns, for chunks without a vector yet: `pending_vectors` stores
        only) and record the files' state. A file with no chunks keeps its file row (it was read, it holds nothing)."""

    def replace_references(self, by_key: dict[str, pa.Table]) -> None:
        """The uses of names in these files are these (tables of store/uses.py's SCHEMA; stores with
        `references`; after `replace_files` of the same files, in the same session). `remove_files`
        removes them."""

    @abstractmethod
    def touch_files(self, files: list[FileRow]) -> None:
        """Record files' state only (unchanged content, new mtime)."""

    @abstractmethod
    def remove_files(self, keys: list[str]) -> int:
        """Forget these files and their chunks; returns the number of chunks removed."""

    def set_vectors(self, hashes: list[str], vectors: np.ndarray, *, ids: tuple[int, int] | None = None) -> int:
        """Give every chunk of these content hashes still without a vector its vector (rows of
        `vectors` aligned with `hashes`), only among chunk ids lo..hi when `ids` is (lo, hi):
        a bounded write reads only that stretch of the chunks, whatever their number, and
        `copy_vectors` gives the copies of those texts elsewhere theirs. Returns how many
        chunks got one."""
        raise NotImplementedError(f"{type(self).__name__} stores every chunk with its vector")

    def copy_vectors(self, hashes: list[str]) -> int:
        """Give every chunk of these content hashes without a vector the vector another chunk
        of its hash has (the caller passes a few thousand hashes a transaction: what it gathers
        and writes grows with them); returns how many got one."""
        return 0

    def mark_vectors_complete(self) -> None:
        """Record that no chunk waits for a vector: the caller gave a vector to every text
        pending() named (or it named none), under the one index run (Store.claim). A chunk
        stored without a vector afterwards unmarks it in the same transaction."""


class Store(ABC):
    """One index: where it lives, what it can do, and sessions on it. Readers run in parallel
    with each other; a writer excludes other writers (and, for the DuckDB file, readers of other
    processes while its transaction lasts). Errors of the engine surface as StoreError with one
    line naming `location`."""

    backend: str  # the closed choice this implements (config `backend`)
    location: str  # where the index lives, for messages: the file, or the Qdrant path or URL and collection
    # capabilities (read by callers and the contract test instead of the backend's name)
    transactional: bool = False  # a write session is one transaction (see IndexWriter)
    pending_vectors: bool = False  # may hold chunks without a vector yet (see the module's docstring)
    can_upgrade: bool = False  # upgrade() migrates an index of an older format in place
    references: bool = False  # stores the uses of names (replace_references, references)
    # reader.shapes() reads no chunk row (a copy of the signatures, or every row in memory):
    # without it `similar` ranks by the cosine alone, not reading the whole index per question
    cheap_shapes: bool = False
    keeps_old_on_recreate: bool = False  # rebuild() keeps the old index readable until the new one
    # replaces it, and recreate() moves a damaged index aside; without it both drop the index

    @property
    @abstractmethod
    def exists(self) -> bool:
        """True when there is anything to read (a file, a collection)."""

    @abstractmethod
    def read(self) -> contextlib.AbstractContextManager[IndexReader]: ...

    @abstractmethod
    def write(self) -> contextlib.AbstractContextManager[IndexWriter]: ...

    @contextlib.contextmanager
    def claim(self, *, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Around one whole index run: one run of an index at a time. A second run waits here,
        before it reads a file or embeds anything (calling `on_wait` once when it has to wait),
        and then finds the first run's work done. Nothing by default (no such lock)."""
        yield

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        """Around the writes of one index run: what they may share (DuckDB keeps one writer
        connection and checkpoints once at the end); nothing by default."""
        yield

    @contextlib.contextmanager
    def rebuild(self) -> Iterator[None]:
        """Around the writes of a `--recreate` run, which build the index from nothing.

        By default the index is dropped first, so readers find no index until the first batch
        is written; a store that `keeps_old_on_recreate` lets readers keep it until the new one
        replaces it whole.
        """
        if self.exists:
            try:
                with self.write() as writer:
                    writer.drop()
            except StoreCorruptError:
                self.recreate()  # a damaged index cannot be opened to drop anything
        yield

    def warm(self) -> None:
        """Build, after an index run or a refresh that wrote, what the first question would
        otherwise build or patch (DuckDB: the copies every searching process maps,
        store/duckdb/copies.py), so the first answer after a write is not the one that
        pays for it; nothing by default."""
        return

    @abstractmethod
    def prepare(self) -> None:
        """Make what a first write needs (a directory); raise StoreError naming the fix."""

    @abstractmethod
    def recreate(self) -> None:
        """Start from nothing: a damaged index is moved aside when the store
        `keeps_old_on_recreate`, else dropped."""

    def upgrade(self, from_version: int) -> None:
        """Bring an index of an older format to this one in place (`can_upgrade` stores only)."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade an index in place")

    @abstractmethod
    def close(self) -> None: ...
