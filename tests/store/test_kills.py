"""A writer killed with SIGKILL at random moments never locks the index: the next run goes ahead at
once and ends with the index a fresh build makes, on both backends and for `sai copy --to qdrant`.

Every run here is a real `python -m sai` process; the config sets `lock_timeout_s: 1`, so a run
that had to wait for a dead writer (a lease left standing) fails within a second instead of
passing slowly. The delays are random; the seed is in every assertion message.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.store import open_store
from sai.text.lexical import query_lexemes

pytestmark = pytest.mark.slow  # processes killed at random moments: `make test-all`
TRIALS = 4
TREE = many_functions(150, per_file=10)
QDRANT = {"backend": "qdrant", "qdrant": {"path": ".index/qdrant"}}
FOREIGN = ("SAI_CONFIG", "SAI_BACKEND", "SAI_DB_PATH", "SAI_COLLECTION", "QDRANT_URL", "QDRANT_API_KEY", "OLLAMA_HOST")


def _sai(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN}
    return subprocess.Popen([sys.executable, "-m", "sai", *args], cwd=root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[str], *, timeout: float = 180) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def _timed(root: Path, *args: str) -> float:
    """One run to its end (it must succeed): how long it took."""
    started = time.monotonic()
    code, err = _finish(_sai(root, *args))
    assert code == 0, err
    return time.monotonic() - started


def _kill_at_random_moments(root: Path, args: tuple[str, ...], *, within_s: float,
                            before_each: Callable[[int], None] = lambda trial: None) -> list[str]:
    """TRIALS runs, each killed (SIGKILL) after a random delay within `within_s`, unless it
    ended first (then it must have succeeded: a run shut out by a dead writer fails)."""
    seed = random.randrange(10**6)
    rng, seen = random.Random(seed), [f"seed {seed}"]
    for trial in range(TRIALS):
        before_each(trial)
        delay = rng.uniform(0.3, within_s)
        proc = _sai(root, *args)
        try:
            code = proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            code, err = _finish(proc)
            if code == 0:  # it ended by itself between the wait and the kill: a finished run
                seen.append(f"ended at {delay:.2f}s, as it was killed")
                continue
            assert code == -signal.SIGKILL, f"{seen}, trial {trial}: {err}"
            seen.append(f"killed at {delay:.2f}s")
            continue
        _, err = proc.communicate()
        assert code == 0, f"{seen}, trial {trial}: {err}"
        seen.append(f"ended before {delay:.2f}s")
    assert any(s.startswith("killed") for s in seen), f"no run was killed: {seen}"
    print(seen)  # shown with -s, and by pytest when a test fails
    return seen


def _version(n: int) -> dict[str, str]:
    """The tree with every function changed (so a run has all of it to embed and write again)."""
    return {key: text.replace("len('", f"{n} + len('") for key, text in TREE.items()}


def _contents(root: Path, backend: str) -> tuple[set[tuple[str, int, int, str]], dict[str, str], set[tuple]]:
    """Every chunk (key, lines, hash), every file's hash and the chunks a lexical search finds,
    of the index at `root`."""
    store = open_store(load_config(cwd=root, env={}), backend=backend)
    try:
        with store.read() as reader:
            rows, _, _ = reader.all_chunks()
            files = {key: row.file_hash for key, row in reader.files().items()}
            where = {r.id: (r.path, r.start_line, r.end_line) for r in rows}
            found = {where.get(i) for i, _ in reader.lexical(query_lexemes("value gen"), len(rows) + 1)}
            pending = reader.pending_count()
    finally:
        store.close()
    assert pending == 0, "chunks left without a vector"
    return {(r.path, r.start_line, r.end_line, r.content_hash) for r in rows}, files, found


def _project(root: Path, url: str, **settings: object) -> Path:
    write_tree(root, TREE)
    write_config(root, url, lock_timeout_s=1, **settings)
    return root


@pytest.mark.parametrize("backend", ["duckdb", "qdrant"])
def test_an_index_run_killed_at_random_moments_never_locks_out_the_next(
    tmp_path: Path, ollama_server: OllamaStandIn, backend: str,
) -> None:
    settings = QDRANT if backend == "qdrant" else {}
    fresh = _project(tmp_path / "fresh", ollama_server.url, **settings)
    write_tree(fresh, _version(TRIALS))
    whole_run_s = _timed(fresh, "--silent")  # the kills fall within a run's length
    root = _project(tmp_path / "p", ollama_server.url, **settings)
    seen = _kill_at_random_moments(root, ("--silent",), within_s=whole_run_s,
                                   before_each=lambda trial: write_tree(root, _version(trial)))
    write_tree(root, _version(TRIALS))
    assert _timed(root, "--silent") < 30, seen
    assert _contents(root, backend) == _contents(fresh, backend), seen


def test_a_copy_to_qdrant_killed_at_random_moments_never_locks_out_the_next(
    tmp_path: Path, ollama_server: OllamaStandIn,
) -> None:
    root = _project(tmp_path / "p", ollama_server.url, qdrant={"path": ".index/qdrant"})
    _timed(root, "--silent")
    whole_copy_s = _timed(root, "copy", "--to", "qdrant")
    seen = _kill_at_random_moments(root, ("copy", "--to", "qdrant"), within_s=whole_copy_s)
    assert _timed(root, "copy", "--to", "qdrant") < 30, seen
    assert _contents(root, "qdrant") == _contents(root, "duckdb"), seen
