"""Shared fixtures: the Ollama stand-in server, one local embedding model per session, and a
small tree indexed with it per module."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fixtures_tree import ORIGINAL, RENAMED, UNRELATED_A, UNRELATED_B, write_tree
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.embedders.local import LocalEmbedder
from sai.indexing import indexer
from sai.project import Project


@pytest.fixture
def ollama_server() -> Iterator[OllamaStandIn]:
    """A fresh stand-in for Ollama on a free port; its base url is `.url`."""
    with OllamaStandIn() as server:
        yield server


def shared_tmp(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory of the run's temporary root that every pytest-xdist worker sees (alone, the
    session's own): what one worker builds there under `built_once` the others reuse."""
    base = tmp_path_factory.getbasetemp()
    path = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    path.mkdir(exist_ok=True)
    return path


@contextmanager
def built_once(directory: Path) -> Iterator[None]:
    """Hold the directory's lock: one worker builds, the others wait and then find it built."""
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def local_embedder(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    """One all-MiniLM-L6-v2 embedder per session (per worker under pytest-xdist), its ONNX file
    built once into a temporary directory all workers share (the build is atomic; the lock keeps
    a second worker from building it again)."""
    pytest.importorskip("onnxruntime", reason="the 'local' extra is not installed")
    embedder = LocalEmbedder(cache_dir=shared_tmp(tmp_path_factory, "model-cache"))
    with built_once(embedder.cache_dir):
        embedder.load()
    return embedder


@pytest.fixture(scope="module")
def local_project(tmp_path_factory: pytest.TempPathFactory, local_embedder: LocalEmbedder) -> Iterator[Project]:
    """A function, its renamed copy and two unrelated ones, indexed with the local model once
    per module (the tests only read it)."""
    root = write_tree(tmp_path_factory.mktemp("local"), {
        "a/intervals.py": ORIGINAL, "b/ranges.py": RENAMED, "c/config.py": UNRELATED_A, "d/report.py": UNRELATED_B,
    })
    config = load_config(cwd=root, env={}, flags={"embedder": "local", "root": str(root)})
    project = Project(config, embedder=local_embedder)
    indexer.index(project)
    yield project
    project.close()


@pytest.fixture(scope="module")
def standin() -> Iterator[OllamaStandIn]:
    """One stand-in for Ollama per test module, for module-scoped indexes and servers."""
    with OllamaStandIn() as server:
        yield server


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a thread: lets module-scoped fixtures hold async MCP client sessions."""
    with start_blocking_portal() as running:
        yield running
