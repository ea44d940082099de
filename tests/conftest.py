"""Shared fixtures: the Ollama stand-in server and one local embedding model per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from ollama_standin import OllamaStandIn

from sai.embedders.local import LocalEmbedder


@pytest.fixture
def ollama_server() -> Iterator[OllamaStandIn]:
    """A fresh stand-in for Ollama on a free port; its base url is `.url`."""
    with OllamaStandIn() as server:
        yield server


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """One all-MiniLM-L6-v2 embedder shared by the session: the model loads on first use only."""
    pytest.importorskip("sentence_transformers", reason="the 'local' extra is not installed")
    return LocalEmbedder()


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
