"""refresh and sync: re-index given or git-changed files in place, report per path, keep HNSW."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fixtures_tree import OPEN, index_template, indexed_copy, load, run_cli

import sai.store.duckdb.tables as tables
from sai.errors import OutsideRootError
from sai.indexing import indexer
from sai.models import PathResult
from sai.project import Project
from sai.store.duckdb.reader import DuckDBReader

PRICE = '''def total_price(items):
    return sum(item.price for item in items)
'''
TAX = '''def apply_tax(amount, rate):
    return amount * (1 + rate)
'''
TREE = {
    "src/a.py": PRICE + "\n\n" + TAX,
    "src/b.py": '''def parse_date(text):
    year, month, day = text.split("-")
    return int(year), int(month), int(day)
''',
    "src/c.py": '''def slugify(title):
    return "-".join(title.lower().split())
''',
}
EDITED_TAX = '''def apply_tax(amount, rate):
    return round(amount * (1 + rate), 2)
'''
NEW_FILE = '''def greet(name):
    return f"hello {name}"
'''
PASSAGE = "search_document: "  # the nomic passage prefix the stand-in model gets


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return index_template(tmp_path_factory, TREE)


@pytest.fixture
def project(template, tmp_path, ollama_server, monkeypatch):
    """TREE indexed with the stand-in; cwd is the root; the server's counts start at zero."""
    monkeypatch.chdir(tmp_path)
    project = Project(load(indexed_copy(template, tmp_path, ollama_server.url)))
    assert ollama_server.inputs_embedded == 0
    OPEN.append(project)
    yield project
    OPEN.remove(project)
    project.close()


def rows_by_location(project: Project) -> dict[tuple[str, int, int], tuple[int, str, np.ndarray]]:
    with project.store.read() as reader:
        rows, matrix, _ = reader.all_chunks()
        rows = reader.chunks([r.id for r in rows])
    return {(r.path, r.start_line, r.end_line): (r.id, r.text, matrix[n]) for n, r in enumerate(rows)}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=root, check=True, capture_output=True)


# --- refresh --------------------------------------------------------------------------------


def test_refresh_of_an_edited_file_embeds_only_its_changed_chunk(project, ollama_server, tmp_path):
    before = rows_by_location(project)
    (tmp_path / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)
    report = indexer.refresh(project, ["src/a.py"])
    assert report.refreshed == (PathResult("src/a.py", chunks=2),) and report.removed == ()
    assert ollama_server.received_inputs == [PASSAGE + EDITED_TAX.rstrip("\n")]
    after = rows_by_location(project)
    assert set(after) == set(before)
    for location, (row_id, text, vector) in before.items():
        new_id, new_text, new_vector = after[location]
        if location[0] != "src/a.py":  # other files' rows: same id, same text, same vector
            assert (new_id, new_text) == (row_id, text)
            assert np.array_equal(new_vector, vector)
    assert np.array_equal(after[("src/a.py", 1, 2)][2], before[("src/a.py", 1, 2)][2])
    assert not np.allclose(after[("src/a.py", 5, 6)][2], before[("src/a.py", 5, 6)][2])


def test_refresh_of_an_unchanged_file_embeds_nothing(project, ollama_server):
    report = indexer.refresh(project, ["src/b.py"])
    assert report.refreshed == (PathResult("src/b.py", chunks=1),)
    assert ollama_server.inputs_embedded == 0


def test_refresh_of_a_moved_function_takes_its_stored_vector_without_reading_every_hash(
        project, ollama_server, tmp_path, monkeypatch):
    def every_hash(self):
        raise AssertionError("a refresh of a few files read every stored hash")

    monkeypatch.setattr(DuckDBReader, "content_hashes", every_hash)
    before = rows_by_location(project)
    (tmp_path / "src/c.py").unlink()
    (tmp_path / "src/d.py").write_text(TREE["src/c.py"] + "\n\n" + NEW_FILE)  # slugify moved, greet new
    report = indexer.refresh(project, ["src/c.py", "src/d.py"])
    assert report.refreshed == (PathResult("src/d.py", chunks=2),)
    assert ollama_server.received_inputs == [PASSAGE + NEW_FILE.rstrip("\n")]
    after = rows_by_location(project)
    assert np.array_equal(after[("src/d.py", 1, 2)][2], before[("src/c.py", 1, 2)][2])


