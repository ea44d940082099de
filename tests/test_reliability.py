"""Faults a careful user meets: renamed and moved code, kills in an upgrade, a growing file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from child_signals import default_sigint
from fixtures_tree import many_functions, open_project, snapshot, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.indexing import indexer
from sai.indexing import run as run_module
from sai.models import SCHEMA_VERSION
from sai.query import search
from sai.text.lexical import lexemes

ALPHA = "def alpha(x):\n    return x + 1\n"
BETA = "def beta(items):\n    return sorted(items, key=len)\n"
GAMMA = "def gamma(text):\n    return text.strip().lower()\n"


def _index(root: Path) -> indexer.IndexReport:
    project = open_project(root)
    try:
        return indexer.index(project)
    finally:
        project.close()


def _chunks(root: Path) -> dict[str, set[str]]:
    """Each stored file's chunk texts (from test_indexer's snapshot of the index)."""
    found: dict[str, set[str]] = {}
    for path, _, _, text in snapshot(root):
        found.setdefault(path, set()).add(text)
    return found


def test_a_renamed_file_is_indexed_where_it_now_lives_without_embedding(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "p", {"src/a.py": ALPHA})
    write_config(root, ollama_server.url)
    _index(root)
    (root / "src/a.py").rename(root / "src/b.py")
    ollama_server.reset_counts()
    report = _index(root)
    assert (report.chunks, report.embedded, ollama_server.requests) == (1, 0, 0)
    assert _chunks(root) == {"src/b.py": {ALPHA.rstrip("\n")}}
    project = open_project(root)
    assert [h.path for h in search.search(project, "alpha", limit=3)] == ["src/b.py"]
    project.close()


def test_renames_moves_copies_and_deletes_in_one_run_reuse_every_vector(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "p", {"a.py": ALPHA + "\n\n" + BETA, "b.py": GAMMA, "c.py": BETA + "\n"})
    write_config(root, ollama_server.url)
    _index(root)
    # beta moves from a.py into b.py, a.py is renamed, c.py is deleted, gamma is copied
    (root / "a.py").unlink()
    write_tree(root, {"renamed.py": ALPHA, "b.py": GAMMA + "\n\n" + BETA, "copy.py": GAMMA})
    (root / "c.py").unlink()
    ollama_server.reset_counts()
    report = _index(root)
    assert ollama_server.inputs_embedded == report.embedded
    assert report.embedded == 0  # every text was stored before, under some path
    chunks = _chunks(root)
    assert set(chunks) == {"renamed.py", "b.py", "copy.py"}
    assert chunks["b.py"] == {GAMMA.rstrip("\n"), BETA.rstrip("\n")}
    project = open_project(root)
    hits = search.search(project, "beta sorted items", limit=1)
    project.close()
    assert hits[0].path == "b.py"


def test_a_function_moved_between_files_written_in_different_batches_keeps_a_vector(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_tree(tmp_path / "p", {"a.py": ALPHA + "\n\n" + BETA, "z.py": GAMMA})
    write_config(root, ollama_server.url)
    _index(root)
    write_tree(root, {"a.py": ALPHA, "z.py": GAMMA + "\n\n" + BETA})
    monkeypatch.setattr(run_module, "FLUSH_CHUNKS", 1)  # a.py is written before z.py is read
    report = _index(root)
    assert report.chunks == 3
    assert _chunks(root)["z.py"] == {GAMMA.rstrip("\n"), BETA.rstrip("\n")}


# Runs an index in a child process that stops inside its upgrade of an older SAI's index (the
# postings built where it left an FTS index) and says so.
PAUSE_IN_UPGRADE = """
import sys, time
from sai.store.duckdb import schema
real = schema.upgrade
def slow(conn):
    real(conn)
    print("upgrading", flush=True)
    time.sleep(30)
