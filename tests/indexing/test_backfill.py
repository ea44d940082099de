"""The second stage of an index run reads waiting texts by the id of their first chunk and writes
each group of vectors to the stretch of ids it covers (indexing/backfill.py): copies of a text
stored far from its first chunk still get its vector, each text is embedded once, and a run killed
between the writes leaves copies that the next run fills without the model."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.indexing import backfill
from sai.indexing.indexer import index
from sai.project import Project
from sai.store.duckdb.writer import DuckDBWriter

SHARED = "def shared_helper(value):\n    return sorted(set(value))[:3]\n"


def _tree(root: Path) -> Path:
    """Many distinct functions between two files holding the same function text."""
    files = many_functions(120, per_file=10)
    files["aaa/first.py"] = SHARED
    files["zzz/last.py"] = SHARED
    return write_tree(root, files)


def _stored(root: Path) -> tuple[int, dict[str, np.ndarray]]:
    """(chunks waiting, the vector of each copy of SHARED by path) as a fresh process sees them."""
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        with project.store.read() as reader:
            copies = {key: reader.chunks_of_file(key)[0].id for key in ("aaa/first.py", "zzz/last.py")}
            found = reader.vectors(list(copies.values()))
            return reader.pending_count(), {key: found[i] for key, i in copies.items() if i in found}
    finally:
        project.close()


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Groups of 4 texts and writes of 8: the copies fall in different writes' stretches."""
    monkeypatch.setattr(backfill, "EMBED_GROUP", 4)
    monkeypatch.setattr(backfill, "WRITE_CHUNKS", 8)


def test_a_copy_stored_far_from_its_first_chunk_gets_the_same_vector_and_is_embedded_once(
    tmp_path: Path, ollama_server: OllamaStandIn, small_steps: None
) -> None:
    root = _tree(tmp_path / "project")
    write_config(root, ollama_server.url)
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        assert index(project).embedded == 121  # 120 functions and the shared one
    finally:
        project.close()
    assert ollama_server.inputs_embedded == 121
    waiting, vectors = _stored(root)
    assert waiting == 0 and set(vectors) == {"aaa/first.py", "zzz/last.py"}
    assert np.array_equal(vectors["aaa/first.py"], vectors["zzz/last.py"])


def test_copies_a_killed_run_left_without_a_vector_are_filled_by_the_next_run_without_the_model(
    tmp_path: Path, ollama_server: OllamaStandIn, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "project")
    write_config(root, ollama_server.url)

    def killed(self: backfill.Backfill, hashes: list[str]) -> None:  # dies after the last write, before the copies
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(backfill.Backfill, "_copy", killed)
        project = Project(load_config(flags={}, env={}, cwd=root))
        try:
            with pytest.raises(KeyboardInterrupt):
                index(project)
        finally:
            project.close()
    waiting, vectors = _stored(root)
    assert waiting == 1 and list(vectors) == ["aaa/first.py"]  # only the copy waits

    embedded = ollama_server.inputs_embedded
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        assert index(project).embedded == 0
    finally:
        project.close()
    assert ollama_server.inputs_embedded == embedded  # the copy took its vector from the first
    waiting, vectors = _stored(root)
    assert waiting == 0 and np.array_equal(vectors["aaa/first.py"], vectors["zzz/last.py"])


def test_many_copied_texts_are_filled_a_few_texts_a_transaction_and_each_embedded_once(
    tmp_path: Path, ollama_server: OllamaStandIn, small_steps: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backfill, "COPY_HASHES", 2)  # 7 texts with copies: 4 transactions
    files = many_functions(40, per_file=10)
    shared = {f"def shared_{n}(value):\n    return value + {n}\n" for n in range(7)}
    for n, text in enumerate(sorted(shared)):
        files[f"aaa/first_{n}.py"] = text
        files[f"mmm/middle_{n}.py"] = text
        files[f"zzz/last_{n}.py"] = text
    root = write_tree(tmp_path / "project", files)
    write_config(root, ollama_server.url)
    writes: list[int] = []
    real = DuckDBWriter.copy_vectors

    def counted(self: DuckDBWriter, hashes: list[str]) -> int:
        writes.append(len(hashes))
        return real(self, hashes)

    monkeypatch.setattr(DuckDBWriter, "copy_vectors", counted)
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        assert index(project).embedded == 47
        with project.store.read() as reader:
            assert reader.pending_count() == 0 and reader.vectors_complete()
            for n in range(7):
                ids = [reader.chunks_of_file(f"{d}_{n}.py")[0].id for d in ("aaa/first", "mmm/middle", "zzz/last")]
                found = reader.vectors(ids)
                assert len(found) == 3 and all(np.array_equal(found[ids[0]], found[i]) for i in ids)
    finally:
        project.close()
    assert writes == [2, 2, 2, 1] and ollama_server.inputs_embedded == 47


def test_a_served_model_gets_the_next_call_while_it_answers_one_and_every_text_once(
    tmp_path: Path, ollama_server: OllamaStandIn, small_steps: None
) -> None:
    """Ollama is served: the second stage keeps two calls in flight (SERVED_CALLS), so the server
    has the next group's texts while an answer is on its way; the vectors are taken in order."""
    root = write_tree(tmp_path / "project", many_functions(40, per_file=10))
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "batch_size": 4, "parallel": 1})
    ollama_server.stall_next(1, seconds=2.0)  # the first group's answer is slow
    project = Project(load_config(flags={}, env={}, cwd=root))
    arrived: list[int] = []

    def sent_during_the_stall() -> None:
        time.sleep(1.0)  # the first request is stalled for 2 s from its arrival
        arrived.append(ollama_server.requests)

    watcher = threading.Thread(target=sent_during_the_stall)
    try:
        watcher.start()
        assert index(project).embedded == 40
    finally:
        watcher.join()
        project.close()
    assert arrived and arrived[0] >= 2  # a serial stage would have sent only the stalled one
    assert ollama_server.inputs_embedded == 40 and sorted(ollama_server.received_inputs) == sorted(
        set(ollama_server.received_inputs))
    project = Project(load_config(flags={}, env={}, cwd=root))
    try:
        with project.store.read() as reader:
            assert reader.pending_count() == 0
    finally:
        project.close()
