"""Bring the index up to date: walk -> diff by size/mtime then hash -> chunk -> write -> embed.

Unchanged files are not read; chunks whose text is already stored (anywhere in the collection)
reuse their vector; only new text reaches the embedder. On a store that may hold chunks without
a vector (`pending_vectors`, the DuckDB file) an index run writes every changed file's chunks,
postings and symbols first, with no model, so search works within seconds, and then embeds the
waiting texts (indexing/backfill.py). Elsewhere, and for refresh, the stages overlap
(docs/design.md, "Incremental indexing"): files are prepared (in worker processes for large
runs) while earlier batches are embedded on a background thread, and batches are committed in
order, each in its own short write transaction, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from sai.errors import UsageError
from sai.indexing.run import Progress, Run  # the run itself: its state and stages
from sai.models import FileRow, IndexProgress, IndexReport, PathResult, RefreshReport, SourceFile
from sai.project import Project
from sai.source import files, vendored
from sai.source.git import changed_files
from sai.source.languages import ext_of

log = logging.getLogger(__name__)


def index(project: Project, *, recreate: bool = False, progress: Progress | None = None,
          on_searchable: Callable[[int], None] | None = None) -> IndexReport:
    """Bring the collection up to date with the tree; returns what the index now holds.

    On a store with `pending_vectors`, once every changed file's chunks are stored (searchable,
    lexically and by symbol) and before their texts are embedded, `on_searchable` is called with
    the number of chunks still waiting for a vector. A second run of the same index waits for
    the first before it reads or embeds anything (Store.claim).
    """
    project.store.prepare()  # fail before embedding anything when the index cannot be written
    with project.store.claim(on_wait=(lambda: progress(IndexProgress("waiting"))) if progress else None):
        return _index(project, recreate=recreate, progress=progress, on_searchable=on_searchable)


def _index(project: Project, *, recreate: bool, progress: Progress | None,
           on_searchable: Callable[[int], None] | None) -> IndexReport:
    config = project.config
    started = time.perf_counter()
    walked = files.walk(config.walk, known=None if recreate else _accepted(project))
    walk_s = time.perf_counter() - started
    rebuild = project.store.rebuild() if recreate else contextlib.nullcontext()  # readers keep the old index
    run = Run(project, progress=progress, deferred=project.store.pending_vectors)
    with project.store.run(), rebuild, run.following():  # one writer connection, checkpointed once at its end
        unreadable = _update(project, run, walked, recreate=recreate)
        if run.deferred:
            if on_searchable is not None:
                on_searchable(_pending(project))
            if run.wrote and run.follower is not None:  # a model off this machine's cores: the cores are free
                with run.stats.timing("warm"):
                    project.store.warm()  # the copies of the rows now, while the model embeds
            run.backfill()
        closing = time.perf_counter()
    run.stats.walk, run.stats.close = walk_s, time.perf_counter() - closing
    if run.wrote or run.counts.removed:
        with run.stats.timing("warm"):
            project.store.warm()  # the first question after a large build answers at once
    log.debug("stage times: %s", run.stats.summary(), extra={"stage_times": run.stats})
    keys = sorted({s.key for s in walked.included} - {key for key, _ in unreadable})
    chunks, nfiles = _held(project, keys)
    # documentation and text formats out of the default set are named by --dry-run, not counted as skipped
    skipped = sum(1 for _, reason in walked.excluded if reason not in ("docs", "no-language")) + len(unreadable)
    return IndexReport(
        chunks=chunks, files=nfiles, skipped=skipped,
        embedded=run.counts.embedded, unchanged=run.counts.unchanged, removed=run.counts.removed,
        exts=tuple(sorted({ext for key in keys if (ext := ext_of(key))})),
    )


def _update(project: Project, run: Run, walked: files.WalkResult, *, recreate: bool) -> list[tuple[str, str]]:
    """index()'s writes (the run keeps its counts and times): returns the unreadable files."""
    if not recreate and project.upgrade():
        log.info("upgraded the index to this version's format; every file is chunked again")
    run.load_state()
    run.probe_dim()
    wanted = {s.key for s in walked.included}
    changed = [s for s in walked.included if run.rechunk or _changed(run.stored.get(s.key), s)]
    run.counts.unchanged += sum(run.stored[s.key].chunk_count for s in walked.included
                                if s.key in run.stored and not run.rechunk and not _changed(run.stored[s.key], s))
    log.debug("%d file(s) walked, %d to read, %d stored; re-chunk all: %s",
              len(walked.included), len(changed), len(run.stored), run.rechunk)
    # nothing to read: a no-op run never creates the embedder (importing its client alone is ~0.3 s)
    unreadable = run.process(changed, len(changed)) if changed else []
    # files gone from the tree go last: until then their vectors serve renamed and moved code
    run.remove(sorted((set(run.stored) - wanted) | {key for key, _ in unreadable if key in run.stored}))
    chunking = project.expected_meta(0)
    record = {"chunker": chunking.chunker, "chunker_version": str(chunking.chunker_version),
              "chunking": chunking.chunking} if changed or run.counts.removed else {}
    if run.meta.get(files.WALKED) != (walked_with := files.walk_signature(project.config.walk)):
        record[files.WALKED] = walked_with
    if run.meta.get(vendored.META_KEY, "") != (found := "\n".join(walked.vendored)):
        record[vendored.META_KEY] = found
    with run.stats.timing("write"):
        _record(project, record)
    return unreadable


