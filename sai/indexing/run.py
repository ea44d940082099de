"""One index run's state and stages: what the index held when it began, the changed files
prepared, batched, embedded and written, and the vectors a deferred run leaves for its second
stage (indexing/backfill.py). indexing/indexer.py runs it (docs/design.md, "Incremental indexing")."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sai.errors import EmbedderError
from sai.indexing.backfill import Backfill, EmbeddingThread, Follower, embedding_thread, resolved
from sai.indexing.stage_times import StageTimes
from sai.models import FileRow, IndexProgress, NewChunk, SourceFile
from sai.project import Project, chunks_part
from sai.store import IndexWriter

if TYPE_CHECKING:  # the CPU stage (tree-sitter and its grammars) loads when a file is read:
    # `sai --query-only` and the MCP server's searches never import it
    from sai.indexing.prepare import Prepared

FLUSH_CHUNKS = 256  # chunks between two write transactions
FLUSH_SECONDS = 20.0  # or this long, whichever comes first
IN_FLIGHT = 3  # batches prepared and sent to the embedder ahead of the one being written
# Large runs: each transaction ends in a checkpoint whose cost grows with the collection (~2 s at
# 78k chunks on a busy 2-core machine), so batches whose vectors are in are written together,
# up to WRITE_CHUNKS chunks, with more batches kept ahead to merge.
WRITE_CHUNKS = 4096
IN_FLIGHT_LARGE = 16
POOL_MIN_FILES = 200  # fewer files to read are prepared in this process (a pool starts in ~1 s)
FOLLOW = True  # a model off this machine's cores embeds beside the first stage (tests of the second stage alone: off)

Progress = Callable[[IndexProgress], None]
log = logging.getLogger(__name__)


@dataclass
class Counts:
    embedded: int = 0
    unchanged: int = 0
    removed: int = 0


@dataclass
class Batch:
    """Files prepared for one write transaction, and the embedding of their new text."""

    files: list[Prepared] = field(default_factory=list)
    touched: list[FileRow] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # content hash -> text to embed
    given: dict[str, np.ndarray] = field(default_factory=dict)  # content hash -> vector the CPU stage made
    chunks: int = 0
    vectors: Future[np.ndarray] | None = None


class Run:
    """One pass of writes against the store: prepares files, embeds new text, writes batches.

    A pipeline: files are prepared (read, chunked, rows built; in worker processes for large
    runs) while earlier batches are embedded on a background thread; batches are written in
    order by this thread as their vectors arrive, each in its own transaction, so an
    interrupted run keeps a prefix of its work and the next run finishes it.
    """

    def __init__(self, project: Project, *, progress: Progress | None = None, deferred: bool = False) -> None:
        self.project = project
        self.deferred = deferred  # write chunks now, their vectors later (Backfill)
        self.with_chunks = False  # the CPU stage embeds (an embedder `with_chunks`: process)
        self.config = project.config
        self.progress = progress
        self.counts = Counts()
        self.stats = StageTimes()
        self.fresh: dict[str, np.ndarray] = {}  # vectors embedded (or found stored) and not yet written
        self.embedded: set[str] = set()  # content hashes embedded during this run
        self.requested: set[str] = set()  # content hashes sent to the embedder this run
        self._known: set[str] | None = set()  # content hashes stored (None: not read yet; `known`)
        self.stored: dict[str, FileRow] = {}
        self.had_rows: set[str] = set()  # files with rows when the run began
        self.dim: int | None = None
        self.meta: dict[str, str] = {}
        self.wrote = False
        self.merge = False  # write ready batches together (large runs)
        self.rechunk = False  # chunking settings changed since the index was built
        self.references_only = False  # ...and of them only the references' (chunks as they were)
        self.complete = True  # no chunk waited for a vector when the run began (store: vectors_complete)
        self.stored_pending = False  # this run stored a chunk without a vector
        self.follower: Follower | None = None  # embeds beside the first stage (started by process())

    def load_state(self, keys: list[str] | None = None) -> None:
        """The index's meta and file rows: every file's, or only those of `keys` (a refresh of a
        few files needs no other row: reading all of them was 0.24 s of a one-file refresh at 300k
        chunks)."""
        if not self.project.store.exists:
            return
        with self.project.store.read() as reader:
            self.meta = reader.meta()
            if reader.has_index():
                self.project.check_meta(self.meta)
                built, wanted = self.meta.get("chunking", ""), self.project.chunking_signature()
                self.rechunk = built != wanted
                self.references_only = self.rechunk and chunks_part(built) == chunks_part(wanted)
                self.stored = reader.files(keys)
                self.had_rows = set(self.stored)
                self._known = None  # read when a file changed: a no-op run never needs them
                self.complete = reader.vectors_complete()
                self.dim = int(self.meta["vector_dim"]) or None  # 0: no vector stored yet

    @property
    def known(self) -> set[str]:
        """The content hashes the index holds, read at the first changed file of a large run (1.6 s
        of a no-op run at 1M chunks otherwise; a run of a few files asks for its batches' texts
        instead, `_reuse_stored`); the hashes this run stored since are in `requested` too."""
        if self._known is None:
            with self.project.store.read() as reader:
                self._known = reader.content_hashes()
        return self._known

    def probe_dim(self) -> None:
        """A deferred first build writes chunks before any vector: with `vector_dim` in the config,
        one embedding first, so a model of another length is refused before anything is written."""
        if self.deferred and self.dim is None and self.config.vector_dim:
            self._probe()

    def _probe(self) -> None:
        """One embedding, checked against the index: the model is loaded (or built) by it."""
        self.check_vectors(["probe"], self.project.embedder.embed_documents(["vector_dim probe"]))

    def _stored_hash(self, source: SourceFile) -> str | None:
        """The stored file's hash the CPU stage may skip an unchanged file by (none when every
        file is chunked again)."""
        return None if self.rechunk else self._file_hash(source.key)

    def add(self, batch: Batch, item: Prepared) -> None:
        for stage, seconds in item.times.items():
            setattr(self.stats, stage, getattr(self.stats, stage) + seconds)
        source = item.source
        if item.unchanged:
            count = self.stored[source.key].chunk_count
            batch.touched.append(FileRow(source.key, source.size, source.mtime_ns, item.file_hash, count))
            self.counts.unchanged += count
            return
        if item.vectors is not None:
            batch.given.update(zip(item.hashes, item.vectors, strict=True))
        for chunk, digest in zip(item.chunks, item.hashes, strict=True):
            if (not self.deferred or item.vectors is not None) and digest not in self.requested \
                    and not (self.merge and digest in self.known):
                batch.texts[digest] = chunk.text
                self.requested.add(digest)
        batch.files.append(item)
        batch.chunks += len(item.chunks)

    def _take_vectors(self, hashes: list[str], vectors: np.ndarray) -> None:
        self.check_vectors(hashes, vectors)
        self.fresh.update(zip(hashes, vectors, strict=True))
        self.embedded.update(hashes)
        self.counts.embedded += len(hashes)

    def check_vectors(self, hashes: list[str], vectors: np.ndarray) -> None:
        """Raise unless these vectors fit the index (one per text, the index's dimension)."""
        if vectors.ndim != 2 or vectors.shape[0] != len(hashes):
            raise EmbedderError("the embedder returned a wrong number of vectors; check the model")
        if self.dim is None:
            self.dim = int(vectors.shape[1])
            self.project.check_meta(self.meta, vector_dim=self.dim)
        elif vectors.shape[1] != self.dim:
            self.project.check_meta(self.meta or {"vector_dim": str(self.dim)}, vector_dim=int(vectors.shape[1]))

    def _embed_now(self, texts: dict[str, str]) -> None:
        hashes = list(texts)
        with self.stats.timing("embed_wait"):
            vectors = self.project.embedder.embed_documents([texts[h] for h in hashes])
        self._take_vectors(hashes, vectors)

    def write(self, batches: list[Batch]) -> None:
        """Wait for the batches' vectors, then write them in one transaction."""
        for batch in batches:
            if batch.vectors is not None:
                with self.stats.timing("embed_wait"):
                    vectors = batch.vectors.result()
                self._take_vectors(list(batch.texts), vectors)
        written = [item for batch in batches for item in batch.files]
        touched = [row for batch in batches for row in batch.touched]
        if not written and not touched:
            return
        self.wrote = True
        self.stats.transactions += 1
        with self.stats.timing("write"), self.project.store.write() as writer:
            if written:
                self._ensure_index(writer)
                self._write_files(writer, written)
            writer.touch_files(touched)
        for batch in batches:
            for digest in batch.texts:
                self.fresh.pop(digest, None)  # stored now: later batches read it from the index

    def _ensure_index(self, writer: IndexWriter) -> None:
        if not writer.has_index():
            # a deferred run learns the dimension from its first vectors (set_vectors records it)
            dim = self.dim or (0 if self.deferred else self.config.vector_dim or 0)
            writer.create(self.project.expected_meta(dim))

    def _write_files(self, writer: IndexWriter, batch: list[Prepared]) -> None:
        if self.references_only:  # a file as it was stored keeps its chunk rows: only its uses are new
            same = {item.source.key for item in batch if item.file_hash == self._file_hash(item.source.key)}
            if same and self.project.store.references:
                writer.replace_references({item.source.key: item.refs for item in batch if item.source.key in same})
            self.counts.unchanged += sum(len(item.chunks) for item in batch if item.source.key in same)
            batch = [item for item in batch if item.source.key not in same]
            if not batch:
                return
        keys = [item.source.key for item in batch]
        indexed = [key for key in keys if key in self.had_rows]  # new files have no rows to look up
        old_hashes = writer.chunk_hashes(indexed) if indexed else {}
        vectors = self._vectors(writer, batch)
        chunks: list[NewChunk] = []
        file_rows = []
        for item in batch:
            old = old_hashes.get(item.source.key, [])
            kept = count_kept(old, item.hashes)
            self.counts.removed += len(old) - kept
            self.counts.unchanged += sum(1 for digest in item.hashes
                                         if digest in vectors and digest not in self.embedded)
            chunks.extend(item.rows)
            source = item.source
            file_rows.append(FileRow(source.key, source.size, source.mtime_ns, item.file_hash, len(item.chunks)))
        matrix = self._matrix(chunks, vectors)
        writer.replace_files(file_rows, chunks, matrix)
        if self.project.store.references:
            writer.replace_references({item.source.key: item.refs for item in batch})
        self.stored_pending = self.stored_pending or any(not len(row) or np.isnan(row[0]) for row in matrix)

    def _file_hash(self, key: str) -> str | None:
        old = self.stored.get(key)
        return None if old is None else old.file_hash

    def _matrix(self, chunks: list[NewChunk], vectors: dict[str, np.ndarray]) -> np.ndarray:
        """The chunks' vectors, row-aligned; a deferred run's chunks without one get a row of NaN
        (no columns when the index has no vector at all yet)."""
        dim = self.dim or next((len(v) for v in vectors.values()), 0)
        if not chunks or not dim:
            return np.zeros((len(chunks), dim), dtype=np.float32)
        missing = np.full(dim, np.nan, dtype=np.float32)
        return np.vstack([vectors.get(c.content_hash, missing) for c in chunks])

    def _vectors(self, writer: IndexWriter, batch: list[Prepared]) -> dict[str, np.ndarray]:
        """A vector for every chunk of the batch: embedded this run, or stored under any path.

        Text stored when the run began but rewritten by an earlier batch of this run (a function
        moved between two changed files) is embedded here: rare, and never a missing vector.
        """
        texts = {digest: chunk.text for item in batch for chunk, digest in zip(item.chunks, item.hashes, strict=True)
                 if digest not in self.fresh}
        # asked of the index: only a text it may hold (a first build's new text cannot be there)
        asked = [digest for digest in texts if self._known is None or digest in self._known or digest in self.requested]
        vectors = {**writer.vectors_by_hash(asked), **self.fresh}
        lost = {digest: text for digest, text in texts.items() if digest not in vectors}
        if lost and not self.deferred:  # a deferred run embeds every text without a vector next
            log.debug("embedding %d chunk(s) whose stored copy this run replaced", len(lost))
            self._embed_now(lost)
            vectors.update(self.fresh)
        return vectors

    def remove(self, keys: list[str]) -> None:
        if not keys or not self.stored:
            return
        with self.project.store.write() as writer:
            self.counts.removed += writer.remove_files(keys)
        for key in keys:
            self.stored.pop(key, None)

    def _prepared(self, sources: list[SourceFile]) -> Generator[Prepared, None, None]:
        from sai.indexing.prepare import PreparePool, prepare

        tasks = ((source, self._stored_hash(source)) for source in sources)
        if len(sources) < POOL_MIN_FILES or (os.cpu_count() or 1) < 2:
            embedder = self.project.embedder if self.with_chunks else None
            for source, stored in tasks:
                yield prepare(source, self.config, stored, embedder=embedder)
            return
        pool = PreparePool(self.config, workers=os.cpu_count() or 2, embed=self.with_chunks)
        try:
            yield from pool.map(tasks)
        finally:
            pool.close()

    def process(self, sources: list[SourceFile], total: int) -> list[tuple[str, str]]:
        """Read, chunk, embed and write these files; returns (key, reason) for unreadable ones.

        A deferred run sends no text to the model before its chunks are stored, unless the model
        is cheap enough to embed in the CPU stage itself (`with_chunks`: the static table), which
        then writes every chunk with its vector."""
        self.merge = len(sources) >= POOL_MIN_FILES
        self.with_chunks = self.project.embedder.with_chunks
        if self.with_chunks:  # the model loaded (or built) once, here, before a worker needs it
            self._probe()
        in_flight: deque[Batch] = deque()
        if (FOLLOW and self.deferred and not self.with_chunks and self.follower is None
                and self.project.embedder.runs_elsewhere()):
            self.follower = Follower(Backfill(self.project.store, self.project.embedder, check=self.check_vectors,
                                              progress=self.progress))
        with embedding_thread(self.project.embedder) as embedding:
            try:
                with contextlib.closing(self._prepared(sources)) as prepared:  # stops a pool now
                    skipped = self._pump(prepared, embedding, in_flight, total)
            finally:
                for pending in in_flight:
                    if pending.vectors is not None:
                        pending.vectors.cancel()
        if self.progress and total:
            self.progress(IndexProgress("reading", files_done=total, files_total=total,
                                        chunks_embedded=self.embedded_so_far))  # the last batch is in
        if self.follower is not None:
            self.follower.stored.set()  # its vectors may be written now
        return skipped

    @property
    def embedded_so_far(self) -> int:
        return self.counts.embedded + (self.follower.backfill.embedded if self.follower is not None else 0)

    @contextlib.contextmanager
    def following(self) -> Iterator[None]:
        """The run's stages, with a follower (started by process() for a model off this machine's
        cores: it embeds the chunks the first stage stores while that stage goes on) stopped if they raise."""
        try:
            yield
        except BaseException:
            if self.follower is not None:
                self.follower.halt()
            raise

    def backfill(self) -> None:
        """Embed the texts stored without a vector (this run's and any a killed run left): when
        none waited as the run began, those are this run's, known without reading every chunk."""
        followed = self.follower.finish() if self.follower is not None else 0
        if self.complete and not self.stored_pending:
            if self.wrote and not self.meta:  # a first build whose vectors all came with their chunks
                with self.project.store.write() as writer:
                    writer.mark_vectors_complete()
            return
        self.counts.embedded += followed + Backfill(
            self.project.store, self.project.embedder, check=self.check_vectors, progress=self.progress,
            resumed=not self.complete or followed > 0, already=followed).run()

    def _pump(self, prepared: Iterator[Prepared], embedding: EmbeddingThread, in_flight: deque[Batch],
              total: int) -> list[tuple[str, str]]:
        skipped: list[tuple[str, str]] = []
        batch, last = Batch(), time.monotonic()
        for done, item in enumerate(prepared, start=1):
            if item.skip:
                skipped.append((item.source.key, item.skip))
            else:
                self.add(batch, item)
            if batch.chunks >= FLUSH_CHUNKS or time.monotonic() - last > FLUSH_SECONDS:
                self._submit(batch, embedding, in_flight)
                batch, last = Batch(), time.monotonic()
            if self.progress:
                self.progress(IndexProgress("reading", files_done=done, files_total=total,
                                            chunks_embedded=self.embedded_so_far))
        self._submit(batch, embedding, in_flight, depth=0)
        return skipped

    def _submit(self, batch: Batch, embedding: EmbeddingThread, in_flight: deque[Batch], *,
                depth: int | None = None) -> None:
        """Send the batch's new text to the embedder; write the oldest batches beyond `depth`."""
        if depth is None:
            depth = IN_FLIGHT_LARGE if self.merge else IN_FLIGHT
        if batch.texts and not self.merge:
            self._reuse_stored(batch)
        if batch.texts:
            given = all(digest in batch.given for digest in batch.texts)  # the CPU stage embedded them
            batch.vectors = (resolved(np.vstack([batch.given[digest] for digest in batch.texts])) if given
                             else embedding.submit(list(batch.texts.values())))
        in_flight.append(batch)
        while len(in_flight) > depth:
            group = [in_flight.popleft()]
            chunks = group[0].chunks
            # Each transaction costs a checkpoint (~0.1-0.3 s): a large run writes the batches
            # whose vectors are already in together, up to WRITE_CHUNKS chunks.
            while (self.merge and in_flight and chunks + in_flight[0].chunks <= WRITE_CHUNKS
                   and (in_flight[0].vectors is None or in_flight[0].vectors.done())):
                chunks += in_flight[0].chunks
                group.append(in_flight.popleft())
            self.write(group)

    def _reuse_stored(self, batch: Batch) -> None:
        """A run of a few files asks the index which of a batch's new texts it holds, and takes
        their vectors, instead of reading every stored hash first (`known`: 1.2 s of a one-file
        refresh at 1M chunks, where one look-up by hash costs 0.1 s)."""
        if not self.project.store.exists:
            return  # a first build: nothing stored before the run, and `requested` knows its own texts
        with self.project.store.read() as reader:
            held = reader.vectors_by_hash(list(batch.texts))
        for digest in held:
            del batch.texts[digest]
        self.fresh.update(held)


def count_kept(old: list[str], new: list[str]) -> int:
    remaining = list(old)
    kept = 0
    for digest in new:
        if digest in remaining:
            remaining.remove(digest)
            kept += 1
    return kept
