"""The storage seam: what every backend (the DuckDB file, Qdrant) offers the core.

The indexer, search, duplicates and look-ups speak only these verbs, with the typed rows of
`sai.models` (`ChunkRow`, `FileRow`, `IndexMeta`, `NewChunk`); no SQL, connection or client
crosses this line. Derived state (the lexical index, in-memory vector and symbol tables) is the
backend's own business: `finish_run` brings it up to date and a run killed before it leaves
`lexical_current()` false, so the next run repairs it.

Ids: `ChunkRow.id` is an integer the backend chooses, stable while its index is unchanged; the
public name of a chunk is `chunk_id` (models.chunk_id), the same on every backend and machine.

Pending vectors: a store that declares `pending_vectors` may hold chunks without a vector yet
(the indexer stores chunks, postings and symbols first and embeds after, docs/design.md
"Incremental indexing"): `replace_files` takes a row of NaN for such a chunk, `set_vectors`
fills them later, and nearest/cosines/vector_of/all_chunks see only chunks that have one. A store
without it (the default) holds every chunk with its vector, and the indexer embeds before it writes.

Keys: every path here is a *key* (project-root-relative, '/'-separated); front ends turn what a
user typed into a key before calling the core (sai.source.files.key_for).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from sai.errors import StoreCorruptError
from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk
from sai.store.symbols import SymbolTable


@dataclass(frozen=True)
class Scope:
    """Which chunks a question is about: one language and the keys a glob passes (None: all).

    `prefix` is the glob's literal leading directory ('' when none): a backend that filters on
    its server may use it to narrow by key prefix before checking `keys` exactly.
    """

    language: str | None = None
    keys: frozenset[str] | None = None
    prefix: str = ""

    @property
    def everything(self) -> bool:
        return self.language is None and self.keys is None

    def admits(self, language: str | None, key: str) -> bool:
        """Whether a chunk of this language in this file is among the chunks the scope chooses."""
        return (self.language is None or language == self.language) and (self.keys is None or key in self.keys)


class IndexReader(ABC):
    """What a reader sees: one consistent state of the index while the session lasts. Without an
    index (never created, or dropped) every verb answers as an empty index does."""

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

    @abstractmethod
    def last_indexed_at(self) -> str | None: ...

    @abstractmethod
    def chunk_count(self, keys: list[str] | None = None) -> int: ...

    @abstractmethod
    def language_counts(self) -> dict[str, int]:
        """Chunks per language name held (no None key: unknown languages are left out)."""

    @abstractmethod
    def known_hashes(self) -> set[str]:
        """Content hashes of every stored chunk: texts an index run need not embed again."""

    @abstractmethod
    def lexical_current(self) -> bool:
        """True when the lexical index holds exactly the committed chunks (a reader asks first,
        so that a run with nothing to repair takes no writer)."""

    # -- search
    @abstractmethod
    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        """The k chunks (id, cosine) nearest to `vector` (L2-normalised, as embedders give it) within
        `scope`, best first, exact."""

    @abstractmethod
    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        """The k chunks (id, BM25) best matching the query's lexemes (sai.text.lexical.query_lexemes)
        within `scope`, best first; statistics over the scope as if the index held only it."""

    @abstractmethod
    def cosines(self, ids: list[int], vector: np.ndarray) -> dict[int, float]: ...

    @abstractmethod
    def vector_of(self, chunk: int) -> np.ndarray | None: ...

    # -- chunks
    @abstractmethod
    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        """The chunks with these ids, in the order given (unknown ids left out); without `text`
        their text is '' (the costly column: ranking needs only paths and symbols)."""

    @abstractmethod
    def texts(self, ids: list[int]) -> dict[int, str]: ...

    @abstractmethod
    def chunks_at(self, key: str, line: int) -> list[ChunkRow]:
        """Chunks of `key` whose range holds `line`, innermost (shortest range) first."""

    @abstractmethod
    def chunks_of_file(self, key: str) -> list[ChunkRow]:
        """Every chunk of one file with its text, in (start_line, end_line) order."""

    @abstractmethod
    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        """Every chunk without its text, the matrix of their vectors and their shape signatures,
        row-aligned, in (key, start_line, end_line) order: what duplicate search reads."""

    @abstractmethod
    def symbols(self) -> SymbolTable:
        """Where names are defined and which chunk a chunk_id names (store/symbols.py)."""

    # -- pending vectors (stores with `pending_vectors`; the others never hold a chunk without one)
    def pending_count(self) -> int:
        """How many chunks wait for a vector."""
        return 0

    def pending_hashes(self) -> list[str]:
        """The distinct content hashes of the chunks waiting for a vector, in the order stored."""
        return []

    def texts_by_hash(self, hashes: list[str]) -> dict[str, str]:
        """One stored text per content hash found (what the embedder is given)."""
        return {}


class IndexWriter(IndexReader):
    """A write session: everything it does is one transaction, committed when it ends cleanly."""

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
    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        """A stored vector for each content hash found, under any key."""

    @abstractmethod
    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        """Replace the chunks of these files by `chunks` (row-aligned with `vectors`; a row of NaN,
        or a matrix of no columns, for chunks without a vector yet: `pending_vectors` stores
        only) and record the files' state. A file with no chunks keeps its file row (it was read, it holds nothing)."""

    @abstractmethod
    def touch_files(self, files: list[FileRow]) -> None:
        """Record files' state only (unchanged content, new mtime)."""

    @abstractmethod
    def remove_files(self, keys: list[str]) -> int:
        """Forget these files and their chunks; returns the number of chunks removed."""

    def set_vectors(self, hashes: list[str], vectors: np.ndarray) -> int:
        """Give every chunk of these content hashes still without a vector its vector (rows of
        `vectors` aligned with `hashes`); returns how many chunks got one."""
        raise NotImplementedError(f"{type(self).__name__} stores every chunk with its vector")

    @abstractmethod
    def finish_run(self) -> None:
        """Bring derived state (the lexical index) up to date with the chunks; cheap when current."""


class Store(ABC):
    """One index: where it lives, and sessions on it. Readers run in parallel with each other;
    a writer excludes other writers (and, for the DuckDB file, readers of other processes while
    its transaction lasts). Errors of the engine surface as StoreError with one line."""

    backend: str  # the closed choice this implements (config `backend`)
    pending_vectors: bool = False  # may hold chunks without a vector yet (see the module's docstring)
    location: str  # where the index lives, for messages: a file path or a server URL

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

        By default the index is dropped first (a damaged one moved aside), so readers find no
        index until the first batch is written; a backend that can build beside the current
        index (DuckDB) lets readers keep it until the new one replaces it whole.
        """
        if self.exists:
            try:
                with self.write() as writer:
                    writer.drop()
            except StoreCorruptError:
                self.recreate()  # a damaged index cannot be opened to drop anything
        yield

    @abstractmethod
    def prepare(self) -> None:
        """Make what a first write needs (a directory); raise StoreError naming the fix."""

    @abstractmethod
    def recreate(self) -> None:
        """Start from nothing (--recreate): a damaged index is moved aside, not lost."""

    @abstractmethod
    def upgrade(self, from_version: int) -> None:
        """Bring an index of an older schema version to this one in place (numbered migrations)."""

    @abstractmethod
    def close(self) -> None: ...

