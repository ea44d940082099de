"""The second stage of an index run: vectors for the chunks stored without one.

An index run on a store with `pending_vectors` (store/base.py) first stores every changed file's
chunks, file rows, postings and symbols, which takes seconds and no model, so search, symbols and
reading work at once; then this stage embeds the distinct texts still waiting, in the order they
were stored, and writes their vectors in short transactions. A kill at any moment keeps every
vector written; the next run finds the rest by `pending()` and goes on from there
(docs/design.md, "Incremental indexing").
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future

import numpy as np

from sai.embedders.base import Embedder
from sai.embedders.stoppable import STOP_WAIT_S, EmbeddingStopped, StoppableEmbedder
from sai.models import IndexProgress
from sai.store.base import Pending, Store

EMBED_GROUP = 64  # texts per embedding call: a progress step every few seconds on a CPU
READ_TEXTS = 1024  # texts read in one session (each read pays a session and a query: 19 % of the stage at 64)
COPY_HASHES = 4_096  # texts whose copies one transaction fills (Backfill._copy)
AHEAD = 4  # groups sent to the embedder ahead of the one being taken
AHEAD_SERVED = 256  # for a served model: work queued for the server while a write's transaction runs (~8 s at 2,000/s)
SERVED_CALLS = 2  # embedding calls in flight at once for a served model (EmbeddingThread)
WRITE_CHUNKS = 4096  # vectors per write transaction
WRITE_SECONDS = 5.0  # or this long, whichever comes first: readers see vectors arrive
FOLLOW_POLL_S = 0.25  # how often follow() looks for the chunks a first stage stored
FOLLOW_BUFFER_BYTES = 256 << 20  # vectors follow() keeps while the first stage stores (87k at 768 dimensions)

Check = Callable[[list[str], np.ndarray], None]  # raises when vectors do not fit the index
log = logging.getLogger(__name__)


class EmbeddingThread:
    """`calls` daemon threads taking embedding calls in submission order, each call's vectors handed back
    through its future (daemon: Ctrl-C never waits)."""

    def __init__(self, embedder: Embedder, calls: int = 1) -> None:
        self.embedder = embedder
        self.queue: queue.Queue[tuple[list[str], Future[np.ndarray]] | None] = queue.Queue()
        self.threads = [threading.Thread(target=self._serve, name=f"sai-embed-{n}", daemon=True)
                        for n in range(calls)]
        for thread in self.threads:
            thread.start()

    def submit(self, texts: list[str]) -> Future[np.ndarray]:
        future: Future[np.ndarray] = Future()
        self.queue.put((texts, future))
        return future

    def _serve(self) -> None:
        while (item := self.queue.get()) is not None:
            texts, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self.embedder.embed_documents(texts))
            except BaseException as exc:  # handed to the waiting thread, which raises it
                future.set_exception(exc)

    def close(self) -> None:
        for _ in self.threads:
            self.queue.put(None)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))


@contextlib.contextmanager
def embedding_thread(embedder: Embedder, calls: int = 1) -> Iterator[EmbeddingThread]:
    """An EmbeddingThread over `embedder`, ended in order: when the block raises (Ctrl-C, a lock
    not had), its threads are stopped between two model rounds and joined, so they are out of the
    model before the interpreter exits (embedders/stoppable.py)."""
    stoppable = StoppableEmbedder(embedder)
    embedding = EmbeddingThread(stoppable, calls)
    try:
        yield embedding
    except BaseException:
        stoppable.stop()
        raise
    finally:
        embedding.close()
        if stoppable.stopped.is_set():
            embedding.join(STOP_WAIT_S)


class Backfill:
    """Embeds every text waiting for a vector and writes the vectors, reporting each step.

    Texts are read by the id of their first chunk and vectors written to the stretch of ids a
    write covers, so that each step reads only its own rows (ids grow as chunks are stored) and
    the stage costs the same per text at any size; copies of a text outside that stretch get its
    vector from `copy_vectors` at the end (docs/design.md, "Incremental indexing")."""

    def __init__(self, store: Store, embedder: Embedder, *, check: Check,
                 progress: Callable[[IndexProgress], None] | None = None, resumed: bool = True,
                 already: int = 0) -> None:
        self.store = store
        self.resumed = resumed  # a killed run's texts may wait (else only the caller's run stored any)
        self.embedder = embedder
        self.check = check
        self.progress = progress
        self.embedded = 0  # distinct texts embedded
        self.written = 0  # ...and their vectors written
        self.already = already  # texts this run embedded before (a follower's): counted in the progress
        self.total = 0
        self._ready: list[tuple[list[Pending], np.ndarray]] = []
        self._copies: list[str] = []  # the texts waiting in more than one chunk
        self._last_write = time.monotonic()
        self._halted = threading.Event()
        self._stored = threading.Event()  # the first stage has stored every chunk (follow: until then vectors are kept)
        self._stored.set()

    def run(self) -> int:
        """Embed what waits; returns how many texts were embedded. Once every text that waited has
        its vector, the store records that none waits (mark_vectors_complete), so the next run
        need not look at every chunk to know it."""
        with self.store.read() as reader:
            waiting = reader.pending()
        if self.resumed and waiting:  # copies of texts embedded before (a killed run, a follower) need no model
            self._copy([item.content_hash for item in waiting])
            with self.store.read() as reader:
                waiting = reader.pending()
        self.total = len(waiting)
        self._copies = [item.content_hash for item in waiting if item.chunks > 1]
        if waiting:
            self._report()
        with self._embedding() as feed:
            feed(waiting)
        self._write()
        self._finish()
        return self.embedded

    def follow(self, stored: threading.Event, done: threading.Event) -> None:
        """Embed the texts a first stage stores while it runs (`embedded`, and `written` of them).

        Until `stored` (the first stage has stored every chunk) the vectors are kept, not written:
        a write would hold the lease and the cores the first stage works on (written as they
        came, the first answer came at 58.5 s against 30.8). Up to FOLLOW_BUFFER_BYTES of them;
        then it waits. After `done`, it returns once nothing new waits. The copies of a text, and
        a text whose first chunk came before the last one read, are left to run()."""
        self._stored = stored
        after, seen = 0, set[int]()  # hash() of the texts' content hashes: 60 MB at 1M texts, not 150
        with self._embedding() as feed:
            while not self._halted.is_set():
                last = done.is_set()
                waiting = []
                if self.store.exists:  # a first build's file comes with its first chunks
                    with self.store.read() as reader:
                        if reader.has_index():
                            waiting = [item for item in reader.pending(after) if hash(item.content_hash) not in seen]
                if waiting:  # (two texts of one hash(): the second is left to run())
                    after = max(item.first_id for item in waiting)
                    seen.update(hash(item.content_hash) for item in waiting)
                    self.total += len(waiting)
                    feed(waiting)
                elif last:
                    break
                else:
                    done.wait(FOLLOW_POLL_S)
        self._write()

    def halt(self) -> None:
        """Stop follow() (from another thread): it raises EmbeddingStopped at its next step."""
        self._halted.set()

    def _kept_bytes(self) -> int:
        return sum(vectors.nbytes for _, vectors in self._ready)

    @contextlib.contextmanager
    def _embedding(self) -> Iterator[Callable[[list[Pending]], None]]:
        """A feed of waiting texts to the embedder, with calls in flight across feeds; every call
        is taken before the block ends.

        A served model (Ollama) gets calls in flight and work queued while this side decodes
        answers and writes vectors (docs/design.md, "Incremental indexing": a served model's second stage)."""
        in_flight: deque[tuple[list[Pending], Future[np.ndarray]]] = deque()
        served = self.embedder.served
        ahead = AHEAD_SERVED if served else AHEAD
        with embedding_thread(self.embedder, SERVED_CALLS if served else 1) as embedding:

            def feed(waiting: list[Pending]) -> None:
                for start in range(0, len(waiting), READ_TEXTS):
                    window = waiting[start:start + READ_TEXTS]
                    with self.store.read() as reader:
                        texts = reader.texts_by_id([item.first_id for item in window])
                    for at in range(0, len(window), EMBED_GROUP):
                        in_flight.append(self._submit(embedding, window[at:at + EMBED_GROUP], texts))
                        if len(in_flight) > ahead:
                            self._take(*in_flight.popleft())

            try:
                yield feed
                while in_flight:
                    self._take(*in_flight.popleft())
            finally:
                for _, future in in_flight:
                    future.cancel()

    def _finish(self) -> None:
        self._copy(self._copies)
        with self.store.write() as writer:
            writer.mark_vectors_complete()

    def _copy(self, hashes: list[str]) -> None:
        """Copies of these texts get the vector another chunk of theirs has, COPY_HASHES texts a
        transaction (each gathers and writes that many texts' vectors, whatever the index's size)."""
        for start in range(0, len(hashes), COPY_HASHES):
            with self.store.write() as writer:
                writer.copy_vectors(hashes[start:start + COPY_HASHES])

    @staticmethod
    def _submit(embedding: EmbeddingThread, group: list[Pending], texts: dict[int, str]
                ) -> tuple[list[Pending], Future[np.ndarray]]:
        found = [item for item in group if item.first_id in texts]  # a text gone since (its file changed) needs none
        if not found:
            return found, resolved(np.zeros((0, 0), dtype=np.float32))
        return found, embedding.submit([texts[item.first_id] for item in found])

    def _take(self, group: list[Pending], future: Future[np.ndarray]) -> None:
        if self._halted.is_set():
            raise EmbeddingStopped("the run was stopped")
        vectors = future.result()
        if group:
            self.check([item.content_hash for item in group], vectors)
            self._ready.append((group, vectors))
        self.embedded += len(group)
        if self._stored.is_set() and (sum(len(g) for g, _ in self._ready) >= WRITE_CHUNKS
                                      or time.monotonic() - self._last_write >= WRITE_SECONDS):
            self._write(whole=False)
        while self._kept_bytes() >= FOLLOW_BUFFER_BYTES and not self._stored.wait(FOLLOW_POLL_S):
            if self._halted.is_set():  # a follower holding all it may: no more calls until it may write
                raise EmbeddingStopped("the run was stopped")
        self._report()

    def _write(self, *, whole: bool = True) -> None:
        """Write the vectors in hand (or, not `whole`, the first WRITE_CHUNKS of them: a follower
        holding many writes one part a step, its calls to the server going on between), WRITE_CHUNKS
        a transaction."""
        self._last_write = time.monotonic()
        while self._ready:
            part: list[tuple[list[Pending], np.ndarray]] = []
            size = 0
            while self._ready and size < WRITE_CHUNKS:
                part.append(self._ready.pop(0))
                size += len(part[-1][0])
            items = [item for group, _ in part for item in group]
            matrix = np.vstack([vectors for _, vectors in part])
            ids = [item.first_id for item in items]
            with self.store.write() as writer:
                writer.set_vectors([item.content_hash for item in items], matrix, ids=(min(ids), max(ids)))
            self.written += len(items)
            if not whole:
                return

    def _report(self) -> None:
        if self.progress is not None and self._stored.is_set():  # a follower's first stage reports its own
            self.progress(IndexProgress("embedding", chunks_embedded=self.already + self.embedded,
                                        chunks_to_embed=self.already + self.total))


def resolved(vectors: np.ndarray) -> Future[np.ndarray]:
    """A future already holding these vectors."""
    future: Future[np.ndarray] = Future()
    future.set_result(vectors)
    return future


class Follower:
    """Backfill.follow on a thread, beside a first stage (a model off this machine's cores embeds
    while this process chunks). Its failures are left to the second stage, which embeds the same texts
    again and reports (the server down, a model of another length)."""

    def __init__(self, backfill: Backfill) -> None:
        self.backfill = backfill
        self.stored, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._work, name="sai-follow", daemon=True)
        self.thread.start()

    def _work(self) -> None:
        try:
            self.backfill.follow(self.stored, self.done)
        except EmbeddingStopped:
            pass
        except Exception as exc:  # noqa: BLE001 - the second stage meets it again and reports
            log.debug("embedding beside the first stage stopped: %r", exc)

    def finish(self) -> int:
        """Embed and write the rest; returns how many texts' vectors it wrote (after a failure,
        those it embedded and did not write are the second stage's)."""
        self.stored.set()
        self.done.set()
        self.thread.join()
        return self.backfill.written

    def halt(self) -> None:
        self.backfill.halt()
        self.thread.join(STOP_WAIT_S)
