"""Bring the index up to date: walk -> diff by size/mtime then hash -> chunk -> embed -> write.

Unchanged files are not read; chunks whose text is already stored (anywhere in the collection)
reuse their vector; only new text reaches the embedder. Work is committed in batches, each in
its own short write transaction, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field

import numpy as np

from sai import files
from sai.chunking import make_chunker
from sai.chunking.base import drop_noindex, strip_c_comments
from sai.errors import EmbedderError, StoreCorruptError
from sai.gitchanges import changed_files
from sai.languages import C_STYLE_COMMENTS
from sai.lexical import lexemes
from sai.models import Chunk, IndexReport, PathResult, RefreshReport, SourceFile, sha256_hex
from sai.project import Project
from sai.shape import signature
from sai.store.tables import Connection, FileRow

NODUP_MARKER = "sai-noduplicate"
FLUSH_CHUNKS = 256  # chunks embedded between two write transactions
FLUSH_SECONDS = 20.0  # or this long, whichever comes first

Progress = Callable[[int, int, int], None]  # (files done, files to do, chunks embedded)
log = logging.getLogger(__name__)


@dataclass
class _Pending:
    """Files chunked and (partly) embedded, waiting for the next write transaction."""

    files: list[tuple[SourceFile, str, list[Chunk]]] = field(default_factory=list)
    touched: list[FileRow] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # content hash -> text to embed

    def chunk_total(self) -> int:
        return sum(len(chunks) for _, _, chunks in self.files)


@dataclass
class StageTimes:
    """Seconds a run spent in each stage (wall clock of the indexing process; cheap counters).

    Logged at debug level at the end of index() with the record's `stage_times` attribute set,
    for benchmarks/index_throughput.py.
    """

    walk: float = 0.0
    read_chunk: float = 0.0  # reading files and cutting them into chunks
    lexemes: float = 0.0
    shapes: float = 0.0  # shape signatures and the rest of row building
    embed_wait: float = 0.0  # waiting for the embedder
    write: float = 0.0  # database writes
    fts: float = 0.0  # the BM25 rebuild

    @contextlib.contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            setattr(self, stage, getattr(self, stage) + time.perf_counter() - started)

    def summary(self) -> str:
        return ", ".join(f"{k} {v:.2f}s" for k, v in asdict(self).items())


@dataclass
class _Counts:
    embedded: int = 0
    unchanged: int = 0
    removed: int = 0


class _Run:
    """One pass of writes against the store: embeds pending text, writes batches, counts."""

    def __init__(self, project: Project, *, progress: Progress | None = None) -> None:
        self.project = project
        self.config = project.config
        self.chunker = make_chunker(self.config.chunker, max_chunk_chars=self.config.max_chunk_chars)
        self.progress = progress
        self.counts = _Counts()
        self.stats = StageTimes()
        self.fresh: dict[str, np.ndarray] = {}  # vectors embedded during this run
        self.known: set[str] = set()  # content hashes stored when the run began
        self.stored: dict[str, FileRow] = {}
        self.dim: int | None = None
        self.meta: dict[str, str] = {}
        self.wrote = False
        self.rechunk = False  # chunking settings changed since the index was built

    def load_state(self) -> None:
        if not self.project.store.exists:
            return
        with self.project.store.read() as conn:
            self.meta = conn.meta()
            if conn.has_collection():
                self.project.check_meta(self.meta)
                self.rechunk = self.meta.get("chunking") != self.project.chunking_signature()
                self.stored = conn.files()
                self.known = conn.content_hashes()
                self.dim = int(self.meta["vector_dim"])

    def chunk_file(self, source: SourceFile, text: str) -> list[Chunk]:
        if self.config.strip_comments and source.language in C_STYLE_COMMENTS:
            text = strip_c_comments(text)
        chunks = self.chunker.chunk(source.key, text, source.language)
        return drop_noindex(chunks) if self.config.honor_noindex_marker else chunks

    def add(self, pending: _Pending, source: SourceFile, text: str) -> None:
        file_hash = sha256_hex(text)
        old = self.stored.get(source.key)
        if old is not None and old.file_hash == file_hash and not self.rechunk:
            pending.touched.append(FileRow(source.key, source.size, source.mtime_ns, file_hash, old.chunk_count))
            self.counts.unchanged += old.chunk_count
            return
        with self.stats.timing("read_chunk"):
            chunks = self.chunk_file(source, text)
        for chunk in chunks:
            digest = chunk.content_hash
            if digest not in self.known and digest not in self.fresh:
                pending.texts[digest] = chunk.text
        pending.files.append((source, file_hash, chunks))

    def embed(self, pending: _Pending) -> None:
        if not pending.texts:
            return
        hashes = list(pending.texts)
        with self.stats.timing("embed_wait"):
            vectors = self.project.embedder.embed_documents([pending.texts[h] for h in hashes])
        if vectors.ndim != 2 or vectors.shape[0] != len(hashes):
            raise EmbedderError("the embedder returned a wrong number of vectors; check the model")
        if self.dim is None:
            self.dim = int(vectors.shape[1])
            self.project.check_meta(self.meta, vector_dim=self.dim)
        elif vectors.shape[1] != self.dim:
            self.project.check_meta(self.meta or {"vector_dim": str(self.dim)}, vector_dim=int(vectors.shape[1]))
        self.fresh.update(zip(hashes, vectors, strict=True))
        self.counts.embedded += len(hashes)
        pending.texts.clear()

    def flush(self, pending: _Pending) -> None:
        """Embed what is pending, then write it in one transaction."""
        self.embed(pending)
        if not pending.files and not pending.touched:
            return
        self.wrote = True
        started = time.monotonic()
        with self.stats.timing("write"), self.project.store.write() as conn:
            if pending.files:
                self._ensure_collection(conn)
                self._write_files(conn, pending.files)
            conn.upsert_files(pending.touched)
        log.debug("wrote %d file(s), %d touched, in %.2fs", len(pending.files), len(pending.touched),
                  time.monotonic() - started)
        pending.files.clear()
        pending.touched.clear()

    def _ensure_collection(self, conn: Connection) -> None:
        if not conn.has_collection():
            conn.create_collection(self.project.expected_meta(self.dim or self.config.vector_dim or 0))

    def _write_files(self, conn: Connection, batch: list[tuple[SourceFile, str, list[Chunk]]]) -> None:
        keys = [source.key for source, _, _ in batch]
        old_hashes = conn.hashes_by_path(keys)
        vectors = self._vectors(conn, batch)
        rows, matrix, file_rows = [], [], []
        for source, file_hash, chunks in batch:
            old = old_hashes.get(source.key, [])
            kept = _count_kept(old, [c.content_hash for c in chunks])
            self.counts.removed += len(old) - kept
            self.counts.unchanged += sum(1 for c in chunks if c.content_hash not in self.fresh)
            for chunk in chunks:
                rows.append(self._row(chunk, file_hash))
                matrix.append(vectors[chunk.content_hash])
            file_rows.append(FileRow(source.key, source.size, source.mtime_ns, file_hash, len(chunks)))
        conn.delete_chunks(keys)
        if rows:
            conn.insert_chunks(rows, np.vstack(matrix))
        conn.upsert_files(file_rows)

    def _vectors(self, conn: Connection, batch: list[tuple[SourceFile, str, list[Chunk]]]) -> dict[str, np.ndarray]:
        """A vector for every chunk of the batch: embedded this run, or stored under any path.

        Text stored when the run began but rewritten by an earlier batch of this run (a function
        moved between two changed files) is embedded here: rare, and never a missing vector.
        """
        texts = {c.content_hash: c.text for _, _, chunks in batch for c in chunks if c.content_hash not in self.fresh}
        vectors = {**conn.vectors_by_hash(list(texts)), **self.fresh}
        lost = {digest: text for digest, text in texts.items() if digest not in vectors}
        if lost:
            log.debug("embedding %d chunk(s) whose stored copy this run replaced", len(lost))
            self.embed(_Pending(texts=lost))
            vectors.update(self.fresh)
        return vectors

    def _row(self, chunk: Chunk, file_hash: str) -> tuple:
        nodup = self.config.honor_noduplicate_marker and NODUP_MARKER in chunk.text
        with self.stats.timing("lexemes"):
            words = lexemes(chunk.text, path=chunk.path, symbol=chunk.symbol)
        with self.stats.timing("shapes"):
            shape = signature(chunk.text, chunk.language)
        return (chunk.path, chunk.language, chunk.start_line, chunk.end_line, chunk.symbol,
                chunk.text, chunk.content_hash, file_hash, nodup, words, shape)

    def remove(self, keys: list[str]) -> None:
        if not keys or not self.stored:
            return
        with self.project.store.write() as conn:
            self.counts.removed += conn.delete_chunks(keys)
            conn.delete_file_rows(keys)
        for key in keys:
            self.stored.pop(key, None)

    def process(self, sources: Iterable[SourceFile], total: int) -> list[tuple[str, str]]:
        """Read, chunk, embed and write these files; returns (key, reason) for unreadable ones."""
        pending, skipped, last = _Pending(), [], time.monotonic()
        for done, source in enumerate(sources, start=1):
            try:
                with self.stats.timing("read_chunk"):
                    text = files.read_source(source, self.config)
            except files.SkipFileError as skip:
                skipped.append((source.key, skip.reason))
            else:
                self.add(pending, source, text)
            if pending.chunk_total() >= FLUSH_CHUNKS or time.monotonic() - last > FLUSH_SECONDS:
                self.flush(pending)
                last = time.monotonic()
            if self.progress:
                self.progress(done, total, self.counts.embedded)
        self.flush(pending)
        if self.progress and total:
            self.progress(total, total, self.counts.embedded)  # the last batch is in now
        return skipped


def index(project: Project, *, recreate: bool = False, progress: Progress | None = None) -> IndexReport:
    """Bring the collection up to date with the tree; returns what the index now holds."""
    config = project.config
    project.store.prepare_dir()  # fail before embedding anything when the index cannot be written
    started = time.perf_counter()
    walked = files.walk(config)
    walk_s = time.perf_counter() - started
    if recreate:
        try:
            flush(project)
        except StoreCorruptError:
            project.store.recreate()  # a damaged file cannot be opened to drop anything
    elif project.upgrade():
        log.info("upgraded the index to this version's format; every file is chunked again")
    run = _Run(project, progress=progress)
    run.stats.walk = walk_s
    run.load_state()
    wanted = {s.key for s in walked.included}
    changed = [s for s in walked.included if run.rechunk or _changed(run.stored.get(s.key), s)]
    run.counts.unchanged += sum(run.stored[s.key].chunk_count for s in walked.included
                                if s.key in run.stored and not run.rechunk and not _changed(run.stored[s.key], s))
    log.debug("%d file(s) walked, %d to read, %d stored; re-chunk all: %s",
              len(walked.included), len(changed), len(run.stored), run.rechunk)
    unreadable = run.process(changed, len(changed))
    # files gone from the tree go last: until then their vectors serve renamed and moved code
    run.remove(sorted((set(run.stored) - wanted) | {key for key, _ in unreadable if key in run.stored}))
    chunking = project.expected_meta(0)
    with run.stats.timing("fts"):
        _finish(project, meta={
            "chunker": chunking.chunker, "chunker_version": str(chunking.chunker_version),
            "chunking": chunking.chunking,
        } if changed or run.counts.removed else None)
    log.debug("stage times: %s", run.stats.summary(), extra={"stage_times": run.stats})
    keys = sorted(wanted - {key for key, _ in unreadable})
    chunks, nfiles = _held(project, keys)
    return IndexReport(
        chunks=chunks, files=nfiles, skipped=len(walked.excluded) + len(unreadable),
        embedded=run.counts.embedded, unchanged=run.counts.unchanged, removed=run.counts.removed,
    )


def refresh(project: Project, paths: list[str]) -> RefreshReport:
    """Re-index these files in place; gone or excluded ones lose their chunks."""
    keys = list(dict.fromkeys(files.key_for(project.config, p) for p in paths))
    run = _Run(project)
    run.load_state()
    sources, gone, not_found = [], [], []
    for key in keys:
        checked = files.check_file(project.config, key)
        if isinstance(checked, SourceFile):
            sources.append(checked)
        elif checked == "missing" and key not in run.stored:
            not_found.append(key)  # neither on disk nor indexed: a typo, not a removal
        else:
            gone.append(PathResult(path=key, removed_reason=checked))
    for source in sources:
        run.stored.pop(source.key, None)  # force a re-read: refresh means "look again"
    unreadable = run.process(sources, len(sources))
    gone += [PathResult(path=key, removed_reason=reason) for key, reason in unreadable]
    run.stored = _stored_files(project)
    run.remove([g.path for g in gone if g.path in run.stored])
    _finish(project)
    done = {s.key for s in sources} - {key for key, _ in unreadable}
    refreshed = tuple(
        PathResult(path=k, chunks=run.stored[k].chunk_count if k in run.stored else 0)
        for k in keys if k in done
    )
    return RefreshReport(refreshed=refreshed, removed=tuple(gone), not_found=tuple(not_found))


def flush(project: Project) -> bool:
    """Drop the collection; True when there was one."""
    if not project.store.exists:
        return False
    with project.store.write() as conn:
        existed = conn.has_collection()
        conn.drop_collection()
    return existed


def _changed(stored: FileRow | None, source: SourceFile) -> bool:
    return stored is None or stored.size != source.size or stored.mtime_ns != source.mtime_ns


def _count_kept(old: list[str], new: list[str]) -> int:
    remaining = list(old)
    kept = 0
    for digest in new:
        if digest in remaining:
            remaining.remove(digest)
            kept += 1
    return kept


def _finish(project: Project, *, meta: dict[str, str] | None = None) -> None:
    """Rebuild the BM25 index unless it already holds the committed chunks (a run killed in
    this step left it behind: the next run repairs it), and record the chunking settings."""
    if not project.store.exists:
        return
    with project.store.read() as conn:
        if not conn.has_collection() or (conn.fts_current() and not meta):
            return
    with project.store.write() as conn:
        if not conn.has_collection():
            return
        if not conn.fts_current():
            conn.rebuild_fts()
        if meta:
            conn.set_meta(meta)


def _stored_files(project: Project) -> dict[str, FileRow]:
    if not project.store.exists:
        return {}
    with project.store.read() as conn:
        return conn.files() if conn.has_collection() else {}


def _held(project: Project, keys: list[str]) -> tuple[int, int]:
    stored = _stored_files(project)
    present = [k for k in keys if k in stored]
    return sum(stored[k].chunk_count for k in present), len(present)


def sync(
    project: Project, *, since: str | None = None, staged: bool = False, paths: list[str] | None = None
) -> RefreshReport:
    """Refresh the files git reports changed (or the given ones); untracked-and-unwanted are ignored."""
    if paths:
        return refresh(project, paths)
    changed = changed_files(project.config.root, since=since, staged=staged)
    if not changed:
        return RefreshReport()
    before = set(_stored_files(project))
    # git names root-relative keys; make them absolute so the caller's cwd does not matter
    report = refresh(project, [str(project.config.root / key) for key in changed])
    removed = tuple(r for r in report.removed if r.path in before)
    return RefreshReport(refreshed=report.refreshed, removed=removed)
