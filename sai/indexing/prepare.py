"""The indexer's CPU stage: read a file, hash it, chunk it, build its rows (lexemes, shapes), and
with an embedder cheap enough (`Embedder.with_chunks`: the static table), embed its chunks.

`prepare` is a pure function of (file, config, stored hash), so it runs the same in this
process or in a pool of worker processes (`PreparePool`): tree-sitter, the lexeme and shape
code are pure Python under the GIL, and processes are what spreads them over the cores.
Workers ignore Ctrl-C (the parent stops them) and leave when their parent is gone, so a killed
indexer leaves no orphans.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from sai.chunking import make_chunker
from sai.chunking.base import Chunker, drop_noindex, strip_c_comments
from sai.chunking.references import references
from sai.config import Config
from sai.embedders import Embedder, make_embedder
from sai.models import Chunk, NewChunk, SourceFile, sha256_hex
from sai.source import files
from sai.source.languages import C_STYLE_COMMENTS, language_of
from sai.store.uses import as_columns
from sai.text.lexical import lexemes
from sai.text.shape import signature

NODUP_MARKER = "sai-noduplicate"
TASK_FILES = 8  # files per task sent to a worker
PARENT_POLL_S = 0.5  # how often a worker checks that its parent lives

@dataclass
class Prepared:
    """One file after the CPU stage: unchanged (no chunks), skipped (a reason) or chunked."""

    source: SourceFile
    file_hash: str = ""
    unchanged: bool = False
    skip: str | None = None
    chunks: list[Chunk] = field(default_factory=list)
    rows: list[NewChunk] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)  # content hash of each chunk
    times: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    refs: pa.Table = field(default_factory=lambda: as_columns([]))  # the uses of names (index_references)
    vectors: np.ndarray | None = None  # row-aligned with chunks, when the CPU stage embeds (with_chunks)


_chunkers: dict[tuple[str, int], Chunker] = {}
_embedders: dict[tuple[str, str], Embedder] = {}


def _chunker(config: Config) -> Chunker:
    key = (config.chunker, config.max_chunk_chars)
    if key not in _chunkers:
        _chunkers[key] = make_chunker(config.chunker, max_chunk_chars=config.max_chunk_chars)
    return _chunkers[key]


def _embedder(config: Config) -> Embedder:
    key = (config.embedder, config.model)
    if key not in _embedders:
        _embedders[key] = make_embedder(config)
    return _embedders[key]


def prepare(source: SourceFile, config: Config, stored_hash: str | None, *,
            embedder: Embedder | None = None) -> Prepared:
    """Read and (unless its text is the stored one) chunk a file and build its rows, and with an
    embedder its chunks' vectors."""
    out = Prepared(source)
    clock = time.perf_counter()
    try:
        text = files.read_source(source, config.walk)
    except files.SkipFileError as skip:
        out.skip = skip.reason
        return out
    out.file_hash = sha256_hex(text)
    if out.file_hash == stored_hash:
        out.unchanged = True
        return out
    if config.strip_comments and source.language in C_STYLE_COMMENTS:
        text = strip_c_comments(text)
    chunks = _chunker(config).chunk(source.key, text, language_of(source.key, text))
    out.chunks = drop_noindex(chunks) if config.honor_noindex_marker else chunks
    now = time.perf_counter()
    out.times["read_chunk"], clock = now - clock, now
    words = [lexemes(c.text, path=c.path, symbol=c.symbol) for c in out.chunks]
    now = time.perf_counter()
    out.times["lexemes"], clock = now - clock, now
    out.hashes = [c.content_hash for c in out.chunks]
    for chunk, digest, word in zip(out.chunks, out.hashes, words, strict=True):
        nodup = config.honor_noduplicate_marker and NODUP_MARKER in chunk.text
        out.rows.append(NewChunk(
            path=chunk.path, language=chunk.language, start_line=chunk.start_line, end_line=chunk.end_line,
            symbol=chunk.symbol, text=chunk.text, content_hash=digest, file_hash=out.file_hash,
            no_duplicate=nodup, lexemes=word, shape=signature(chunk.text, chunk.language, kind=chunk.kind),
            kind=chunk.kind,
        ))
    now = time.perf_counter()
    out.times["shapes"], clock = now - clock, now
    if config.index_references:
        out.refs = as_columns(references(text, language_of(source.key, text), out.chunks))
        now = time.perf_counter()
        out.times["references"], clock = now - clock, now
    if embedder is not None and out.chunks:
        out.vectors = embedder.embed_documents([c.text for c in out.chunks])
        out.times["embed"] = time.perf_counter() - clock
    return out


def prepare_many(tasks: list[tuple[SourceFile, str | None]], config: Config, embed: bool) -> list[Prepared]:
    """A worker's task; `embed`: with the vectors of the config's embedder (one a process)."""
    embedder = _embedder(config) if embed else None
    return [prepare(source, config, stored, embedder=embedder) for source, stored in tasks]


def _init_worker(parent: int) -> None:
    """Ctrl-C reaches the whole process group: the parent alone answers it (exit 130).

    A worker starts with SIGINT blocked (_sigint_blocked): a Ctrl-C while it imports, before
    this runs, cannot end it with a KeyboardInterrupt traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(0)  # the parent died (SIGKILL): no one will read our results


class PreparePool:
    """Worker processes preparing files in order, a bounded number of tasks ahead."""

    def __init__(self, config: Config, *, workers: int, embed: bool = False) -> None:
        self.config = config
        self.workers = workers
        self.embed = embed
        self._executor = ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker, initargs=(os.getpid(),),
        )

    def map(self, tasks: Iterable[tuple[SourceFile, str | None]]) -> Iterator[Prepared]:
        """Prepared files in the order of `tasks`; at most 4 tasks per worker outstanding."""
        pending: deque[Future[list[Prepared]]] = deque()
        batch: list[tuple[SourceFile, str | None]] = []
        for task in tasks:
            batch.append(task)
            if len(batch) == TASK_FILES:
                pending.append(self._submit(batch))
                batch = []
                while len(pending) > 4 * self.workers:
                    yield from pending.popleft().result()
        if batch:
            pending.append(self._submit(batch))
        while pending:
            yield from pending.popleft().result()

    def _submit(self, batch: list[tuple[SourceFile, str | None]]) -> Future[list[Prepared]]:
        with _sigint_blocked():  # submit() starts the workers
            return self._executor.submit(prepare_many, batch, self.config, self.embed)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread for the block: a process started in it inherits the mask.

    Nothing is lost: a Ctrl-C in the meantime goes to another thread of this process, or
    waits for the block's end (Python handles it in the main thread either way)."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