def test_refresh_cli_prints_one_line_per_path_and_a_summary(project, tmp_path, capsys):
    (tmp_path / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)
    (tmp_path / "src/c.py").unlink()
    code, out, err = run_cli(capsys, "refresh", "src/a.py", "src/c.py")
    assert code == 0, err
    assert out == (
        "  + src/a.py (2 chunks)\n"
        "  - src/c.py (missing)\n"
        "sync: 1 file(s) re-indexed (2 chunks), 1 file(s) removed\n"
    )


def test_the_core_takes_keys_whatever_the_process_cwd(project, tmp_path, monkeypatch):
    from sai.query import lookup
    from sai.query.similar import find_similar

    elsewhere = tmp_path.parent / "elsewhere"
    (elsewhere / "src").mkdir(parents=True)
    (elsewhere / "src/a.py").write_text(NEW_FILE)  # the same key resolved against the cwd: a decoy
    monkeypatch.chdir(elsewhere)
    (tmp_path / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)
    report = indexer.refresh(project, ["src/a.py"])
    assert report.refreshed == (PathResult("src/a.py", chunks=2),)
    assert lookup.read_chunk(project, path="src/a.py", start_line=5).chunk.text == EDITED_TAX.rstrip("\n")
    hits = find_similar(project, path="src/a.py", line=5, min_score=-1.0)
    assert hits and ("src/a.py", 5) not in [(h.path, h.start_line) for h in hits]


def test_refresh_of_a_deleted_file_removes_its_rows(project, tmp_path, capsys):
    (tmp_path / "src/c.py").unlink()
    report = indexer.refresh(project, ["src/c.py"])
    assert report.refreshed == ()
    assert report.removed == (PathResult("src/c.py", removed_reason="missing"),)
    assert not [key for key in rows_by_location(project) if key[0] == "src/c.py"]
    with project.store.read() as reader:
        assert "src/c.py" not in reader.files()


def test_refresh_of_a_now_excluded_file_removes_it_with_the_reason(project, tmp_path, capsys):
    (tmp_path / "src/b.py").write_text("# Code generated by protoc. DO NOT EDIT.\n" + NEW_FILE)
    code, out, _ = run_cli(capsys, "refresh", "--json", "src/b.py")
    assert code == 0
    assert json.loads(out) == {"refreshed": [], "removed": ["src/b.py"]}
    assert indexer.refresh(project, ["src/b.py"]).removed == (
        PathResult("src/b.py", removed_reason="generated-marker"),
    )
    assert not [key for key in rows_by_location(project) if key[0] == "src/b.py"]


def test_refresh_json_has_the_contract_shape(project, tmp_path, capsys):
    (tmp_path / "src/new.py").write_text(NEW_FILE)
    code, out, _ = run_cli(capsys, "refresh", "--json", "src/new.py", "src/b.py")
    assert code == 0
    assert json.loads(out) == {
        "refreshed": [{"path": "src/new.py", "chunks": 1}, {"path": "src/b.py", "chunks": 1}],
        "removed": [],
    }


@pytest.mark.parametrize("outside", ["../outside.py", "ABSOLUTE"])
def test_refresh_refuses_paths_outside_the_root(project, tmp_path, outside, ollama_server, capsys):
    (tmp_path.parent / "outside.py").write_text(NEW_FILE)
    given = str(tmp_path.parent / "outside.py") if outside == "ABSOLUTE" else outside
    before = rows_by_location(project)
    with pytest.raises(OutsideRootError, match="outside the project root"):
        indexer.refresh(project, ["src/a.py", given])
    code, out, err = run_cli(capsys, "refresh", given)
    assert code == 1 and out == ""
    assert re.fullmatch(r"error: path \S+ is outside the project root \S+; [^\n]+\n", err)
    assert err.startswith(f"error: path {given} is outside the project root ")
    assert ollama_server.inputs_embedded == 0
    assert rows_by_location(project).keys() == before.keys()


