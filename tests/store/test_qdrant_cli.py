"""`sai copy` and `--backend qdrant` through the CLI entry point (Qdrant in local mode)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from cli_runs import SOURCES, Result, assert_one_error_line, sai, write_config
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn

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


@pytest.mark.slow
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
    refs = json.loads(sai(capsys, "refs", "open", "--json").out)  # ...and reads the files for references
    assert [(r["path"], r["kind"]) for r in refs["references"]] == [("src/db.py", "call")]


def test_copy_refuses_its_own_backend_and_a_missing_index(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_error_line(sai(capsys, "copy", "--to", "duckdb"), "already lives on backend duckdb", code=2)
    assert_one_error_line(sai(capsys, "copy", "--to", "qdrant"), "no index at")
    assert_one_error_line(_copy(capsys, "--backend", "qdrant"), "no index 'demo' at")


TOTALS = ("def order_total(items):\n    total = 0\n    for item in items:\n"
          "        total += item.price\n    return total\n")
MORE = {
    "src/orders.py": TOTALS,
    "src/invoices.py": TOTALS.replace("order_total", "invoice_total").replace("item", "line"),
    "lib/shapes.py": "class Square:\n    def area(self, side):\n        return side * side\n",
}
SAME = (  # what each backend must answer alike: (arguments, keys of the JSON left out)
    (("--silent", "--json"), ()),
    (("--dry-run", "--json"), ()),
    (("--query", "hash the password", "--query-only", "--json"), ()),
    (("--query", "total of the items", "--query-only", "--mode", "semantic", "--json"), ()),
    (("--query", "password", "--query-only", "--mode", "lexical", "--json"), ("score",)),
    (("--query", "total", "--query-only", "--path-glob", "src/**", "--language", "python", "--json"), ()),
    (("similar", "--path", "src/orders.py", "--line", "2", "--json"), ()),
    (("similar", "--code", "def add(a, b):\n    return a + b\n", "--min-score", "0", "--json"), ()),
    (("duplicates", "--json"), ()),
    (("duplicates", "--metric", "cosine", "--min-score", "0.5", "--json"), ()),
    (("symbol", "area", "--json"), ()),
    (("status", "--json"), ("backend", "indexed_at", "location")),
    (("refresh", "src/util.py", "--json"), ()),
    (("sync", "--since", "HEAD", "--json"), ()),
    (("--recreate", "--silent", "--json"), ()),
    (("flush", "--json"), ()),
)


def _answers(capsys: pytest.CaptureFixture[str], root: Path) -> list[object]:
    answers: list[object] = []
    for args, unshared in SAME:
        if args[0] == "refresh":
            (root / "src/util.py").write_text("def format_date(value, fmt):\n    return fmt % value\n")
        if args[0] == "sync":  # git reports the edit
            (root / "src/db.py").write_text("def connect_database(url, timeout):\n    return open(url)\n")
        result = sai(capsys, *args)
        assert result.code == 0, (args, result.err)
        payload = json.loads(result.out)
        for key in unshared:  # BM25 scores: Qdrant fixes the mean length at write time (same order)
            for where in [payload, *payload.get("hits", [])]:
                where.pop(key, None)
        answers.append(_rounded(payload))
    return answers


def _rounded(value: object) -> object:
    """Scores to 4 places: Qdrant normalises stored vectors again (equal to 1e-6, not bit for bit)."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@pytest.mark.slow
def test_every_command_answers_alike_on_both_backends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    ollama_server: OllamaStandIn,
) -> None:
    answers = {}
    for backend, extra in (("duckdb", ""), ("qdrant", "backend: qdrant\n" + QDRANT)):
        root = tmp_path / "proj"  # one path for both: answers name the root
        shutil.rmtree(root, ignore_errors=True)
        write_tree(root, {**SOURCES, **MORE})
        write_config(root, ollama_server, extra)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
        for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
            subprocess.run(git + step, check=True, capture_output=True)
        monkeypatch.chdir(root)
        answers[backend] = _answers(capsys, root)
    assert (root / ".index" / "qdrant").is_dir() and not (root / ".index" / "code.duckdb").exists()
    for (args, _), duck, qdrant in zip(SAME, answers["duckdb"], answers["qdrant"], strict=True):
        assert qdrant == duck, args
    hits = answers["duckdb"][2]["hits"]  # the answers compared are real ones
    assert hits and hits[0]["path"] == "src/auth.py"
    assert answers["duckdb"][8]["clusters"]


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


def test_an_index_of_an_older_format_on_qdrant_asks_for_a_rebuild_naming_where_it_is(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a store that `can_upgrade` migrates in place; on Qdrant the run says where the index is
    and how to rebuild it, in one line, and leaves the index as it was."""
    assert sai(capsys, "--backend", "qdrant", "--silent").code == 0
    store = QdrantStore("demo", path=project / ".index" / "qdrant")
    with store.write() as writer:
        writer.set_meta({"schema_version": "4"})
    with store.read() as reader:
        chunks = reader.chunk_count()
    store.close()
    line = assert_one_error_line(sai(capsys, "--backend", "qdrant", "--silent"), "cannot upgrade on the qdrant backend")
    assert str(project / ".index" / "qdrant") in line and "'demo'" in line and "sai --recreate" in line
    store = QdrantStore("demo", path=project / ".index" / "qdrant")
    with store.read() as reader:
        assert reader.chunk_count() == chunks and reader.meta()["schema_version"] == "4"
    store.close()
