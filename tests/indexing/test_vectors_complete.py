"""An index records when no chunk waits for a vector (store: `vectors_complete`), so a run and
`status` know it without reading every vector; a chunk stored without one unmarks it, in the
same transaction, and the next run embeds it; a run killed before its vectors leaves it unmarked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.indexing.indexer import index
from sai.models import FileRow, NewChunk
from sai.project import Project

REPO = Path(__file__).resolve().parents[2]


def _project(root: Path) -> Project:
    return Project(load_config(flags={}, env={}, cwd=root))


def _index(root: Path) -> int:
    """An index run in this process; returns how many texts it embedded."""
    project = _project(root)
    try:
        return index(project).embedded
    finally:
        project.close()


def _state(root: Path) -> tuple[bool, list[str], int]:
    """(recorded complete, pending hashes, pending count) as a fresh process's reader sees them."""
    project = _project(root)
    try:
        with project.store.read() as reader:
            return reader.vectors_complete(), [p.content_hash for p in reader.pending()], reader.pending_count()
    finally:
        project.close()


def _pending_chunk(root: Path, key: str) -> None:
    """A chunk stored without a vector by a writer outside any run (as a first stage leaves one)."""
    project = _project(root)
    try:
        with project.store.write() as writer:
            chunk = NewChunk(path=key, language="python", start_line=1, end_line=1, symbol="orphan",
                             text="def orphan(): return 'waiting'", content_hash="orphan-hash", file_hash="f",
                             no_duplicate=False, lexemes="orphan waiting", shape=None)
            writer.replace_files([FileRow(key, 1, 1, "f", 1)], [chunk], np.zeros((1, 0), np.float32))
    finally:
        project.close()


def test_a_finished_run_marks_the_vectors_complete_and_a_pending_chunk_unmarks_them(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "project", many_functions(60, per_file=20))
    write_config(root, ollama_server.url)
    assert _index(root) == 60
    assert _state(root) == (True, [], 0)

    _pending_chunk(root, "gen/orphan.py")  # its transaction unmarks the index
    assert _state(root) == (False, ["orphan-hash"], 1)

    embedded_before = ollama_server.inputs_embedded
    _index(root)  # the orphan's file is not in the tree: the run removes it, and marks again
    assert _state(root) == (True, [], 0)
    assert ollama_server.inputs_embedded == embedded_before  # nothing was left to embed


def test_a_pending_chunk_of_a_file_the_run_keeps_is_embedded_by_the_next_run(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "project", many_functions(40, per_file=20))
    write_config(root, ollama_server.url)
    _index(root)
    project = _project(root)
    try:
        with project.store.read() as reader:
            key = sorted(reader.files())[0]
            mtime = reader.files()[key].mtime_ns
    finally:
        project.close()
    # the file's rows replaced by one pending chunk under the same file state: the run keeps it as it is
    project = _project(root)
    try:
        with project.store.write() as writer:
            stored = writer.files([key])[key]
            chunk = NewChunk(path=key, language="python", start_line=1, end_line=1, symbol="orphan",
                             text="def orphan(): return 'waiting'", content_hash="orphan-hash",
                             file_hash=stored.file_hash, no_duplicate=False, lexemes="orphan waiting", shape=None)
            writer.replace_files([FileRow(key, stored.size, mtime, stored.file_hash, 1)], [chunk],
                                 np.zeros((1, 0), np.float32))
    finally:
        project.close()
    assert _state(root)[0] is False
    embedded_before = ollama_server.inputs_embedded
    assert _index(root) == 1  # the run began unmarked: it asks the store what waits, and finds the orphan
    assert ollama_server.inputs_embedded == embedded_before + 1
    assert _state(root) == (True, [], 0)


@pytest.mark.slow
def test_a_run_killed_before_its_vectors_leaves_the_index_unmarked_and_the_next_run_finishes(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "project", many_functions(200, per_file=20))
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "batch_size": 8, "parallel": 1})
    ollama_server.stall_next(8, seconds=0.3)  # the first vectors come slowly: the kill lands among them
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-m", "sai", "--silent"], cwd=root, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while ollama_server.requests < 3 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    complete, pending, count = _state(root)
    assert not complete and pending and count > 0, (complete, len(pending), count)

    finished = subprocess.run([sys.executable, "-m", "sai", "--silent"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert _state(root) == (True, [], 0)
