"""Indexing against the Ollama stand-in and a real DuckDB file: incremental, safe, resumable."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
from child_signals import default_sigint
from fixtures_tree import (
    JS_SOURCE,
    PY_SOURCE,
    STANDIN_MODEL,
    TREE,
    Snapshot,
    load,
    many_functions,
    open_project,
    snapshot,
    write_config,
    write_tree,
)
from old_formats import connect_with
from ollama_standin import OllamaStandIn

from sai.chunking.base import CHUNKER_VERSION
from sai.cli import commands as cli
from sai.duplicates.clusters import find_duplicates
from sai.embedders.ollama import OllamaEmbedder
from sai.errors import ConfigError, EmbedderError, IndexMismatchError, StoreError
from sai.indexing import indexer
from sai.indexing import run as run_module
from sai.models import SCHEMA_VERSION
from sai.project import Project
from sai.query import lookup, search
from sai.query.status import status as index_status
from sai.store.duckdb import DuckDBStore, schema
from sai.store.duckdb.writer import DuckDBWriter  # the DuckDB backend's SQL: a test reaches into it
from sai.text.shape import signature

REPO = Path(__file__).resolve().parents[2]  # the checkout, for subprocesses
TREE_CHUNKS = 11  # chunks of fixtures_tree.TREE with the ast chunker


@pytest.fixture
def root(tmp_path: Path, ollama_server: OllamaStandIn) -> Path:
    """A project with TREE and a config for the stand-in; not yet indexed."""
    project_root = write_tree(tmp_path / "project")
    write_config(project_root, ollama_server.url)
    return project_root


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TREE indexed once per module (the index file does not record the Ollama url)."""
    project_root = write_tree(tmp_path_factory.mktemp("template"))
    with OllamaStandIn() as server:
        write_config(project_root, server.url)
        _index(project_root)
    return project_root


@pytest.fixture(scope="module")
def original(template: Path) -> Snapshot:
    """The template's stored chunks and vectors, which every `indexed` copy starts with."""
    return snapshot(template)


@pytest.fixture
def indexed(template: Path, tmp_path: Path, ollama_server: OllamaStandIn) -> Path:
    """A copy of the indexed template (mtimes kept), configured for this test's stand-in."""
    project_root = shutil.copytree(template, tmp_path / "project")
    write_config(project_root, ollama_server.url)
    return project_root


def _index(root: Path, **kwargs: object) -> indexer.IndexReport:
    project = open_project(root)
    try:
        return indexer.index(project, **kwargs)
    finally:
        project.close()


def test_first_run_embeds_every_chunk(root: Path, ollama_server: OllamaStandIn) -> None:
    report = _index(root)
    assert (report.chunks, report.files, report.embedded) == (TREE_CHUNKS, 3, TREE_CHUNKS)
    assert ollama_server.inputs_embedded == TREE_CHUNKS
    assert all(text.startswith("search_document: ") for text in ollama_server.received_inputs)
    assert len(snapshot(root)) == TREE_CHUNKS


