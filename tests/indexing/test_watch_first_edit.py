"""The first edit under `sai watch` is searchable as fast as the next ones: the watch has its
embedder ready (the model loaded) before it reports that it is watching."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from fixtures_tree import load, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.embedders import make_embedder
from sai.embedders.base import Embedder
from sai.indexing import indexer
from sai.indexing.watch import Batch, Indexed, Watcher, WatchReport
from sai.project import Project

LOAD_S = 3.0  # what the first call of a model that loads on first use costs here


class LoadsOnFirstUse:
    """The stand-in's embedder, whose first call (of either kind) waits as a model load does."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.with_chunks, self.served = inner.with_chunks, inner.served
        self._loaded = threading.Event()

    def _load(self) -> None:
        if not self._loaded.is_set():
            time.sleep(LOAD_S)
            self._loaded.set()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self._load()
        return self.inner.embed_documents(texts)

    def runs_elsewhere(self) -> bool:
        return self.inner.runs_elsewhere()

    def embed_query(self, text: str) -> np.ndarray:
        self._load()
        return self.inner.embed_query(text)


def test_the_first_edit_does_not_wait_for_the_model_to_load(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "proj", {"billing.py": "def apply_tax(amount):\n    return amount * 1.2\n"})
    write_config(root, ollama_server.url)
    built = Project(load(root))
    indexer.index(built)  # up to date: the watch's own first run embeds nothing
    built.close()
    config = load(root)
    project = Project(config, embedder=LoadsOnFirstUse(make_embedder(config)))
    reports: queue.Queue[WatchReport] = queue.Queue()
    stop = threading.Event()
    thread = threading.Thread(target=Watcher(project, report=reports.put, stop=stop).run, daemon=True)
    thread.start()
    try:
        assert isinstance(reports.get(timeout=60), Indexed)
        edited = time.monotonic()
        (root / "billing.py").write_text("def apply_tax(amount):\n    return amount * 1.25\n", encoding="utf-8")
        batch = reports.get(timeout=60)
        assert isinstance(batch, Batch) and [r.path for r in batch.refreshed] == ["billing.py"]
        assert time.monotonic() - edited < LOAD_S  # quiet 0.3 s + the embedding, no load
    finally:
        stop.set()
        thread.join(timeout=30)
        project.close()
