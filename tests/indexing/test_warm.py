"""An index run that wrote ends by building the copies searching processes map (Store.warm:
the row table, the BM25 CSR and the symbol table beside the vector sidecar), so the first
search or look-up of another process maps them instead of reading the index whole; a run that
wrote nothing builds nothing; a refresh ends with the vector sidecar at its write, so the next
search patches nothing of it, and with the other copies at its write only where a reader would
pay for them (a collection of WARM_MIN_CHUNKS chunks and more)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn
from vector_stores import forbid_whole_reads

from sai import search
from sai.config import load_config
from sai.indexing import backfill
from sai.indexing.indexer import index, refresh
from sai.project import Project
from sai.query.lookup import find_symbol
from sai.store.duckdb import copies
from sai.store.duckdb.sidecar import Manifest, Sidecar


def _project(root: Path) -> Project:
    return Project(load_config(flags={}, env={}, cwd=root))


def _shared(root: Path) -> dict[str, str]:
    """The shared copies beside the index: each one's file, by name (a file is never rewritten:
    a copy written again is a new file)."""
    return {p.name.split(".")[0]: p.name for p in (root / ".index").glob("*.vectors/*/copies/*.arrow")}


def _index(root: Path) -> None:
    project = _project(root)
    try:
        index(project)
    finally:
        project.close()


def _indexed_tree(tmp_path: Path, ollama_server: OllamaStandIn) -> Path:
    """60 functions in three files, indexed."""
    root = write_tree(tmp_path / "project", many_functions(60, per_file=20))
    write_config(root, ollama_server.url)
    _index(root)
    return root


def test_the_first_question_after_an_index_run_maps_the_copies_the_run_built(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _indexed_tree(tmp_path, ollama_server)
    assert sorted(_shared(root)) == ["lexicon", "rows", "shapes", "symbols"]

    forbid_whole_reads(monkeypatch)  # a whole read of the rows, postings, symbols or shapes now fails
    project = _project(root)
    try:
        hits = search(project, "gen_7 value", limit=5, mode="hybrid")
        assert hits and hits[0].path == "gen/mod_000.py"
        assert [d.symbol for d in find_symbol(project, "gen_42")] == ["gen_42"]
        with project.store.read() as reader:  # what `sai impact` finds copies by
            assert len(reader.shapes()) == reader.chunk_count()
    finally:
        project.close()


def test_a_first_build_writes_the_copies_of_its_rows_before_the_vectors_which_leave_them_as_they_are(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once every chunk is stored, a run whose model works off this machine's cores writes the
    copies of the rows, BM25 terms, symbols and shapes while the model embeds; the vectors'
    writes after it leave them as they are."""
    monkeypatch.setattr(backfill, "EMBED_GROUP", 4)
    monkeypatch.setattr(backfill, "WRITE_CHUNKS", 4)  # the 60 vectors in 15 writes, one a call
    ollama_server.stall_next(100, seconds=0.1)  # the calls (1.5 s) outlast the first stage
    root = _indexed_tree(tmp_path, ollama_server)
    forbid_whole_reads(monkeypatch)
    project = _project(root)
    try:
        with project.store.read() as reader:
            final = reader.copies.source.token  # type: ignore[attr-defined]
            held = {kind.name: reader.copies.get(kind) for kind in copies.KINDS}  # type: ignore[attr-defined]
        manifest = Manifest.read(Sidecar.beside(project.store.path, project.config.collection).manifest_path)
    finally:
        project.close()
    assert {name: copy.token for name, copy in held.items()} == dict.fromkeys(held, final)
    assert manifest is not None and sorted(manifest.copies) == sorted(held)
    assert {token for _, token in manifest.copies.values()} - {final}  # written before the vectors


def test_a_run_that_writes_nothing_builds_nothing_and_one_that_writes_a_file_patches(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = _indexed_tree(tmp_path, ollama_server)
    built = _shared(root)
    _index(root)  # nothing changed
    assert _shared(root) == built
    (root / "gen" / "mod_001.py").write_text("def gen_new(value):\n    return value\n", encoding="utf-8")
    _index(root)
    project = _project(root)
    try:
        assert [d.symbol for d in find_symbol(project, "gen_new")] == ["gen_new"]
        assert find_symbol(project, "gen_25") == []  # the file's old functions are gone
    finally:
        project.close()


def test_a_refresh_ends_with_the_sidecar_at_its_write_so_the_next_search_patches_nothing(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _indexed_tree(tmp_path, ollama_server)
    (root / "gen" / "mod_001.py").write_text("def gen_new(value):\n    return value * 7\n", encoding="utf-8")
    project = _project(root)
    try:
        search(project, "gen_7 value", limit=5, mode="hybrid")  # this process's copies, before the write
        refresh(project, ["gen/mod_001.py"])
        with project.store.read() as reader:
            token = reader.meta()["token"]
        sidecar = Sidecar.beside(project.config.db_path, project.config.collection)
        held = Manifest.read(sidecar.manifest_path)
        assert held is not None and held.token == token

        def no_patch(*_args: object, **_kwargs: object) -> object:
            raise AssertionError("the search patched the sidecar")

        monkeypatch.setattr(Sidecar, "_patch", no_patch)
        hits = search(project, "gen_new", limit=3, mode="hybrid")
        assert hits[0].symbol == "gen_new"
    finally:
        project.close()


def test_a_refresh_rewrites_the_copies_only_of_a_collection_large_enough_to_pay_for_them(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _indexed_tree(tmp_path, ollama_server)
    built = _shared(root)
    target = root / "gen" / "mod_001.py"
    project = _project(root)
    try:
        target.write_text("def gen_new(value):\n    return value * 7\n", encoding="utf-8")
        refresh(project, ["gen/mod_001.py"])
        assert _shared(root) == built  # 41 chunks: a reader reads them whole for less than the writes
        monkeypatch.setattr(copies, "WARM_MIN_CHUNKS", 40)
        target.write_text("def gen_newer(value):\n    return value * 8\n", encoding="utf-8")
        refresh(project, ["gen/mod_001.py"])
        rewritten = _shared(root)
        # 21 of 60 chunks changed: past the patch share, so the rows and postings are read whole
        # and written (the symbols, one row of the file now, are patched in memory, as before)
        assert sorted(rewritten) == sorted(built)
        assert all(rewritten[n] != built[n] for n in ("rows", "lexicon"))
    finally:
        project.close()
    forbid_whole_reads(monkeypatch)  # another process maps the rewritten copies as they are
    reader = _project(root)
    try:
        assert [d.symbol for d in find_symbol(reader, "gen_newer")] == ["gen_newer"]
        assert search(reader, "newer", limit=1, mode="lexical")[0].symbol == "gen_newer"
    finally:
        reader.close()
