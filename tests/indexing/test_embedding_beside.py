"""A first build beside a served model (Ollama): the first stage sends each batch's new texts to
the model as it goes and writes a chunk with its vector when the vector is back, so the second
stage has only the rest to do; each text is embedded once whatever comes back when, a model
that fails does not stop the first stage, and a model in this process embeds nothing before
the first answer (docs/design.md, "Incremental indexing")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.embedders import make_embedder
from sai.indexing.indexer import index
from sai.project import Project


def _build(root: Path, project: Project | None = None) -> tuple[list[int], int]:
    """A first build of `root`: (chunks waiting for a vector when the chunks were all stored, texts
    the run embedded); checks that nothing waits once it is done."""
    project = project or Project(load_config(flags={}, env={}, cwd=root))
    searchable: list[int] = []
    try:
        report = index(project, on_searchable=searchable.append)
        with project.store.read() as reader:
            assert reader.vectors_complete() and reader.pending() == []
        return searchable, report.embedded
    finally:
        project.close()


def test_a_served_model_embeds_beside_the_first_stage_and_each_text_once(
        tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "p", many_functions(1200, per_file=20))
    write_config(root, ollama_server.url)
    searchable, embedded = _build(root)
    # batches are written three behind the one being prepared: the stand-in, answering at once,
    # has the first batches' vectors back by then
    assert len(searchable) == 1 and searchable[0] < 1200, searchable
    assert embedded == ollama_server.inputs_embedded == len(set(ollama_server.received_inputs)) == 1200


def test_vectors_back_after_their_chunks_were_written_are_taken_not_embedded_again(
        tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "p", many_functions(300, per_file=20))
    write_config(root, ollama_server.url)
    ollama_server.hold()  # no vector comes back during the first stage
    project = Project(load_config(flags={}, env={}, cwd=root))
    waiting: list[int] = []

    def searchable(pending: int) -> None:
        waiting.append(pending)
        ollama_server.release()

    try:
        report = index(project, on_searchable=searchable)
    finally:
        project.close()
    assert waiting == [300]
    assert report.embedded == ollama_server.inputs_embedded == len(set(ollama_server.received_inputs)) == 300
    assert _build(root)[1] == 0  # complete: the next run has nothing to embed


def test_a_served_model_failing_during_the_first_stage_does_not_stop_it(
        tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "p", many_functions(600, per_file=20))
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "backoff_s": 0.01, "parallel": 1})
    ollama_server.fail_next(4)  # the first call and its three retries
    searchable, embedded = _build(root)
    assert searchable == [600] or 0 < searchable[0] <= 600, searchable
    assert embedded == 600 and ollama_server.inputs_embedded == 600


class _InProcess:
    """The stand-in's client, as a model that runs in this process would be: counts its calls."""

    def __init__(self, config_root: Path) -> None:
        self.inner = make_embedder(load_config(flags={}, env={}, cwd=config_root))
        self.name, self.model, self.served, self.with_chunks = self.inner.name, self.inner.model, False, False
        self.calls = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_a_model_in_this_process_embeds_nothing_before_the_chunks_are_stored(
        tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "p", many_functions(600, per_file=20))
    write_config(root, ollama_server.url)
    embedder = _InProcess(root)
    calls_then: list[int] = []
    project = Project(load_config(flags={}, env={}, cwd=root), embedder=embedder)
    try:
        report = index(project, on_searchable=lambda pending: calls_then.append(embedder.calls))
    finally:
        project.close()
    assert calls_then == [0] and embedder.calls > 0 and report.embedded == 600
