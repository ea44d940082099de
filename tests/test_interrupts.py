"""Ctrl-C and early ends of the CLI, as a user meets them: real processes, real signals.

Each test runs `sai` in a child process of its own session (a terminal's Ctrl-C reaches the
whole process group, workers included) and checks the exit code and every line on stderr.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from child_signals import default_sigint
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

INTERRUPTED = "error: interrupted; finished batches are kept — run `sai` again to complete the index"

# `sai --silent` on the local model, touching a marker file when the model starts on a round;
# argv: marker, IN_FLIGHT, FLUSH_CHUNKS (small values put a write between two embeddings).
LOCAL_RUN = """
import sys
from pathlib import Path
from sai.embedders import local
from sai.indexing import run
run.IN_FLIGHT, run.FLUSH_CHUNKS = int(sys.argv[2]), int(sys.argv[3])
real = local.LocalEmbedder._run
def announced(self, inputs):
    Path(sys.argv[1]).touch()
    return real(self, inputs)
local.LocalEmbedder._run = announced
from sai.app import main
sys.exit(main(["--silent"]))
"""


def _start(code: str, *args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, start_new_session=True,
                            preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists(), proc.communicate(timeout=30)


@pytest.fixture
def local_tree(tmp_path: Path) -> Path:
    """400 small functions (two index batches) configured for the local model."""
    pytest.importorskip("sentence_transformers", reason="the 'local' extra is not installed")
    root = write_tree(tmp_path / "project", many_functions(400, per_file=20))
    write_config(root, "http://127.0.0.1:9", embedder="local", model="all-MiniLM-L6-v2",
                 duckdb={"lock_timeout_s": 0.5})
    return root


@pytest.mark.slow
def test_ctrl_c_while_the_local_model_embeds_exits_130_with_one_line(local_tree: Path) -> None:
    marker = local_tree.parent / "embedding"
    proc = _start(LOCAL_RUN, str(marker), "3", "256", cwd=local_tree)
    _wait_for(marker, proc)
    time.sleep(0.2)  # inside the model's forward pass, on the embedding thread
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    # on a machine new to the model, the run first says it builds it (once): progress, not an error
    notice, _, last = err.rpartition(INTERRUPTED)
    assert (proc.returncode, INTERRUPTED + last) == (130, INTERRUPTED + "\n"), err  # not "terminate called …", 134
    assert all(line.startswith("sai: building ") for line in notice.splitlines()), err


@pytest.mark.slow
def test_a_run_that_cannot_get_the_lock_while_the_model_embeds_exits_1_with_one_line(local_tree: Path) -> None:
    index_dir = local_tree / ".index"
    index_dir.mkdir()
    held = os.open(index_dir / "code.duckdb.writer", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(held, fcntl.LOCK_EX)  # another process writing the index, for longer than the run waits
    try:
        marker = local_tree.parent / "embedding"
        proc = _start(LOCAL_RUN, str(marker), "1", "128", cwd=local_tree)
        _, err = proc.communicate(timeout=180)
    finally:
        os.close(held)
    assert proc.returncode == 1, err
    *notice, last = err.splitlines()  # a machine new to the model first hears that it is built (once)
    assert last.startswith("error: the index ") and "held by another process" in last, err
    assert all(line.startswith("sai: building ") for line in notice), err


# A loop of short DuckDB queries inside the store's translation of errors (as a reader's many
# small questions run), answering Ctrl-C as the CLI does. argv: marker.
# LOOP_FORM: the scripts below loop as `while True: if <done>: break`. CPython 3.13 checks for
# a signal at the backward jump of `while <test>:` outside the try around the loop (CPython
# issue 130279): a Ctrl-C that lands there escapes `except KeyboardInterrupt` as a traceback
# (measured: 5 of 20 SIGINTs into `while <test>: pass` on 3.13.0, none on 3.11 or 3.12).
QUERY_LOOP = """
import sys, time
from pathlib import Path
import duckdb
from sai.store.duckdb.errors import translate
con = duckdb.connect(":memory:")
with translate(Path("memory")):
    con.execute("SELECT 1").fetchall()  # the first call's lazy imports done: the SIGINT lands among queries
try:
    Path(sys.argv[1]).touch()
    deadline, n = time.monotonic() + 20, 0
    while True:  # not `while <test>:` (LOOP_FORM above)
        if time.monotonic() >= deadline:
            break
        with translate(Path("memory")):
            con.execute("SELECT count(*) FROM range(?) AS t(i) WHERE i % 7 = 3", [20000 + n]).fetchall()
        n += 1
    print("finished")
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.slow
def test_ctrl_c_during_duckdb_queries_is_never_lost_nor_a_runtime_error(tmp_path: Path) -> None:
    """DuckDB drops a Ctrl-C that comes while a query runs, or raises RuntimeError for it."""
    for trial in range(3):  # most SIGINTs land inside a query; one lost or mistranslated fails
        marker = tmp_path / f"looping{trial}"
        proc = _start(QUERY_LOOP, str(marker), cwd=tmp_path)
        _wait_for(marker, proc)
        time.sleep(0.5)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out, err) == (130, "", ""), (trial, err)
        assert time.monotonic() - sent < 5


