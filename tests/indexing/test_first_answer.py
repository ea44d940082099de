"""The first answer before the vectors: `sai --query` on an unindexed tree answers once the chunks
are stored, then embeds them in the same run; status counts the chunks still waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

REPO = Path(__file__).resolve().parents[2]


def _slow_tree(tmp_path: Path, server: OllamaStandIn) -> Path:
    """400 chunks and a stand-in taking 0.2 s a request of 16 texts (~5 s of embedding)."""
    root = write_tree(tmp_path / "project", many_functions(400, per_file=20))
    write_config(root, server.url, ollama={"url": server.url, "batch_size": 16, "parallel": 1, "backoff_s": 0.01})
    server.stall_next(1000, seconds=0.2)
    return root


def _sai(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "sai", *args], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_query_on_an_unindexed_tree_answers_before_the_vectors_then_finishes_them(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = _slow_tree(tmp_path, ollama_server)
    proc = _sai(root, "--query", "gen_399", "--explain")
    assert proc.stdout is not None and proc.stderr is not None
    first_line = proc.stdout.readline()  # the answer's header, printed while the run goes on
    answered_at_requests = ollama_server.inputs_embedded
    out, err = proc.stdout.read(), proc.stderr.read()  # a few lines of progress: no pipe fills
    proc.wait(timeout=120)
    assert proc.returncode == 0, err
    assert first_line.strip() and answered_at_requests < 400, (first_line, answered_at_requests)
    rows = (first_line + out).splitlines()
    assert any("gen/mod_019.py" in row for row in rows[:4]), rows
    assert "lexical only: no vector yet" in out  # the hit says it had no vector yet
    assert "answered while 400 chunk(s) wait for a vector" in err
    assert "400/400 chunks embedded" in err and err.rstrip().splitlines()[-1].startswith("indexed 400 chunks")
    assert ollama_server.inputs_embedded == 400  # the run went on and embedded every text, once
    status = subprocess.run([sys.executable, "-m", "sai", "status", "--json"], cwd=root, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert json.loads(status.stdout)["pending_vectors"] == 0


def test_status_during_the_embedding_counts_the_chunks_waiting_for_a_vector(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = _slow_tree(tmp_path, ollama_server)
    run = _sai(root)
    deadline = time.monotonic() + 60
    while ollama_server.requests < 3 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    status = subprocess.run([sys.executable, "-m", "sai", "status", "--json"], cwd=root, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    symbol = subprocess.run([sys.executable, "-m", "sai", "symbol", "gen_250", "--json"], cwd=root,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    payload = json.loads(status.stdout)
    assert payload["chunk_count"] == 400 and 0 < payload["pending_vectors"] <= 400, payload
    assert symbol.returncode == 0 and "gen/mod_012.py" in symbol.stdout, symbol.stderr
