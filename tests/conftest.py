"""Shared fixtures: the Ollama stand-in server, one local embedding model per session, and a
small tree indexed with it per module."""

from __future__ import annotations

from collections.abc import Iterator

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


@pytest.fixture(scope="session")
def local_embedder(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    """One all-MiniLM-L6-v2 embedder shared by the session: the model loads on first use only,
    its ONNX file built into the session's temporary directory."""
    pytest.importorskip("onnxruntime", reason="the 'local' extra is not installed")
    return LocalEmbedder(cache_dir=tmp_path_factory.mktemp("model-cache"))


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