def refresh(project: Project, keys: list[str]) -> RefreshReport:
    """Re-index these files (keys) in place; gone or excluded ones lose their chunks."""
    keys = list(dict.fromkeys(keys))
    for key in keys:  # a directory is not "removed": it never had chunks (a symlink: excluded)
        if (project.config.root / key).is_dir() and not (project.config.root / key).is_symlink():
            raise UsageError(f"path {key} is a directory; give files")
    run = Run(project)
    run.load_state(keys)
    sources, gone, not_found = [], [], []
    for key in keys:
        checked = files.check_file(project.config.walk, key)
        if isinstance(checked, SourceFile):
            sources.append(checked)
        elif checked == "missing" and key not in run.stored:
            not_found.append(key)  # neither on disk nor indexed: a typo, not a removal
        else:
            gone.append(PathResult(path=key, removed_reason=checked))
    for source in sources:
        run.stored.pop(source.key, None)  # force a re-read: refresh means "look again"
    with project.store.run():
        unreadable = run.process(sources, len(sources))
        gone += [PathResult(path=key, removed_reason=reason) for key, reason in unreadable]
        run.stored = _stored_files(project, keys)
        run.remove([g.path for g in gone if g.path in run.stored])
    if run.wrote or run.counts.removed:
        project.store.warm()  # the shared copies follow the write here, not in the next question
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
    with project.store.write() as writer:
        existed = writer.has_index()
        writer.drop()
    return existed


def _changed(stored: FileRow | None, source: SourceFile) -> bool:
    return stored is None or stored.size != source.size or stored.mtime_ns != source.mtime_ns


def _record(project: Project, meta: dict[str, str]) -> None:
    """Record the settings the run was made with (last: a run killed before does it all again)."""
    if not meta or not project.store.exists:
        return
    with project.store.write() as writer:
        if writer.has_index():
            writer.set_meta(meta)


def _accepted(project: Project) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of the files the index holds, when it recorded them under this config's
    walk_signature: the walk accepts those found unchanged without reading them."""
    if not project.store.exists:
        return {}
    with project.store.read() as reader:
        if not reader.has_index() or reader.meta().get(files.WALKED) != files.walk_signature(project.config.walk):
            return {}
        return {key: (row.size, row.mtime_ns) for key, row in reader.files().items()}


def _pending(project: Project) -> int:
    if not project.store.exists:
        return 0
    with project.store.read() as reader:
        return reader.pending_count()


def _stored_files(project: Project, keys: list[str] | None = None) -> dict[str, FileRow]:
    if not project.store.exists:
        return {}
    with project.store.read() as reader:
        return reader.files(keys)


def _held(project: Project, keys: list[str]) -> tuple[int, int]:
    stored = _stored_files(project)
    present = [k for k in keys if k in stored]
    return sum(stored[k].chunk_count for k in present), len(present)


def sync(
    project: Project, *, since: str | None = None, staged: bool = False, paths: list[str] | None = None
) -> RefreshReport:
    """Refresh the files git reports changed (or the given keys); untracked-and-unwanted are ignored."""
    if paths:
        return refresh(project, paths)
    changed = changed_files(project.config.root, since=since, staged=staged)
    if not changed:
        return RefreshReport()
    before = set(_stored_files(project))
    report = refresh(project, changed)  # git names files by root-relative keys
    removed = tuple(r for r in report.removed if r.path in before)
    return RefreshReport(refreshed=report.refreshed, removed=removed)
