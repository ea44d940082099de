"""Keep the index fresh while the tree changes: watch it, wait for a quiet moment, re-index.

Events come from `watchfiles` (inotify, FSEvents, ...). Those under pruned directories and on
the index file itself are dropped before they count: the index's own writes would otherwise
trigger the next run. The rest are collected until nothing has changed for `quiet_ms`, then
handled as one batch: the changed files go through `indexer.refresh`, which applies the walk's
rules, drops gone or excluded files and reuses stored vectors by content hash. A batch of more
than `bulk_paths` paths (a branch switch) is one incremental `indexer.index` run instead. A
directory moved in or away counts for the files under it. A batch that fails (the embedder
down) is tried again with the next change. Nothing here prints: everything goes to `report`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import watchfiles

from sai.errors import SaiError
from sai.indexing import indexer
from sai.models import FileRow, IndexProgress, IndexReport, PathResult, SourceFile
from sai.project import Project
from sai.source import files

QUIET_MS = 300  # a batch starts once the tree has been quiet this long
MAX_WAIT_MS = 5000  # ... or this long after its first change, when changes keep coming
IDLE_MS = 500  # how often an idle watch loop wakes (the stop event is checked every quiet_ms)
BULK_PATHS = 200  # more changed paths than this: one incremental index run
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Indexed:
    """The index run that brought the index up to date before watching began."""

    report: IndexReport
    at: str


@dataclass(frozen=True)
class Batch:
    """One handled batch: files re-indexed (with their chunk counts) and files removed."""

    changes: int  # paths the batch held, as reported by the file system
    refreshed: tuple[PathResult, ...]
    removed: tuple[str, ...]
    full_run: bool  # handled by one incremental index run (more than bulk_paths changes)
    at: str

    @property
    def chunks(self) -> int:
        return sum(r.chunks or 0 for r in self.refreshed)


@dataclass(frozen=True)
class BatchFailed:
    """A batch that could not be handled; its files are tried again with the next change."""

    changes: int
    error: SaiError
    at: str


WatchReport = Indexed | Batch | BatchFailed
Progress = Callable[[IndexProgress], None]


class _Stopped(Exception):
    """Raised from the progress callback to end an index run once stop is set."""


class Watcher:
    """Index `project`, then re-index what changes until `stop` is set (or Ctrl-C in the main thread)."""

    def __init__(
        self, project: Project, *, report: Callable[[WatchReport], None], stop: threading.Event,
        progress: Progress | None = None, quiet_ms: int = QUIET_MS, bulk_paths: int = BULK_PATHS,
    ) -> None:
        self.project = project
        self.root = project.config.root
        self.report = report
        self.stop = stop
        self.progress = progress
        self.quiet_ms = quiet_ms
        self.bulk_paths = bulk_paths
        self.watching = False
        self.last_refresh_at: str | None = None
        self._pruned = project.config.walk.pruned
        self._index_file = str(project.config.db_path)
        self._retry: set[str] = set()  # keys of failed batches
        self._full_pending = False  # a failed full run: the next batch is one too

    def run(self) -> None:
        """Watch first, then index (no change between the two is lost), then handle batches."""
        started = False
        try:
            for changes in self._changes():
                if not started:
                    started = self.watching = True
                    self._index_first()
                if changes:
                    self._handle({path for _, path in changes})
        except _Stopped:
            pass
        finally:
            self.watching = False

    def wanted(self, change: watchfiles.Change, path: str) -> bool:
        """False for the index file and for anything under a pruned directory."""
        if path.startswith(self._index_file):
            return False
        try:
            parts = Path(path).relative_to(self.root).parts
        except ValueError:
            return False
        return bool(parts) and not any(part in self._pruned for part in parts)

    def _changes(self) -> Iterator[set[tuple[watchfiles.Change, str]]]:
        """watchfiles' batches; an empty one first (once watching) and whenever idle."""
        batches = watchfiles.watch(
            self.root, watch_filter=self.wanted, step=self.quiet_ms, debounce=MAX_WAIT_MS,
            stop_event=self.stop, rust_timeout=IDLE_MS, yield_on_timeout=True,
        )
        try:
            while True:
                try:
                    changes = next(batches)
                except StopIteration:
                    return
                except (OSError, RuntimeError) as exc:  # RuntimeError: WatchfilesRustInternalError
                    raise SaiError(
                        f"cannot watch {self.root}: {exc}; check that it exists and, on Linux, "
                        "that fs.inotify.max_user_watches is large enough"
                    ) from exc
                yield changes
        finally:
            batches.close()

    def _index_first(self) -> None:
        report = indexer.index(self.project, progress=self._progress)
        self._warm_up()
        self.last_refresh_at = _now()
        self.report(Indexed(report, self.last_refresh_at))

    def _warm_up(self) -> None:
        """Have the embedder ready before watching is reported: an index run that embedded
        nothing has not loaded the model, and the first edit would wait for it (11 s for the
        local model on a busy machine; Ollama loads its model on the first request too)."""
        try:
            self.project.embedder.embed_query("warm up")
        except SaiError as exc:  # the embedder is down: the first batch will say so
            log.debug("warming up the embedder failed: %s", exc)

    def _progress(self, step: IndexProgress) -> None:
        if self.stop.is_set():
            raise _Stopped
        if self.progress is not None:
            self.progress(step)

    def _handle(self, paths: set[str]) -> None:
        try:
            batch = self._apply(paths)
        except SaiError as exc:
            self.report(BatchFailed(len(paths), exc, _now()))
            return
        if batch is not None:
            self.last_refresh_at = batch.at
            self.report(batch)

    def _apply(self, paths: set[str]) -> Batch | None:
        stored = self._stored()
        if self._full_pending or len(paths) > self.bulk_paths:
            return self._full_run(len(paths), stored)
        keys = self._keys(paths, stored) | self._retry
        if len(keys) > self.bulk_paths:
            return self._full_run(len(paths), stored)
        config = self.project.config
        wanted = sorted(k for k in keys if k in stored or isinstance(files.check_file(config.walk, k), SourceFile))
        if not wanted:
            return None
        self._retry.update(wanted)
        result = indexer.refresh(self.project, wanted)
        self._retry.clear()
        removed = tuple(r.path for r in result.removed if r.path in stored)
        if not result.refreshed and not removed:
            return None
        return Batch(len(paths), result.refreshed, removed, full_run=False, at=_now())

    def _full_run(self, changes: int, before: dict[str, FileRow]) -> Batch | None:
        self._full_pending = True
        indexer.index(self.project, progress=self._progress)
        self._full_pending = False
        self._retry.clear()
        after = self._stored()
        refreshed = tuple(
            PathResult(path=key, chunks=row.chunk_count) for key, row in sorted(after.items())
            if key not in before or before[key].file_hash != row.file_hash
        )
        removed = tuple(sorted(set(before) - set(after)))
        return Batch(changes, refreshed, removed, full_run=True, at=_now())

    def _keys(self, paths: set[str], stored: dict[str, FileRow]) -> set[str]:
        """The keys the changed paths stand for: a directory stands for the files under it."""
        keys: set[str] = set()
        for path in paths:
            try:
                key = Path(path).relative_to(self.root).as_posix()
            except ValueError:
                continue
            full = self.root / key
            if full.is_dir() and not full.is_symlink():
                keys |= self._files_under(full)  # moved in, or created with its files
            else:
                keys.add(key)
            prefix = key + "/"
            keys |= {k for k in stored if k.startswith(prefix)}  # moved away or deleted
        return keys

    def _files_under(self, directory: Path) -> set[str]:
        found = set()
        for top, dirs, names in os.walk(directory):
            dirs[:] = [d for d in dirs if d not in self._pruned]
            found |= {Path(top, name).relative_to(self.root).as_posix() for name in names}
        return found

    def _stored(self) -> dict[str, FileRow]:
        store = self.project.store
        if not store.exists:
            return {}
        with store.read() as reader:  # a copy: the lease's cached dict is shared with the indexer
            return dict(reader.files())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
