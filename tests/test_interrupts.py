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
from fixtures_tree import many_functions, write_config, write_tree

INTERRUPTED = "error: interrupted; finished batches are kept — run `sai` again to complete the index"

# `sai --silent` on the local model, touching a marker file when the model starts on a round;
# argv: marker, IN_FLIGHT, FLUSH_CHUNKS (small values put a write between two embeddings).
LOCAL_RUN = """
import sys
from pathlib import Path
from sai.embedders import local
from sai.indexing import indexer
indexer.IN_FLIGHT, indexer.FLUSH_CHUNKS = int(sys.argv[2]), int(sys.argv[3])
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


def test_ctrl_c_while_the_local_model_embeds_exits_130_with_one_line(local_tree: Path) -> None:
    marker = local_tree.parent / "embedding"
    proc = _start(LOCAL_RUN, str(marker), "3", "256", cwd=local_tree)
    _wait_for(marker, proc)
    time.sleep(0.2)  # inside the model's forward pass, on the embedding thread
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (130, INTERRUPTED + "\n")  # not "terminate called …", 134


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
    assert err.startswith("error: the index ") and "held by another process" in err and err.count("\n") == 1, err