schema.upgrade = slow
from sai.cli import commands as cli
sys.exit(cli.main(["--root", sys.argv[1], "--config", sys.argv[1] + "/sai-cfg.yml"]))
"""


def _run_until_upgrading(root: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", PAUSE_IN_UPGRADE, str(root)], preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "upgrading", proc.stderr
    return proc


@pytest.mark.parametrize("how", ["kill", "ctrl-c"])
@pytest.mark.slow
def test_a_run_stopped_in_its_upgrade_leaves_the_old_format_and_the_next_run_upgrades_it(
    tmp_path: Path, ollama_server: OllamaStandIn, how: str
) -> None:
    root = write_tree(tmp_path / "p", many_functions(20, per_file=10))
    write_config(root, ollama_server.url)
    _index(root)
    _as_format_5_without_postings(root)
    write_tree(root, {"gen/new.py": "def freshly_written_helper(value):\n    return value\n"})
    proc = _run_until_upgrading(root)
    proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if how == "ctrl-c":
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert err.splitlines()[-1].startswith("error: interrupted")  # above it: progress lines
    project = open_project(root)
    with project.store.read() as reader:
        assert reader.meta()["schema_version"] == "5"  # the upgrade is one transaction: none of it stayed
    project.close()
    ollama_server.reset_counts()
    report = _index(root)
    assert report.embedded == ollama_server.inputs_embedded == 1 and report.chunks == 21
    project = open_project(root)
    hits = search.search(project, "freshly_written_helper", mode="lexical")
    old = search.search(project, "gen_3 value", mode="lexical")
    with project.store.read() as reader:
        assert reader.meta()["schema_version"] == str(SCHEMA_VERSION)
    project.close()
    assert hits and hits[0].path == "gen/new.py"
    assert old and old[0].path == "gen/mod_000.py"  # the chunks stored before have their postings


def _as_format_5_without_postings(root: Path) -> None:
    """Make the index look written by an SAI of format 5 before postings (it held a DuckDB FTS index)."""
    project = open_project(root)
    db = project.config.db_path
    project.close()
    con = duckdb.connect(str(db))
    rows = con.execute("SELECT id, text, path, symbol FROM source_code").fetchall()  # it kept each chunk's lexemes
    con.executemany("UPDATE source_code SET lexemes = ? WHERE id = ?",
                    [[lexemes(text, path=path, symbol=symbol), i] for i, text, path, symbol in rows])
    con.execute("DROP TABLE source_code__postings")
    con.execute("DROP TABLE source_code__refs")
    con.execute("UPDATE sai_meta SET value = '5' WHERE collection = 'source_code' AND key = 'schema_version'")
    con.close()


@pytest.mark.slow
def test_many_small_writes_keep_the_index_file_near_its_fresh_size(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "p", many_functions(600, per_file=20))
    write_config(root, ollama_server.url)
    project = open_project(root)
    indexer.index(project)
    db = project.config.db_path

    def size() -> int:
        return sum(p.stat().st_size for p in db.parent.iterdir() if p.name.startswith(db.name))

    fresh = size()
    target = root / "gen" / "mod_000.py"
    sizes = []
    for n in range(12):
        target.write_text(target.read_text() + f"\n\ndef extra_{n}(x):\n    return x - {n}\n")
        if n % 4 == 3:
            indexer.index(project)
        else:
            indexer.refresh(project, [target.relative_to(root).as_posix()])
        project.close()
        sizes.append(size())
    # A rewrite of a table's row groups takes new 256 KB blocks before the old ones are free (a
    # 1.8 MB file became ~3.7 MB); a run's end copies such a file into a compact one.
    assert max(sizes) <= 1.5 * fresh, (sizes, fresh)


# 5 refreshes in the fast tier: no refresh of 150 measured changed the file's size (0.7 s each on
# a loaded machine); the slow tier's 400 watch for a growth that only a long series shows
@pytest.mark.parametrize("refreshes", [5, pytest.param(400, marks=pytest.mark.slow)])
def test_refreshes_keep_the_index_within_one_and_a_half_times_its_fresh_size(
    tmp_path: Path, ollama_server: OllamaStandIn, refreshes: int
) -> None:
    root = write_tree(tmp_path / "p", many_functions(6, per_file=3))
    write_config(root, ollama_server.url)
    project = open_project(root)
    indexer.index(project)
    db = project.config.db_path
    fresh = db.stat().st_size
    target = root / "gen" / "mod_000.py"
    original = target.read_text()
    sizes = []
    try:
        for n in range(refreshes):
            target.write_text(original + f"\n\ndef extra_{n % 5}(x):\n    return x - {n}\n")
            indexer.refresh(project, ["gen/mod_000.py"])
            sizes.append(db.stat().st_size)
            assert not Path(f"{db}.wal").exists() and not Path(f"{db}.compact").exists()
        hits = search.search(project, "extra_4", mode="lexical", limit=1)
    finally:
        project.close()
    assert max(sizes) <= 1.5 * fresh, (max(sizes), fresh)
    assert hits and hits[0].path == "gen/mod_000.py"


def test_a_reader_does_not_wait_for_a_dead_writer(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "p", many_functions(10, per_file=10))
    write_config(root, ollama_server.url)
    _index(root)
    project = open_project(root)
    holder = subprocess.Popen(["sleep", "30"])  # a live process whose pid a writer file names
    try:
        db = project.config.db_path
        db.with_name(db.name + ".writer").write_text(str(holder.pid))
        started = time.monotonic()
        assert search.search(project, "gen_3 value", mode="lexical")
        assert time.monotonic() - started < 3
    finally:
        holder.kill()
        project.close()


# Searches the index of argv[1] until the file argv[2] exists; prints "ready" after the first
# answer, then a JSON summary: calls, errors (their first lines), answers without hits, and
# whether a function only the rebuilt index holds was ever found.
HAMMER = """
import json, sys
from pathlib import Path
from sai.config import load_config
from sai.errors import SaiError
from sai.project import Project
from sai.query import search
root, stop = Path(sys.argv[1]), Path(sys.argv[2])
project = Project(load_config(cwd=root, env={}))
calls, errors, empty, rebuilt = 0, [], 0, False
while not stop.exists():
    try:
        hits = search.search(project, "rebuilt_only_helper gen value", limit=5)
        empty += not hits
        rebuilt = rebuilt or any(hit.symbol == "rebuilt_only_helper" for hit in hits)
    except SaiError as exc:
        errors.append(str(exc))
    calls += 1
    if calls == 1:
        print("ready", flush=True)