def test_refresh_outside_the_root_as_a_subprocess(project, tmp_path):
    done = subprocess.run([sys.executable, "-m", "sai", "refresh", "../outside.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: path ../outside.py is outside the project root")
    assert done.stderr.count("\n") == 1


def test_refresh_rebuilds_no_vector_index_and_leaves_bm25_current(project, tmp_path, monkeypatch):
    statements: list[str] = []
    real_connect = tables.duckdb.connect

    class Recording:
        def __init__(self, con):
            self._con = con

        def execute(self, sql, *args):
            statements.append(sql)
            return self._con.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._con, name)

    monkeypatch.setattr(tables.duckdb, "connect", lambda *a, **k: Recording(real_connect(*a, **k)))
    (tmp_path / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)
    (tmp_path / "src/c.py").unlink()
    indexer.refresh(project, ["src/a.py", "src/c.py"])
    assert any(s.startswith("INSERT INTO") for s in statements)  # the recorder did see writes
    assert [s for s in statements if re.search(r"CREATE INDEX|DROP INDEX|hnsw_compact", s)] == []
    # searches follow the refreshed rows: the edited chunk is its own nearest neighbour
    from sai.query import search
    from sai.query.similar import find_similar

    hits = find_similar(project, code=EDITED_TAX.rstrip("\n"), min_score=0.99)
    assert [(h.path, h.start_line) for h in hits] == [("src/a.py", 5)]
    assert search.search(project, "taxed", mode="lexical")[0].path == "src/a.py"


# --- sync -----------------------------------------------------------------------------------


@pytest.fixture
def repo(project, tmp_path):
    """The project's root as a git repository whose one commit holds TREE and the config."""
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "src", "sai-cfg.yml")
    git(tmp_path, "commit", "-qm", "first")
    return tmp_path


def test_sync_picks_exactly_the_changed_files(project, repo, ollama_server, capsys):
    (repo / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)  # edited
    (repo / "src/new.py").write_text(NEW_FILE)  # untracked
    (repo / "src/c.py").unlink()  # deleted
    code, out, err = run_cli(capsys, "sync", "--since", "HEAD")
    assert code == 0, err
    assert out == (
        "  + src/a.py (2 chunks)\n"
        "  + src/new.py (1 chunks)\n"
        "  - src/c.py (missing)\n"
        "sync: 2 file(s) re-indexed (3 chunks), 1 file(s) removed\n"
    )
    assert sorted(ollama_server.received_inputs) == sorted(
        [PASSAGE + EDITED_TAX.rstrip("\n"), PASSAGE + NEW_FILE.rstrip("\n")]
    )
    assert {key[0] for key in rows_by_location(project)} == {"src/a.py", "src/b.py", "src/new.py"}


def test_sync_defaults_to_changes_since_the_previous_commit(project, repo, capsys):
    (repo / "src/b.py").write_text(TREE["src/b.py"] + "\n\n" + NEW_FILE)
    git(repo, "commit", "-qam", "second")
    _, out, _ = run_cli(capsys, "sync")
    assert out == "  + src/b.py (2 chunks)\nsync: 1 file(s) re-indexed (2 chunks), 0 file(s) removed\n"


def test_sync_staged_picks_only_staged_files(project, repo, capsys):
    (repo / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)
    (repo / "src/b.py").write_text(TREE["src/b.py"] + "\n\n" + NEW_FILE)
    git(repo, "add", "src/b.py")
    code, out, _ = run_cli(capsys, "sync", "--json", "--staged")
    assert code == 0
    assert json.loads(out) == {"refreshed": [{"path": "src/b.py", "chunks": 2}], "removed": []}


def test_sync_with_nothing_changed_says_so(project, repo, ollama_server, capsys):
    code, out, _ = run_cli(capsys, "sync", "--since", "HEAD")
    assert code == 0 and out == "sync: no changed files\n"
    _, out, _ = run_cli(capsys, "sync", "--json", "--since", "HEAD")
    assert json.loads(out) == {"refreshed": [], "removed": [], "note": "no changed files"}
    assert ollama_server.inputs_embedded == 0


def test_sync_with_files_is_refresh(project, tmp_path, capsys):
    (tmp_path / "src/a.py").write_text(PRICE + "\n\n" + EDITED_TAX)
    code, out, _ = run_cli(capsys, "sync", "--file", "src/a.py")
    assert code == 0
    assert out == "  + src/a.py (2 chunks)\nsync: 1 file(s) re-indexed (2 chunks), 0 file(s) removed\n"


def test_sync_with_a_bad_revision_is_one_error_line(project, repo, capsys):
    code, out, err = run_cli(capsys, "sync", "--since", "no-such-rev")
    assert code == 2 and out == ""  # a usage error: the revision is the caller's
    assert err.startswith("error: git does not know the revision") and err.count("\n") == 1
    assert "no-such-rev" in err
