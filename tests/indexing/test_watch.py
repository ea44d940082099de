"""Keeping the index fresh: the Watcher in a thread, `sai watch` as a process, `sai mcp --watch`."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import watchfiles
from anyio.from_thread import BlockingPortal
from child_signals import default_sigint
from fixtures_tree import open_project, write_config, write_tree
from mcp_sessions import REPO, mcp_session, standin_env
from ollama_standin import OllamaStandIn

from sai.cli.commands import main
from sai.indexing.watch import Batch, BatchFailed, Indexed, Watcher, WatchReport

# a deadline, not a measure: waits return as soon as the thing happens; under a loaded CI the
# server's first index run took more than 15 s
TIMEOUT = 60.0
NEW_FUNCTION = '''def reconcile_ledger_entries(ledger, payments):
    """Match each payment to the ledger entry it settles."""
    return {p.ref: ledger.get(p.ref) for p in payments}
'''


def _wait(check: Callable[[], object], what: str, timeout: float = TIMEOUT) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout}s")


def _indexed_keys(root: Path) -> dict[str, int]:
    project = open_project(root)
    try:
        with project.store.read() as reader:
            return {key: row.chunk_count for key, row in reader.files().items()}
    finally:
        project.close()


# ---------------------------------------------------------------- the Watcher in a thread
class Running:
    """A Watcher in a thread; its reports arrive in `reports`."""

    def __init__(self, root: Path, **options: int) -> None:
        self.project = open_project(root)
        self.reports: queue.Queue[WatchReport] = queue.Queue()
        self.stop = threading.Event()
        self.watcher = Watcher(self.project, report=self.reports.put, stop=self.stop, **options)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)
        self.thread.start()
        assert isinstance(self.next(), Indexed)

    def next(self) -> WatchReport:
        return self.reports.get(timeout=TIMEOUT)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=TIMEOUT)
        self.project.close()


@pytest.fixture
def tree(tmp_path: Path, ollama_server: OllamaStandIn) -> Path:
    root = write_tree(tmp_path / "proj")
    (root / ".gitignore").write_text("ignored/\n", encoding="utf-8")
    write_config(root, ollama_server.url)
    return root


@pytest.fixture
def running(tree: Path) -> Iterator[Running]:
    watching = Running(tree)
    yield watching
    watching.close()


def test_a_new_file_is_indexed_and_a_deleted_one_removed(tree: Path, running: Running) -> None:
    (tree / "ledger.py").write_text(NEW_FUNCTION, encoding="utf-8")
    batch = running.next()
    assert isinstance(batch, Batch) and not batch.full_run
    assert [(r.path, r.chunks) for r in batch.refreshed] == [("ledger.py", 1)] and batch.removed == ()
    (tree / "web" / "dates.js").unlink()
    batch = running.next()
    assert isinstance(batch, Batch) and batch.refreshed == () and batch.removed == ("web/dates.js",)
    assert running.watcher.last_refresh_at == batch.at
    assert set(_indexed_keys(tree)) == {"billing.py", "ledger.py", "pkg/store/names.go"}


def test_excluded_and_pruned_files_and_the_index_itself_are_not_reported(
    tree: Path, running: Running
) -> None:
    for key in ("notes.txt", "ignored/gen.py", "node_modules/lib/x.js", ".git/HEAD.py"):
        path = tree / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def hidden_thing():\n    return 1\n", encoding="utf-8")
    (tree / "last.py").write_text(NEW_FUNCTION, encoding="utf-8")
    batch = running.next()  # the first report is the wanted file's, whatever batches came before
    assert isinstance(batch, Batch) and [r.path for r in batch.refreshed] == ["last.py"]
    with pytest.raises(queue.Empty):  # the index write of that batch does not trigger another
        running.reports.get(timeout=1.5)
    assert "ignored/gen.py" not in _indexed_keys(tree)


def test_an_index_file_inside_the_tree_does_not_trigger_itself(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "proj")
    write_config(root, ollama_server.url, duckdb={"path": "sai-index.duckdb"})
    watching = Running(root)
    try:
        assert not watching.watcher.wanted(watchfiles.Change.modified, str(root / "sai-index.duckdb.wal"))
        assert not watching.watcher.wanted(watchfiles.Change.added, str(root / "build" / "out.py"))
        assert watching.watcher.wanted(watchfiles.Change.added, str(root / "builder.py"))
        (root / "ledger.py").write_text(NEW_FUNCTION, encoding="utf-8")
        assert isinstance(watching.next(), Batch)
        with pytest.raises(queue.Empty):
            watching.reports.get(timeout=1.5)
    finally:
        watching.close()


def test_an_edit_embeds_only_the_changed_text(
    tree: Path, running: Running, ollama_server: OllamaStandIn
) -> None:
    before = len(ollama_server.received_inputs)
    with (tree / "billing.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef refund(amount):\n    return -amount\n")
    batch = running.next()
    assert isinstance(batch, Batch) and [r.path for r in batch.refreshed] == ["billing.py"]
    embedded = ollama_server.received_inputs[before:]
    assert embedded and any("def refund" in text for text in embedded)
    assert not any("def apply_tax" in text for text in embedded)


def test_a_directory_moved_away_and_back_removes_and_adds_its_files(
    tree: Path, running: Running, tmp_path: Path
) -> None:
    (tree / "pkg").rename(tmp_path / "pkg-away")
    batch = running.next()
    assert isinstance(batch, Batch) and batch.removed == ("pkg/store/names.go",)
    (tmp_path / "pkg-away").rename(tree / "pkg")
    batch = running.next()
    assert isinstance(batch, Batch) and [r.path for r in batch.refreshed] == ["pkg/store/names.go"]


def test_a_batch_of_many_paths_is_one_index_run(tree: Path) -> None:
    watching = Running(tree, bulk_paths=5)
    try:
        for n in range(8):
            (tree / f"gen_{n}.py").write_text(f"def generated_{n}(x):\n    return x + {n}\n", encoding="utf-8")
        batch = watching.next()
        assert isinstance(batch, Batch) and batch.full_run and batch.changes == 8
        assert sorted(r.path for r in batch.refreshed) == [f"gen_{n}.py" for n in range(8)]
        assert len(_indexed_keys(tree)) == 11
    finally:
        watching.close()


def test_a_failed_batch_is_reported_and_tried_again_with_the_next_change(
    tree: Path, running: Running, ollama_server: OllamaStandIn
) -> None:
    ollama_server.fail_next(1, status=400)  # not worth a retry: the batch fails at once
    (tree / "first.py").write_text(NEW_FUNCTION, encoding="utf-8")
    failed = running.next()
    assert isinstance(failed, BatchFailed) and "first.py" not in _indexed_keys(tree)
    (tree / "second.py").write_text("def second_one():\n    return 2\n", encoding="utf-8")
    batch = running.next()
    assert isinstance(batch, Batch)
    assert [r.path for r in batch.refreshed] == ["first.py", "second.py"]


def test_stop_ends_the_watcher_thread(running: Running) -> None:
    assert running.watcher.watching
    running.stop.set()
    running.thread.join(timeout=5)
    assert not running.thread.is_alive() and not running.watcher.watching


# ---------------------------------------------------------------- sai watch as a process
class WatchProcess:
    def __init__(self, root: Path, *args: str) -> None:
        self.stderr = root.parent / "watch-stderr.log"
        self.stdout = root.parent / "watch-stdout.log"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with self.stderr.open("wb") as err, self.stdout.open("wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "sai", "watch", *args], cwd=root, env=env,
                                         preexec_fn=default_sigint,
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=err)

    def err(self) -> str:
        return self.stderr.read_text(encoding="utf-8")

    def out_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.read_text(encoding="utf-8").splitlines()]

    def wait_for(self, text: str) -> None:
        _wait(lambda: text in self.err() or self.proc.poll() is not None, f"{text!r} on stderr")
        assert self.proc.poll() is None, self.err()


@pytest.mark.slow
def test_sai_watch_reports_batches_and_ends_on_ctrl_c(tree: Path) -> None:
    watch = WatchProcess(tree, "--json")
    try:
        watch.wait_for("watch: watching ")
        assert "indexed 11 chunks from 3 " in watch.err()
        (tree / "notes.txt").write_text("not code\n", encoding="utf-8")
        (tree / "ledger.py").write_text(NEW_FUNCTION, encoding="utf-8")
        with (tree / "billing.py").open("a", encoding="utf-8") as handle:
            handle.write("\n\ndef refund(amount):\n    return -amount\n")
        (tree / "web" / "dates.js").unlink()
        _wait(lambda: sum(len(b["removed"]) for b in watch.out_lines()) == 1
              and {r["path"] for b in watch.out_lines() for r in b["refreshed"]} == {"ledger.py", "billing.py"},
              "the three changes in the JSON lines")
        after = watch.err().split(" for changes (Ctrl-C to stop)\n", 1)[1].splitlines()
        assert after and all(line.startswith("watch: re-indexed ") for line in after)
        assert "removed 1" in watch.err()
        assert set(_indexed_keys(tree)) == {"billing.py", "ledger.py", "pkg/store/names.go"}
        watch.proc.send_signal(signal.SIGINT)
        assert watch.proc.wait(timeout=TIMEOUT) == 130
    finally:
        if watch.proc.poll() is None:
            watch.proc.kill()
    assert "Traceback" not in watch.err() and watch.err().splitlines()[-1] == "watch: stopped"


@pytest.mark.slow
def test_sai_watch_prints_nothing_on_stdout_without_json_and_stops_on_sigterm(tree: Path) -> None:
    watch = WatchProcess(tree)
    try:
        watch.wait_for("watch: watching ")
        (tree / "ledger.py").write_text(NEW_FUNCTION, encoding="utf-8")
        watch.wait_for("watch: re-indexed 1 file(s) (1 chunks), removed 0")
        watch.proc.send_signal(signal.SIGTERM)
        assert watch.proc.wait(timeout=TIMEOUT) == 0
    finally:
        if watch.proc.poll() is None:
            watch.proc.kill()
    assert watch.stdout.read_text() == "" and "Traceback" not in watch.err()


# ---------------------------------------------------------------- sai mcp --watch
def test_mcp_watch_finds_new_code_without_a_refresh_call(
    tmp_path: Path, portal: BlockingPortal
) -> None:
    with OllamaStandIn() as standin:
        root = write_tree(tmp_path / "project")
        (root / "sai-cfg.yml").write_text("root: .\next: [py]\n", encoding="utf-8")
        with mcp_session(portal, root, standin_env(standin), "--allow-write", "--watch", cwd=root) as session:
            _wait(lambda: session.call("sai_index_status")["last_refresh_at"], "the first index run")
            status = session.call("sai_index_status")
            assert status["watching"] is True and status["file_count"] == 1
            (root / "ledger.py").write_text(NEW_FUNCTION, encoding="utf-8")

            def found() -> list[dict]:
                hits = session.call("sai_search_code", query="reconcile ledger entries payments")["hits"]
                return [h for h in hits if h["symbol"] == "reconcile_ledger_entries"]

            hit = _wait(found, "the new function in search results")[0]
            assert hit["path"] == "ledger.py" and hit["stale"] is False
            assert session.call("sai_index_status")["file_count"] == 2
        log = session.stderr.read_text(encoding="utf-8")
        assert "watch: re-indexed 1 file(s)" in log and "Traceback" not in log


def test_mcp_status_says_not_watching_without_watch(tmp_path: Path, portal: BlockingPortal) -> None:
    with OllamaStandIn() as standin:
        root = write_tree(tmp_path / "project")
        (root / "sai-cfg.yml").write_text("root: .\next: [py]\n", encoding="utf-8")
        with mcp_session(portal, root, standin_env(standin), "--allow-write", cwd=root) as session:
            status = session.call("sai_index_status")
    assert status["watching"] is False and status["last_refresh_at"] is None


def test_mcp_watch_without_allow_write_is_a_usage_error(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree)
    assert main(["mcp", "--watch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --watch ") and "--allow-write" in err and err.count("\n") == 1
