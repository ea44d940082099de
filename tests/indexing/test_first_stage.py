"""A first build's first stage stores every chunk before any vector is written: the chunks are
searchable and counted first, and each distinct text is then embedded once (a served model's texts
go to it while the first stage stores, run.Follower; the static table, which embeds in the CPU stage
itself, is tested in tests/embedders/test_static.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

import sai.indexing.prepare as prepare_module
import sai.indexing.run as run_module
from sai.config import load_config
from sai.indexing import backfill
from sai.indexing.indexer import index
from sai.project import Project
from sai.store.duckdb.writer import DuckDBWriter


@pytest.mark.parametrize("follow", ["beside", "beside, holding one group", "after"])
def test_a_first_build_stores_every_chunk_before_it_writes_a_vector_then_embeds_each_once(
        tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch, follow: str) -> None:
    """A model off this machine's cores embeds beside the first stage (run.Follower), one on them after
    it; either way no vector is
    written before every chunk is stored (a write would hold the lease the first stage writes through),
    the vectors held meanwhile stay within FOLLOW_BUFFER_BYTES, and each text is embedded once."""
    if follow == "after":
        ollama_server.vram = 0  # the model shares this machine's cores (OllamaEmbedder.runs_elsewhere)
    if follow == "beside, holding one group":
        monkeypatch.setattr(backfill, "FOLLOW_BUFFER_BYTES", 1)
    monkeypatch.setattr(run_module, "POOL_MIN_FILES", 1_000)
    monkeypatch.setattr(run_module, "FLUSH_CHUNKS", 50)  # the first stage writes 10 times (3 files a batch)
    # groups of 20 texts, taken one behind, written 20 a transaction: at once, when they may be
    monkeypatch.setattr(backfill, "EMBED_GROUP", 20)
    monkeypatch.setattr(backfill, "AHEAD_SERVED", 1)
    monkeypatch.setattr(backfill, "WRITE_CHUNKS", 20)
    root = write_tree(tmp_path / "p", many_functions(600, per_file=20))
    write_config(root, ollama_server.url)
    project = Project(load_config(flags={}, env={}, cwd=root))
    writes: list[tuple[str, int]] = []  # each write, and the embedding requests made by then
    for name in ("replace_files", "set_vectors"):
        original = getattr(DuckDBWriter, name)
        monkeypatch.setattr(DuckDBWriter, name, _recorded(original, name, writes, ollama_server))
    monkeypatch.setattr(prepare_module, "prepare", _slowed(prepare_module.prepare))  # the first stage takes ~1 s
    seen: list[tuple[int, int]] = []
    try:
        report = index(project, on_searchable=lambda pending: seen.append((pending, ollama_server.requests)))
        with project.store.read() as reader:
            complete, waiting = reader.vectors_complete(), reader.pending()
    finally:
        project.close()
    names = [name for name, _ in writes]
    assert names.count("replace_files") == 10 and "set_vectors" in names
    last_chunks = max(i for i, name in enumerate(names) if name == "replace_files")
    assert names.index("set_vectors") > last_chunks
    requests_then = writes[last_chunks][1]  # requests of 20 texts made before the first stage's last write
    assert len(seen) == 1 and seen[0][0] <= 600
    if follow == "after":
        assert seen == [(600, 0)]  # the model saw no text before every chunk was stored
    elif follow == "beside":
        assert requests_then > 0  # the model had texts while the first stage stored
    else:  # one group held, one in flight, one taken: then no call until the vectors may be written
        assert 0 < requests_then <= 3, writes
    assert report.embedded == ollama_server.inputs_embedded == len(set(ollama_server.received_inputs)) == 600
    assert complete and waiting == []


def _slowed(prepare: Callable[..., Any]) -> Callable[..., Any]:
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.03)  # the model answers while the first stage still reads files
        return prepare(*args, **kwargs)
    return slow


def _recorded(method: Callable[..., Any], name: str, writes: list[tuple[str, int]],
              server: OllamaStandIn) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        writes.append((name, server.requests))
        return method(*args, **kwargs)
    return call


def test_a_failure_beside_the_first_stage_is_left_to_the_second_which_embeds_every_text(
        tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """The follower's first call fails (an error not retried): it stops, and the second stage embeds
    every text it did not write, with no error to the user (its calls in flight were answered in vain)."""
    monkeypatch.setattr(run_module, "POOL_MIN_FILES", 1_000)
    monkeypatch.setattr(prepare_module, "prepare", _slowed(prepare_module.prepare))
    ollama_server.fail_next(1, status=400, error="a bad request")
    root = write_tree(tmp_path / "p", many_functions(300, per_file=20))
    write_config(root, ollama_server.url)
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        report = index(project)
        with project.store.read() as reader:
            complete, waiting = reader.vectors_complete(), reader.pending()
    finally:
        project.close()
    assert ollama_server.requests > 1  # the failed one, then the second stage's
    assert report.embedded == len(set(ollama_server.received_inputs)) == 300 <= ollama_server.inputs_embedded
    assert complete and waiting == []