def test_rerun_on_unchanged_tree_makes_no_embed_requests(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    report = _index(indexed)
    assert ollama_server.requests == 0
    assert (report.embedded, report.unchanged, report.removed) == (0, TREE_CHUNKS, 0)
    assert report.chunks == TREE_CHUNKS
    assert snapshot(indexed) == original


def test_touching_a_file_without_changing_it_makes_no_embed_requests(
    indexed: Path, ollama_server: OllamaStandIn
) -> None:
    target = indexed / "billing.py"
    later = target.stat().st_mtime_ns + 5_000_000_000
    os.utime(target, ns=(later, later))
    report = _index(indexed)
    assert ollama_server.requests == 0
    assert (report.embedded, report.unchanged, report.chunks) == (0, TREE_CHUNKS, TREE_CHUNKS)
    project = open_project(indexed)
    with project.store.read() as reader:
        assert reader.files()["billing.py"].mtime_ns == later  # so the next run does not re-read it
    project.close()


def test_editing_one_function_embeds_only_its_chunk(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    edited = PY_SOURCE.replace("return amount * (1 + TAX_RATE)", "return round(amount * (1 + TAX_RATE), 2)")
    (indexed / "billing.py").write_text(edited, encoding="utf-8")
    report = _index(indexed)
    after = snapshot(indexed)
    assert ollama_server.inputs_embedded == 1 == report.embedded
    assert (report.unchanged, report.chunks) == (TREE_CHUNKS - 1, TREE_CHUNKS)
    assert "round(amount" in ollama_server.received_inputs[0]
    changed = set(after) - set(original)
    assert [key[3] for key in changed] == ["def apply_tax(amount):\n    return round(amount * (1 + TAX_RATE), 2)"]
    assert len(after) == len(original)
    for key in set(original) & set(after):
        assert after[key] == original[key], key


def test_deleting_a_file_removes_its_rows_and_counts_them(indexed: Path, ollama_server: OllamaStandIn) -> None:
    (indexed / "web" / "dates.js").unlink()
    report = _index(indexed)
    assert report.removed == 2
    assert (report.chunks, report.files) == (TREE_CHUNKS - 2, 2)
    assert not any(key[0] == "web/dates.js" for key in snapshot(indexed))
    project = open_project(indexed)
    with project.store.read() as reader:
        assert "web/dates.js" not in reader.files()
    project.close()
    assert ollama_server.requests == 0


def test_file_newly_excluded_by_config_loses_its_rows(indexed: Path, ollama_server: OllamaStandIn) -> None:
    write_config(indexed, ollama_server.url, exclude=["pkg/**"])
    report = _index(indexed)
    assert report.removed == 3
    assert {key[0] for key in snapshot(indexed)} == {"billing.py", "web/dates.js"}
    assert ollama_server.requests == 0


def test_recreate_drops_the_collection_and_rebuilds_it(indexed: Path, ollama_server: OllamaStandIn) -> None:
    project = open_project(indexed)
    with project.store.write() as writer:
        writer.set_meta({"leftover": "from the old collection"})
    project.close()
    report = _index(indexed, recreate=True)
    assert report.embedded == TREE_CHUNKS == ollama_server.inputs_embedded
    assert len(snapshot(indexed)) == TREE_CHUNKS
    project = open_project(indexed)
    with project.store.read() as reader:
        assert "leftover" not in reader.meta()
    project.close()


def _damage_a_table_block(db: Path) -> None:
    """Clobber a block of table rows such that the file still opens and counts its chunks."""
    good = db.read_bytes()
    for start in reversed(range(12288, len(good), 262144)):  # 3 headers of 4 KB, then 256 KB blocks
        db.write_bytes(good[:start + 64] + bytes(64) + good[start + 128:])
        if _opens_but_is_damaged(db):
            return
    raise AssertionError("no block of the file holds rows that only a full read finds damaged")


def _opens_but_is_damaged(db: Path) -> bool:
    con = duckdb.connect(":memory:")
    try:
        try:
            con.execute(f"ATTACH '{db}' AS sai (READ_ONLY)")
            con.execute("USE sai")
            con.execute("SELECT count(*) FROM source_code").fetchall()
        except duckdb.Error:
            return False  # damaged where opening finds it: not the case under test
        tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'sai'").fetchall()
        try:
            for (table,) in tables:  # reading every column reads (and checks) every block
                con.execute(f"SELECT sum(hash(COLUMNS(*))) FROM {table}").fetchall()
        except duckdb.Error:
            return True
        return False
    finally:
        con.close()


def test_recreate_keeps_a_damaged_file_that_still_opens_as_damaged(indexed: Path, ollama_server: OllamaStandIn) -> None:
    db = indexed / ".index" / "code.duckdb"
    _damage_a_table_block(db)
    project = open_project(indexed)
    try:
        report = indexer.index(project, recreate=True)
    finally:
        project.close()
    assert report.embedded == TREE_CHUNKS
    assert Path(f"{db}.damaged").is_file() and Path(f"{db}.damaged").stat().st_size > 0
    project = open_project(indexed)
    try:
        with project.store.read() as reader:
            assert reader.chunk_count() == TREE_CHUNKS
            schema.verify(reader.conn)  # the new file is whole
    finally:
        project.close()


def test_every_nonblank_line_of_an_indexed_file_is_inside_a_stored_chunk(indexed: Path) -> None:
    covered: dict[str, set[int]] = {}
    for path, start, end, _ in snapshot(indexed):
        covered.setdefault(path, set()).update(range(start, end + 1))
    for key, text in TREE.items():
        wanted = {n for n, line in enumerate(text.split("\n"), start=1) if line.strip()}
        assert wanted - covered.get(key, set()) == set(), key


def test_index_built_with_another_model_raises_mismatch_naming_the_setting_to_drop(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    write_config(indexed, ollama_server.url, model="all-minilm")
    with pytest.raises(IndexMismatchError, match="leave out the model asked for") as caught:
        _index(indexed)
    assert f"model {STANDIN_MODEL}" in str(caught.value) and "all-minilm" in str(caught.value)
    assert "--recreate" not in str(caught.value)  # nothing is thrown away when a setting would do
    assert ollama_server.requests == 0
    assert snapshot(indexed) == original
    report = _index(indexed, recreate=True)  # a rebuild with the new model still works
    assert report.embedded == TREE_CHUNKS


def test_vectors_of_another_dimension_raise_mismatch(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    ollama_server.dim = 384  # the same model name now answers with shorter vectors
    (indexed / "billing.py").write_text(PY_SOURCE + "\n\ndef extra():\n    return 1\n", encoding="utf-8")
    with pytest.raises(IndexMismatchError, match="vector_dim") as caught:
        _index(indexed)
    assert "the model now answers with 384-d vectors" in str(caught.value)
    assert "--recreate" in str(caught.value)  # the model itself changed: only a rebuild helps
    assert snapshot(indexed) == original
    project = open_project(indexed)
    with pytest.raises(IndexMismatchError, match="vector_dim"):
        search.search(project, "total price of items")
    project.close()


def test_a_first_build_refuses_vectors_longer_or_shorter_than_the_configured_vector_dim(
    root: Path, ollama_server: OllamaStandIn
) -> None:
    write_config(root, ollama_server.url, vector_dim=384)  # the stand-in's model gives 768
    with pytest.raises(ConfigError, match="gives vectors of 768 dimensions, but vector_dim in the config is 384"):
        _index(root)
    assert not (root / ".index" / "code.duckdb").exists()  # refused before anything was written
    done = subprocess.run([sys.executable, "-m", "sai", "--silent"], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: the model ") and done.stderr.count("\n") == 1, done.stderr
    write_config(root, ollama_server.url, vector_dim=768)
    assert _index(root).embedded == TREE_CHUNKS


def test_index_of_another_schema_version_raises_mismatch(indexed: Path, ollama_server: OllamaStandIn) -> None:
    project = open_project(indexed)
    with project.store.write() as writer:
        writer.set_meta({"schema_version": "0"})
    project.close()
    with pytest.raises(IndexMismatchError, match="--recreate") as caught:
        _index(indexed)
    assert "another SAI version" in str(caught.value)
    assert ollama_server.requests == 0


def test_index_of_the_previous_format_is_upgraded_in_place_without_embedding(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    project = open_project(indexed)
    with project.store.write() as writer:  # what SAI 2 left: no shape column, its chunking meta
        writer.conn.con.execute("ALTER TABLE source_code DROP COLUMN shape")
        writer.set_meta({"schema_version": "2", "chunking": "ast/3/2000/strip=False/lexemes=2"})
    with pytest.raises(IndexMismatchError, match="older SAI") as caught:
        find_duplicates(project)
    assert "run `sai` in the project to upgrade it in place" in str(caught.value)
    project.close()
    report = _index(indexed)
    assert (report.chunks, report.embedded, report.unchanged) == (TREE_CHUNKS, 0, TREE_CHUNKS)
    assert ollama_server.requests == 0
    assert snapshot(indexed) == original  # every vector kept, bit for bit
    project = open_project(indexed)
    with project.store.read() as reader:
        assert reader.meta()["schema_version"] == str(SCHEMA_VERSION)
        rows, _, shapes = reader.all_chunks()
        rows = reader.chunks([r.id for r in rows])
    assert shapes == [signature(r.text, r.language) for r in rows] and any(shapes)
    assert {r.symbol: r.kind for r in rows}["Cart.add"] == "method"  # format 5's kind, filled in
    find_duplicates(project, min_score=0.5)  # readable again
    project.close()


def test_unreachable_ollama_raises_embedder_error_and_keeps_the_index(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    url = ollama_server.url
    ollama_server.stop()
    (indexed / "billing.py").write_text(PY_SOURCE + "\n\ndef extra():\n    return 1\n", encoding="utf-8")
    (indexed / "new.py").write_text("def brand_new():\n    return 2\n", encoding="utf-8")
    config = load(indexed)
    # the real client, with a short back-off so the retries do not slow the suite
    embedder = OllamaEmbedder(model=config.model, url=url, timeout_s=5, batch_size=32,
                              prefix_style=config.prefix_style, retries=1, backoff_s=0.01)
    project = Project(config, embedder=embedder)
    with pytest.raises(EmbedderError, match=f"cannot reach Ollama at {url}"):
        indexer.index(project)
    project.close()
    assert snapshot(indexed) == original


def test_index_directory_that_cannot_be_created_raises_one_line_store_error(
    root: Path, ollama_server: OllamaStandIn
) -> None:
    (root / "blocker").write_text("a regular file where the index directory should be\n")
    write_config(root, ollama_server.url, duckdb={"path": "blocker/index/code.duckdb"})
    with pytest.raises(StoreError) as caught:
        _index(root)
    message = str(caught.value)
    assert "\n" not in message
    assert "blocker" in message and "duckdb.path" in message


def test_binary_undecodable_oversized_and_symlinked_files_are_skipped_and_counted(
    root: Path, ollama_server: OllamaStandIn
) -> None:
    write_config(root, ollama_server.url, max_file_bytes=20_000)
    write_tree(root, {
        "blob.py": b"\x00\x01\x02binary",
        "latin1.py": "def cafe():\n    return 'caf\xe9'\n".encode("latin-1"),
        "huge.py": "x = 1\n" * 5000,
        # valid for the walk's first 8 KiB, invalid further on: caught when read in full
        "late_bad.py": ("y = 2\n" * 2000).encode() + b"z = '\xff'\n",
    })
    os.symlink("loop_b.py", root / "loop_a.py")
    os.symlink("loop_a.py", root / "loop_b.py")
    os.symlink("..", root / "pkg" / "again")  # a directory loop: must not be followed
    report = _index(root)
    assert report.skipped == 6
    assert (report.files, report.chunks) == (3, TREE_CHUNKS)
    assert {key[0] for key in snapshot(root)} == set(TREE)


def test_refresh_reembeds_only_new_text_of_the_named_file(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    (indexed / "web" / "dates.js").write_text(
        JS_SOURCE + "\nexport function today() {\n  return new Date();\n}\n", encoding="utf-8"
    )
    project = open_project(indexed)
    report = indexer.refresh(project, ["web/dates.js"])
    project.close()
    assert [(r.path, r.chunks) for r in report.refreshed] == [("web/dates.js", 3)]
    assert ollama_server.inputs_embedded == 1
    after = snapshot(indexed)
    assert len(after) == TREE_CHUNKS + 1
    assert all(after[key] == vector for key, vector in original.items())


def test_refresh_of_a_deleted_file_removes_its_rows(indexed: Path, ollama_server: OllamaStandIn) -> None:
    (indexed / "pkg" / "store" / "names.go").unlink()
    project = open_project(indexed)
    report = indexer.refresh(project, ["pkg/store/names.go"])
    project.close()
    assert [(r.path, r.removed_reason) for r in report.removed] == [("pkg/store/names.go", "missing")]
    assert not any(key[0] == "pkg/store/names.go" for key in snapshot(indexed))
    assert ollama_server.requests == 0


def test_flush_drops_the_collection_and_status_then_shows_no_chunks(indexed: Path) -> None:
    project = open_project(indexed)
    assert indexer.flush(project) is True
    assert index_status(project).chunk_count == 0
    assert indexer.flush(project) is False
    with pytest.raises(StoreError, match="`sai`"):
        search.search(project, "total price")
    project.close()


def test_cli_index_run_prints_the_summary(root: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(root)
    assert cli.main(["--silent"]) == 0
    assert cli.main(["--silent"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"indexed {TREE_CHUNKS} chunks from 3 ")
    assert f"{TREE_CHUNKS} chunk(s) embedded" in out[0]
    assert f"0 chunk(s) embedded, {TREE_CHUNKS} unchanged, 0 removed" in out[1]


# An index run in another process, with smaller write batches so a small tree spans several.
INDEX_IN_SUBPROCESS = """
import sys
from pathlib import Path
import sai.indexing.backfill
import sai.indexing.indexer
import sai.indexing.run
import sai.store.duckdb
from sai.config import load_config
from sai.project import Project
sai.indexing.run.FLUSH_CHUNKS = int(sys.argv[2])
sai.indexing.backfill.EMBED_GROUP = 20
sai.indexing.backfill.WRITE_CHUNKS = int(sys.argv[2])
sai.indexing.backfill.AHEAD = sai.indexing.backfill.AHEAD_SERVED = 0
sai.store.duckdb.DuckDBStore.pending_vectors = sys.argv[3] != "one-phase"
sai.indexing.run.FOLLOW = sys.argv[3] == "two-phase"  # "second-stage": no embedding beside the first
sai.indexing.indexer.index(Project(load_config(cwd=Path(sys.argv[1]), env={})))
"""


def _kill_at_third_request(root: Path, batch: int, phase: str, ollama_server: OllamaStandIn) -> float:
    """Index `root` in a subprocess, SIGKILL it a second after its third embedding request;
    returns the deadline the caller's waits share."""
    proc = subprocess.Popen([sys.executable, "-c", INDEX_IN_SUBPROCESS, str(root), str(batch), phase],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while ollama_server.requests < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err
    return deadline


def _assert_same_as_a_clean_build(root: Path, tree: dict[str, str], clean: Path, ollama_server: OllamaStandIn,
                                   chunks: int) -> None:
    """The finished index of `root` holds what a clean build of the same tree does, every vector in."""
    write_tree(clean, tree)
    write_config(clean, ollama_server.url)
    assert _index(clean).chunks == chunks
    assert snapshot(root) == snapshot(clean)
    project = open_project(root)
    assert index_status(project).pending_vectors == 0
    project.close()


@pytest.mark.slow
def test_killed_while_embedding_keeps_every_chunk_and_written_vector_and_next_run_embeds_the_rest(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    functions, written = 200, 40
    tree = many_functions(functions, per_file=10)
    root = write_tree(tmp_path / "project", tree)
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "batch_size": 20})
    # chunks first (no request), then groups of 20 texts: two answered and written, the third stalls
    ollama_server.stall_next(2, seconds=0)
    ollama_server.stall_next(1, seconds=3)
    deadline = _kill_at_third_request(root, written, "second-stage", ollama_server)
    assert ollama_server.requests == 3
    while ollama_server.inputs_embedded < 60 and time.monotonic() < deadline:
        time.sleep(0.01)  # the stalled answer is counted when it ends, after the kill

    project = open_project(root)
    status = index_status(project)
    assert (status.chunk_count, status.pending_vectors, status.file_count) == (functions, functions - written, 20)
    assert search.search(project, "gen_150", mode="lexical")[0].path == "gen/mod_015.py"
    hits = search.search(project, "gen_150", explain=True)  # hybrid over every chunk, vector or not
    assert hits[0].path == "gen/mod_015.py" and hits[0].explain and hits[0].explain.pending_vector
    ollama_server.reset_counts()
    report = indexer.index(project)
    project.close()
    assert report.embedded == ollama_server.inputs_embedded == functions - written
    assert report.chunks == functions

    _assert_same_as_a_clean_build(root, tree, tmp_path / "clean", ollama_server, functions)


@pytest.mark.slow
def test_killed_while_embedding_beside_the_first_stage_the_next_run_completes_the_same_index(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    """A served model embeds while the first stage stores (run.Follower): killed at its third request,
    what it held is lost, never half written; the next run embeds each text left once."""
    functions = 200
    tree = many_functions(functions, per_file=10)
    root = write_tree(tmp_path / "project", tree)
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "batch_size": 20})
    ollama_server.stall_next(2, seconds=0)
    ollama_server.stall_next(1, seconds=3)
    _kill_at_third_request(root, 20, "two-phase", ollama_server)
    project = open_project(root)
    status = index_status(project)
    assert 0 < status.chunk_count <= functions and status.pending_vectors <= status.chunk_count
    ollama_server.reset_counts()
    report = indexer.index(project)
    project.close()
    assert report.chunks == functions
    assert report.embedded == ollama_server.inputs_embedded == len(set(ollama_server.received_inputs))
    assert report.embedded >= status.pending_vectors

    _assert_same_as_a_clean_build(root, tree, tmp_path / "clean", ollama_server, functions)


@pytest.mark.slow
def test_killed_run_keeps_finished_batches_and_next_run_completes_it(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    """The one-phase path (a store without pending vectors): chunks are written with their vectors."""
    functions, batch = 200, 40
    tree = many_functions(functions, per_file=10)
    root = write_tree(tmp_path / "project", tree)
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "batch_size": 20})
    # batch 1 is two requests of 20; the third request starts batch 2 and stalls until the kill;
    # batch 1 is written while it stalls (batches are embedded ahead of the one being written)
    ollama_server.stall_next(2, seconds=0)
    ollama_server.stall_next(1, seconds=3)
    deadline = _kill_at_third_request(root, batch, "one-phase", ollama_server)
    assert ollama_server.requests in (3, 4)  # batch 2's two requests (sent together), no later one
    while ollama_server.inputs_embedded < ollama_server.requests * 20 and time.monotonic() < deadline:
        time.sleep(0.01)  # the stalled answer is counted when it ends, after the kill

    project = open_project(root)
    status = index_status(project)
    assert status.chunk_count == batch
    assert search.search(project, "gen_7 value")
    assert search.search(project, "gen_7", mode="lexical")[0].path == "gen/mod_000.py"
    ollama_server.reset_counts()
    report = indexer.index(project)
    project.close()
    assert report.embedded == ollama_server.inputs_embedded == functions - batch
    assert report.chunks == functions

    clean = write_tree(tmp_path / "clean", tree)
    write_config(clean, ollama_server.url)
    assert _index(clean).chunks == functions
    assert snapshot(root) == snapshot(clean)


def test_removing_most_chunks_leaves_exact_search_over_the_rest(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "p", many_functions(30, per_file=10))
    write_config(root, ollama_server.url)
    _index(root)
    (root / "gen" / "mod_000.py").unlink()
    (root / "gen" / "mod_001.py").unlink()
    report = _index(root)
    assert (report.removed, report.chunks) == (20, 10)
    project = open_project(root)
    hits = search.search(project, "gen_25 value", limit=10, mode="semantic", group_by="chunk")
    project.close()
    assert len(hits) == 10 and all(hit.path == "gen/mod_002.py" for hit in hits)


def test_index_of_format_3_drops_its_hnsw_index_without_embedding(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    project = open_project(indexed)  # what SAI 3 left: an HNSW index in the file (made by the vss extension)
    with project.store.write() as writer:
        writer.set_meta({"schema_version": "3"})
    db = project.config.db_path
    project.close()
    con = connect_with("vss", str(db))
    con.execute("SET hnsw_enable_experimental_persistence = true")
    con.execute("CREATE INDEX source_code_hnsw ON source_code USING HNSW (embedding) WITH (metric = 'cosine')")
    con.close()
    report = _index(indexed)
    assert (report.embedded, ollama_server.requests) == (0, 0)
    assert snapshot(indexed) == original
    project = open_project(indexed)
    with project.store.read() as reader:
        sql = "SELECT count(*) FROM duckdb_indexes() WHERE database_name = 'sai'"
        indexes = reader.conn.con.execute(sql).fetchone()
        assert indexes == (0,) and reader.meta()["schema_version"] == str(SCHEMA_VERSION)
    assert search.search(project, "total price")
    project.close()


def test_index_of_format_4_gains_chunk_kinds_without_embedding(
    indexed: Path, original: Snapshot, ollama_server: OllamaStandIn
) -> None:
    project = open_project(indexed)
    with project.store.write() as writer:  # what SAI 4 left: no kind column, chunker version 2
        writer.conn.con.execute("ALTER TABLE source_code DROP COLUMN kind")
        chunking = writer.meta()["chunking"].replace(f"ast/{CHUNKER_VERSION}/", "ast/2/", 1)
        writer.set_meta({"schema_version": "4", "chunking": chunking})
    with pytest.raises(IndexMismatchError, match="older SAI"):
        lookup.find_symbol(project, "add")
    project.close()
    report = _index(indexed)
    assert (report.chunks, report.embedded, report.unchanged) == (TREE_CHUNKS, 0, TREE_CHUNKS)
    assert ollama_server.requests == 0 and snapshot(indexed) == original
    project = open_project(indexed)
    with project.store.read() as reader:
        assert reader.meta()["schema_version"] == str(SCHEMA_VERSION)
    (found,) = lookup.find_symbol(project, "add")
    assert (found.symbol, found.kind, found.path) == ("Cart.add", "method", "billing.py")
    assert [d.kind for d in lookup.find_symbol(project, "Normalize")] == ["function"]
    project.close()


def test_changed_chunking_settings_rechunk_every_file_reusing_unchanged_text(
    indexed: Path, ollama_server: OllamaStandIn
) -> None:
    before = snapshot(indexed)
    write_config(indexed, ollama_server.url, chunker="lines")
    report = _index(indexed)
    after = snapshot(indexed)
    assert {text for (_, _, _, text) in after} != {text for (_, _, _, text) in before}
    assert report.embedded == ollama_server.inputs_embedded  # only new texts were embedded
    assert report.unchanged + report.embedded == report.chunks == len(after)
    project = open_project(indexed)
    with project.store.read() as reader:
        assert reader.meta()["chunker"] == "lines"
    project.close()
    ollama_server.reset_counts()
    assert _index(indexed).embedded == 0 == ollama_server.inputs_embedded  # settled again


def test_strip_comments_and_the_noindex_marker_shape_what_is_stored(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    files = {
        "web/api.js": ('// the client\nfunction endpoint(path) {\n'
                       '  /* absolute */ return "https://x.org/" + path;\n}\n'),
        "tools/secret.py": "def secret():  # sai-noindexing\n    return 42\n\n\ndef public():\n    return 1\n",
    }
    root = write_tree(tmp_path / "p", files)
    write_config(root, ollama_server.url, strip_comments=True)
    _index(root)
    project = open_project(root)
    with project.store.read() as reader:
        rows = reader.chunks([r.id for r in reader.all_chunks()[0]])
    project.close()
    js = [r for r in rows if r.path == "web/api.js"]
    assert [(r.start_line, r.end_line, r.symbol) for r in js] == [(2, 4, "endpoint")]  # lines kept
    assert "absolute" not in js[0].text and "the client" not in js[0].text
    assert '"https://x.org/"' in js[0].text  # a `//` inside a string is not a comment
    assert [r.symbol for r in rows if r.path == "tools/secret.py"] == ["public"]
    assert not any("sai-noindexing" in r.text for r in rows)


def test_a_run_through_worker_processes_stores_what_an_in_process_run_stores(
    root: Path, original: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "POOL_MIN_FILES", 1)
    report = _index(root)
    assert report.chunks == TREE_CHUNKS
    assert snapshot(root) == original


# A CLI index run whose files are prepared by worker processes (every run uses the pool); it
# writes each file's batch before reading the next, so it waits for the first batch's vectors
# with the pool still open.
POOLED_CLI_RUN = """
import sys
import sai.indexing.run
import sai.store.duckdb
from sai.cli import commands as cli
sai.store.duckdb.DuckDBStore.pending_vectors = sys.argv[1] == "two-phase"
sai.indexing.run.POOL_MIN_FILES = 1
sai.indexing.run.FLUSH_CHUNKS = 1
sai.indexing.run.IN_FLIGHT = sai.indexing.run.IN_FLIGHT_LARGE = 0
sys.exit(cli.main(["--silent"]))
"""


def _children(pid: int) -> set[int]:
    """Processes whose parent is `pid` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _pooled_run_in_embedding(root: Path, server: OllamaStandIn) -> tuple[subprocess.Popen[str], set[int]]:
    """A pooled CLI run embedding as it reads (one phase), stalled in its first embed request;
    and its worker processes."""
    server.stall_next(1, seconds=5)
    proc = subprocess.Popen([sys.executable, "-c", POOLED_CLI_RUN, "one-phase"], cwd=root, start_new_session=True,
                            preexec_fn=default_sigint, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while server.requests < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    workers = {pid for pid in _alive(_children(proc.pid))
               if b"spawn_main" in (Path("/proc") / str(pid) / "cmdline").read_bytes()}
    assert workers, "the run has no worker process running"
    return proc, workers


def _gone_within(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _alive(pids)


@pytest.mark.slow
def test_ctrl_c_of_a_pooled_run_exits_130_with_one_line_and_stops_its_workers(
    root: Path, ollama_server: OllamaStandIn
) -> None:
    proc, workers = _pooled_run_in_embedding(root, ollama_server)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.startswith("error: interrupted;") and err.count("\n") == 1, err
    assert not _gone_within(workers, 10)


@pytest.mark.slow
def test_ctrl_c_while_embedding_stored_chunks_exits_130_and_the_next_run_finishes(
    root: Path, ollama_server: OllamaStandIn
) -> None:
    """The first request may come while the first stage still stores (a served model's Follower):
    Ctrl-C there stops both stages with one line, and the next run finishes the index."""
    ollama_server.stall_next(1, seconds=5)
    proc = subprocess.Popen([sys.executable, "-c", POOLED_CLI_RUN, "two-phase"], cwd=root, start_new_session=True,
                            preexec_fn=default_sigint, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while ollama_server.requests < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.startswith("error: interrupted;") and err.count("\n") == 1, err
    project = open_project(root)
    try:
        status = index_status(project)  # no vector written: the follower keeps its own until every chunk is stored
        assert 0 < status.chunk_count <= TREE_CHUNKS and status.pending_vectors == status.chunk_count
        ollama_server.reset_counts()
        assert indexer.index(project).embedded == ollama_server.inputs_embedded > 0
        assert index_status(project).pending_vectors == 0 and index_status(project).chunk_count == TREE_CHUNKS
        assert search.search(project, "parseDate", mode="lexical")[0].path == "web/dates.js"
    finally:
        project.close()


@pytest.mark.slow
def test_a_killed_pooled_run_leaves_no_worker_behind(root: Path, ollama_server: OllamaStandIn) -> None:
    proc, workers = _pooled_run_in_embedding(root, ollama_server)
    proc.kill()  # SIGKILL to the parent alone: its workers must notice and leave
    proc.communicate(timeout=30)
    try:
        assert not _gone_within(workers, 10)
    finally:
        for pid in _alive(workers):
            os.kill(pid, signal.SIGKILL)


class _SignallingEmbedder:
    """The real Ollama embedder, setting `second_call` when its second call starts."""

    def __init__(self, inner: OllamaEmbedder) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.with_chunks, self.served = inner.with_chunks, inner.served
        self.calls = 0
        self.second_call = threading.Event()

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == 2:
            self.second_call.set()
        return self.inner.embed_documents(texts)

    def runs_elsewhere(self) -> bool:
        return self.inner.runs_elsewhere()

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def test_the_next_batch_is_embedded_while_the_previous_one_is_written(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "project", many_functions(40, per_file=10))
    write_config(root, ollama_server.url)
    monkeypatch.setattr(run_module, "FLUSH_CHUNKS", 10)  # one file a batch
    embedder = _SignallingEmbedder(OllamaEmbedder(model=STANDIN_MODEL, url=ollama_server.url, timeout_s=5,
                                                  batch_size=32, prefix_style="nomic"))
    overlapped: list[bool] = []
    insert = DuckDBWriter.replace_files

    def first_insert_waits_for_the_second_embedding(self: DuckDBWriter, *args: object) -> None:
        if not overlapped:  # a serial indexer would embed batch 2 only after this returns
            overlapped.append(embedder.second_call.wait(timeout=5))
        insert(self, *args)

    monkeypatch.setattr(DuckDBWriter, "replace_files", first_insert_waits_for_the_second_embedding)
    monkeypatch.setattr(DuckDBStore, "pending_vectors", False)  # the pipeline that embeds as it reads
    project = Project(load(root), embedder=embedder)
    try:
        report = indexer.index(project)
    finally:
        project.close()
    assert overlapped == [True]
    assert (report.chunks, embedder.calls) == (40, 4)


def _sai(root: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "sai"], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_second_sai_during_an_index_run_waits_before_reading_or_embedding_anything(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "project", many_functions(300, per_file=20))
    write_config(root, ollama_server.url, ollama={"url": ollama_server.url, "batch_size": 16, "parallel": 1})
    ollama_server.stall_next(1000, seconds=0.15)  # ~3 s of embedding
    first = _sai(root)
    deadline = time.monotonic() + 60
    while ollama_server.requests < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    second = _sai(root)
    _, first_err = first.communicate(timeout=120)
    _, second_err = second.communicate(timeout=120)
    assert (first.returncode, second.returncode) == (0, 0), (first_err, second_err)
    assert "waiting for it to finish" in second_err
    assert ollama_server.inputs_embedded == 300  # every text once: the second run found it all done
    second_lines = [line for line in second_err.splitlines() if "chunks embedded" in line]
    assert not second_lines, second_err


def test_two_index_runs_started_at_once_embed_everything_once(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "project", many_functions(200, per_file=20))
    write_config(root, ollama_server.url)
    runs = [_sai(root), _sai(root)]
    errors = [run.communicate(timeout=120)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    assert ollama_server.inputs_embedded == 200
    assert sum("waiting for it to finish" in err for err in errors) == 1, errors
    project = open_project(root)
    try:
        status = index_status(project)
        assert (status.chunk_count, status.pending_vectors) == (200, 0)
    finally:
        project.close()
