"""`sai copy` and `--backend qdrant` through the CLI entry point (Qdrant in local mode)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn
from test_cli import SOURCES, Result, assert_one_error_line, sai, write_config

from sai.store.qdrant import QdrantStore

QDRANT = "qdrant:\n  path: .index/qdrant\n"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OLLAMA_HOST", "SAI_CONFIG", "SAI_EMBEDDER", "SAI_MODEL", "SAI_COLLECTION", "SAI_ROOT",
                "SAI_EXT", "SAI_CHUNKER", "SAI_DB_PATH", "SAI_BACKEND", "QDRANT_URL", "QDRANT_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def project(tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    write_tree(root, SOURCES)
    write_config(root, ollama_server, QDRANT)
    monkeypatch.chdir(root)
    return root


def _hits(capsys: pytest.CaptureFixture[str], query: str, mode: str) -> list[tuple]:
    result = sai(capsys, "--query", query, "--query-only", "--mode", mode, "--json")
    assert result.code == 0, result.err
    return [(h["path"], h["start_line"], h["end_line"], h["chunk_id"], round(h["score"], 5))
            for h in json.loads(result.out)["hits"]]


def _copy(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    return sai(capsys, *args, "copy", "--json", "--to", "duckdb" if "qdrant" in args else "qdrant")


def test_copy_to_qdrant_and_back_answers_the_same(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sai(capsys, "--silent").code == 0
    before = {mode: _hits(capsys, "hash the password", mode) for mode in ("hybrid", "semantic", "lexical")}
    assert before["lexical"] and before["semantic"]
    result = _copy(capsys)
    assert result.code == 0, result.err
    copied = json.loads(result.out)
    assert copied["from"] == "duckdb" and copied["to"] == "qdrant" and copied["files"] == 3
    store = QdrantStore("demo", path=project / ".index" / "qdrant")
    with store.read() as reader:
        assert reader.chunk_count() == copied["chunks"] and sorted(reader.files()) == sorted(
            k for k in SOURCES if k != "gen.py")
        assert reader.meta()["backend"] == "qdrant" and reader.meta()["model"] == "nomic-embed-text"
        assert reader.lexical("hash password", 3)
    store.close()
    assert sai(capsys, "flush").code == 0
    back = _copy(capsys, "--backend", "qdrant")
    assert back.code == 0, back.err
    assert json.loads(back.out)["chunks"] == copied["chunks"]
    after = {mode: _hits(capsys, "hash the password", mode) for mode in ("hybrid", "semantic", "lexical")}
    assert after == before
    assert sai(capsys, "--silent", "--json").code == 0  # an index run after the copy embeds nothing
    status = json.loads(sai(capsys, "status", "--json").out)
    assert status["chunk_count"] == copied["chunks"]


def test_copy_refuses_its_own_backend_and_a_missing_index(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_error_line(sai(capsys, "copy", "--to", "duckdb"), "already lives on backend duckdb", code=2)
    assert_one_error_line(sai(capsys, "copy", "--to", "qdrant"), "no index at")
    assert_one_error_line(_copy(capsys, "--backend", "qdrant"), "no index 'demo' at")


def test_backend_qdrant_commands_the_core_cannot_run_yet_are_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SAI_BACKEND", "qdrant")
    assert_one_error_line(sai(capsys, "status"), "does not run on backend qdrant yet", code=2)


def test_an_unreachable_server_is_one_line_without_the_key(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, ollama_server: OllamaStandIn,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_config(project, ollama_server, "qdrant:\n  timeout_s: 2\n")
    monkeypatch.setenv("QDRANT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("QDRANT_API_KEY", "top-secret-key")
    assert sai(capsys, "--silent").code == 0
    line = assert_one_error_line(sai(capsys, "copy", "--to", "qdrant"), f"http://127.0.0.1:{port}")
    assert "top-secret" not in line and "QDRANT_URL" in line


def test_backend_qdrant_needs_a_url_or_a_path(
    project: Path, capsys: pytest.CaptureFixture[str], ollama_server: OllamaStandIn,
) -> None:
    write_config(project, ollama_server, "backend: qdrant\n")
    assert_one_error_line(sai(capsys, "status"), "needs qdrant.url (or QDRANT_URL)")