print(json.dumps({"calls": calls, "errors": errors[:5], "error_count": len(errors), "empty": empty,
                  "rebuilt": rebuilt}), flush=True)
"""


@pytest.mark.slow
def test_a_reader_searching_through_a_recreate_gets_the_old_answers_then_the_new_ones(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "p", many_functions(700, per_file=25))
    write_config(root, ollama_server.url)
    _index(root)
    write_tree(root, {"gen/rebuilt.py": "def rebuilt_only_helper(value):\n    return value\n"})
    stop = tmp_path / "stop"
    reader = subprocess.Popen([sys.executable, "-c", HAMMER, str(root), str(stop)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready", reader.stderr
        ollama_server.stall_next(6, seconds=0.4)  # each batch's embedding: the build takes seconds
        project = open_project(root)
        try:
            report = indexer.index(project, recreate=True)
        finally:
            project.close()
        assert report.embedded == 701
        time.sleep(1.5)  # the reader's next searches see the rebuilt index
    finally:
        stop.touch()
        out, err = reader.communicate(timeout=60)
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["error_count"] == 0, (summary, err)
    assert summary["empty"] == 0 and summary["calls"] >= 10, summary
    assert summary["rebuilt"], summary


# Refreshes argv[2] in the project argv[1] with the compaction of its end stopped at argv[3]
# ("copied": the copy is whole, the index still open; "renaming": the index closed, the copy
# about to replace it), where it says so and sleeps to be killed.
PAUSE_IN_COMPACTION = """
import os, sys, time
from sai.store.duckdb import compaction
moment = sys.argv[3]
def pause(real):
    def paused(*args):
        print(moment, flush=True)
        time.sleep(30)
        return real(*args)
    return paused
if moment == "copied":
    compaction.fsync_path = pause(compaction.fsync_path)
else:
    compaction.os.replace = pause(os.replace)
from sai.cli import commands as cli
sys.exit(cli.main(["--config", sys.argv[1] + "/sai-cfg.yml", "refresh", sys.argv[2]]))
"""


@pytest.mark.parametrize("moment", ["copied", "renaming"])
@pytest.mark.slow
def test_a_run_killed_while_compacting_leaves_a_whole_index(
    tmp_path: Path, ollama_server: OllamaStandIn, moment: str
) -> None:
    root = write_tree(tmp_path / "p", many_functions(6, per_file=3))
    write_config(root, ollama_server.url)
    _index(root)
    target = root / "gen" / "mod_000.py"
    target.write_text(target.read_text() + "\n\ndef added_before_the_kill(x):\n    return x\n")
    proc = subprocess.Popen([sys.executable, "-c", PAUSE_IN_COMPACTION, str(root), str(target), moment],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root)
    assert proc.stdout is not None and proc.stdout.readline().strip() == moment, proc.stderr
    proc.kill()
    proc.wait(timeout=30)
    db = root / ".index" / "code.duckdb"
    assert Path(f"{db}.compact").exists()  # the copy the kill left: never read, replaced next time
    project = open_project(root)
    try:
        hits = search.search(project, "added_before_the_kill", mode="lexical", limit=1)
        assert hits and hits[0].symbol == "added_before_the_kill"  # the refresh was committed
        with project.store.read() as reader:
            assert reader.chunk_count() == 7
        target.write_text(target.read_text() + "\n\ndef added_after(x):\n    return x\n")
        indexer.refresh(project, ["gen/mod_000.py"])
        assert search.search(project, "added_after", mode="lexical", limit=1)[0].symbol == "added_after"
    finally:
        project.close()
    assert not Path(f"{db}.compact").exists()