# Inside the store's translation of errors, weak references die while their callbacks run
# (as importlib's do when a module loads): the SIGINT lands in a callback. argv: marker.
CALLBACK_LOOP = """
import os, signal, sys, time, weakref
from pathlib import Path
from sai.store.duckdb.errors import translate

class Thing:
    pass

def slow_callback(_ref):
    until = time.monotonic() + 0.05
    while time.monotonic() < until:
        pass

try:
    with translate(Path("memory")):
        Path(sys.argv[1]).touch()
        # the block runs to here before the kept Ctrl-C ends it: long enough for the SIGINT
        # (sent 0.3 s after the marker) to land, short enough not to idle the suite
        deadline = time.monotonic() + 5
        while True:  # not `while <test>:` (LOOP_FORM above)
            if time.monotonic() >= deadline:
                break
            thing = Thing()
            ref = weakref.ref(thing, slow_callback)
            del thing  # the callback runs now; Python cannot raise out of it
    print("finished")
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.slow
def test_ctrl_c_inside_a_callback_python_cannot_raise_from_is_kept_and_not_printed(tmp_path: Path) -> None:
    """Before: "Exception ignored in <callback>" and a KeyboardInterrupt traceback on stderr."""
    for trial in range(3):  # nearly all the time goes to callbacks: the SIGINT lands in one
        marker = tmp_path / f"looping{trial}"
        proc = _start(CALLBACK_LOOP, str(marker), cwd=tmp_path)
        _wait_for(marker, proc)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert (proc.returncode, out, err) == (130, "", ""), (trial, err)


# A weak reference's callback that the SIGINT interrupts (it sends the signal itself, so it lands
# there every time), outside any store call, as the command line runs.
CLI_CALLBACK_LOOP = """
import signal, sys, time, weakref
from pathlib import Path
from sai.cli.exits import interrupts_redelivered

class Thing:
    pass

def interrupted_callback(_ref):
    signal.raise_signal(signal.SIGINT)  # the handler raises KeyboardInterrupt here: Python drops it

try:
    with interrupts_redelivered():
        thing = Thing()
        ref = weakref.ref(thing, interrupted_callback)
        del thing
        deadline = time.monotonic() + 20
        while True:  # not `while <test>:` (LOOP_FORM above)
            if time.monotonic() >= deadline:
                break
    print("finished")
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_ctrl_c_inside_a_callback_outside_the_store_still_stops_the_command_line(tmp_path: Path) -> None:
    """Before: the KeyboardInterrupt was printed as "Exception ignored" and dropped; the loop went on."""
    proc = _start(CLI_CALLBACK_LOOP, cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (130, "", "")


# `sai` on the stand-in whose first postings write runs DuckDB queries for seconds (as a large
# batch's does) after touching a marker. argv: marker.
SLOW_POSTINGS_RUN = """
import sys
from pathlib import Path
from sai.store.duckdb import postings as lexicon
real = lexicon.Postings.add
def slow(self, source, where=""):
    Path(sys.argv[1]).touch()
    for _ in range(100):  # ~0.1 s each: a SIGINT lands inside one
        self.con.execute("SELECT count(*) FROM range(3000000) AS t(i) WHERE i % 7 = 3").fetchall()
    real(self, source, where)
lexicon.Postings.add = slow
from sai.app import main
sys.exit(main(["--silent"]))
"""


def test_ctrl_c_inside_a_write_exits_130_with_one_line(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "project", many_functions(20, per_file=10))
    write_config(root, ollama_server.url)
    marker = tmp_path / "writing"
    proc = _start(SLOW_POSTINGS_RUN, str(marker), cwd=root)
    _wait_for(marker, proc)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, INTERRUPTED + "\n")  # not RuntimeError: Query interrupted


# `sai` from the moment its process runs Python: the marker is touched before SAI is imported.
STARTING_RUN = """
import sys
from pathlib import Path
Path(sys.argv[1]).touch()
from sai.app import main
sys.exit(main(sys.argv[2:]))
"""


def test_ctrl_c_while_sai_loads_prints_one_line_not_an_import_traceback(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    proc = _start(STARTING_RUN, str(marker), "--query-only", "--query", "x", cwd=tmp_path)
    _wait_for(marker, proc)
    time.sleep(0.15)  # past `import sai.app` (2 ms), into the command line's import (most of a second)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    # on a fast machine the signal may land after the config is read, whose note came first
    lines = err.splitlines()
    assert proc.returncode == 130 and lines[-1:] == ["error: interrupted"], err
    assert all(line.startswith("note: no sai-cfg.yml found") for line in lines[:-1]) and len(lines) <= 2, err


@pytest.mark.slow
def test_ctrl_c_of_a_search_does_not_speak_of_batches(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "project", many_functions(20, per_file=10))
    write_config(root, ollama_server.url)
    assert subprocess.run([sys.executable, "-m", "sai", "--silent"], cwd=root, check=False).returncode == 0
    ollama_server.reset_counts()
    ollama_server.stall_next(1, seconds=30)  # the query's embedding
    marker = tmp_path / "started"
    proc = _start(STARTING_RUN, str(marker), "--query-only", "--query", "x", cwd=root)
    deadline = time.monotonic() + 60
    while ollama_server.requests == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "error: interrupted\n")


def _workers(pid: int) -> set[int]:
    """The multiprocessing workers among `pid`'s children (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and b"spawn_main" in (stat.parent / "cmdline").read_bytes():
                found.add(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return found


POOLED_RUN = """
import sys
from sai.indexing import run
run.POOL_MIN_FILES = 1
from sai.app import main
sys.exit(main(["--silent"]))
"""


@pytest.mark.slow
def test_ctrl_c_while_the_pool_workers_start_prints_no_traceback_of_theirs(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "project", many_functions(200, per_file=10))
    write_config(root, ollama_server.url)
    proc = _start(POOLED_RUN, cwd=root)
    deadline = time.monotonic() + 60
    while not _workers(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # the workers are importing SAI now (before: 2 tracebacks)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, INTERRUPTED + "\n")
