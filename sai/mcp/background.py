"""What `sai mcp` runs beside its tools: an index build when it starts with --allow-write and no
index, and the --watch watcher; both in threads, both reporting to the server log."""

from __future__ import annotations

import logging
import threading

from sai.errors import SaiError, StoreError
from sai.indexing import indexer
from sai.indexing.watch import Batch, BatchFailed, Watcher, WatchReport
from sai.mcp.calls import escaped
from sai.models import IndexProgress
from sai.output import render
from sai.project import Project

log = logging.getLogger("sai.mcp")


# ---------------------------------------------------------------- no index yet
class BuildStopped(Exception):
    """Raised from the progress callback to end the build when the server stops."""


class BackgroundBuild:
    """`sai mcp --allow-write` on a project with no index: an index run in a thread. The tools
    answer meanwhile: lexically and by symbol once the chunks are stored (seconds), with more
    vectors as they are computed; a stop (or a kill) keeps what was written, for the next run."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.stop_event = threading.Event()
        self.running = False
        self.thread = threading.Thread(target=self._run, name="sai-build", daemon=True)

    def start(self) -> None:
        log.info("no index yet: building it in the background; the tools answer meanwhile")
        self.running = True
        self.thread.start()

    def check_started(self) -> None:
        """Before the first chunks are stored there is nothing to search: say so, not 'no index'."""
        if self.running and not self.project.store.exists:
            raise StoreError("the index is being built (this server started it); its first chunks "
                             "are searchable within seconds: ask again shortly")

    def _run(self) -> None:
        try:
            report = indexer.index(self.project, progress=self._progress,
                                   on_searchable=lambda pending: log.info(
                                       "index: chunks stored and searchable; %d wait for a vector", pending))
            log.info("index built: %d chunks from %d files", report.chunks, report.files)
        except BuildStopped:
            log.info("index build stopped; the next run goes on from where it stopped")
        except SaiError as exc:
            log.warning("building the index failed: %s", escaped(str(exc)))
        finally:
            self.running = False

    def _progress(self, step: IndexProgress) -> None:
        if self.stop_event.is_set():
            raise BuildStopped

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=30.0)


# ---------------------------------------------------------------- --watch
class BackgroundWatch:
    """`sai mcp --watch`: a Watcher in a thread, reporting to the server log, stopped on exit.

    Readers stay consistent meanwhile: every write is one transaction that readers wait for.
    """

    def __init__(self, project: Project) -> None:
        self.stop_event = threading.Event()
        self.watcher = Watcher(project, report=_log_watch, stop=self.stop_event)
        self.thread = threading.Thread(target=self._run, name="sai-watch", daemon=True)

    def start(self) -> None:
        log.info("watching %s for changes", self.watcher.root)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.watcher.run()
        except SaiError as exc:
            log.warning("watching stopped: %s", escaped(str(exc)))

    def stop(self) -> None:
        """Stop watching; an index run in progress ends at its next file, a refresh when done."""
        self.stop_event.set()
        self.thread.join(timeout=2.0)
        if self.thread.is_alive():
            log.info("waiting for the re-index in progress to finish")
            self.thread.join()


def _log_watch(event: WatchReport) -> None:
    if isinstance(event, Batch):
        log.info("%s", escaped(render.watch_batch(event).rstrip("\n")))
    elif isinstance(event, BatchFailed):
        log.warning("watch: error: %s; its files are tried again with the next change", escaped(str(event.error)))
    else:
        log.info("watch: index up to date (%d chunks from %d files)", event.report.chunks, event.report.files)
