"""Progress on stderr: rates and time left, a tqdm bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.models import IndexProgress
from sai.output.progress import ProgressReporter

REPO = Path(__file__).resolve().parents[2]
FILES_BAR = re.compile(r"indexing: +\d+%\|[^|]*\| (\d+)/(\d+) files \[\d\d:\d\d<(\d\d:\d\d|\?), +[\d.?]+file/s\]")
CHUNKS_BAR = re.compile(r"embedding: +\d+%\|[^|]*\| (\d+)/(\d+) chunks embedded "
                        r"\[\d\d:\d\d<(\d\d:\d\d|\?), +[\d.?]+chunk/s\]")


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def reading(done: int, total: int, embedded: int = 0) -> IndexProgress:
    return IndexProgress("reading", files_done=done, files_total=total, chunks_embedded=embedded)


def embedding(done: int, total: int) -> IndexProgress:
    return IndexProgress("embedding", chunks_embedded=done, chunks_to_embed=total)


def test_plain_lines_every_5s_follow_each_stage_with_its_own_rate_and_time_left() -> None:
    stream, clock = io.StringIO(), Clock()
    with ProgressReporter(stream, clock=clock) as progress:
        for done in range(1, 5):
            clock.now += 0.5
            progress.update(reading(done, 4))
        for done in range(0, 121, 4):  # the embedding stage: most of a first run
            progress.update(embedding(done, 120))
            clock.now += 1.0
    assert stream.getvalue().splitlines() == [
        "indexing: 1/4 files",
        "indexing: 4/4 files, 2.7 files/s, done in 2s",
        "indexing: 4/4 files, 0/120 chunks embedded",
        "indexing: 4/4 files, 20/120 chunks embedded, 4.0 chunks/s, about 25s left",
        "indexing: 4/4 files, 40/120 chunks embedded, 4.0 chunks/s, about 20s left",
        "indexing: 4/4 files, 60/120 chunks embedded, 4.0 chunks/s, about 15s left",
        "indexing: 4/4 files, 80/120 chunks embedded, 4.0 chunks/s, about 10s left",
        "indexing: 4/4 files, 100/120 chunks embedded, 4.0 chunks/s, about 5s left",
        "indexing: 4/4 files, 120/120 chunks embedded, 4.0 chunks/s, done in 30s",
    ]


def test_a_run_that_embeds_as_it_reads_tells_its_chunks_on_the_file_lines() -> None:
    stream, clock = io.StringIO(), Clock()
    with ProgressReporter(stream, clock=clock) as progress:
        for done in range(1, 41):
            clock.now += 0.5
            progress.update(reading(done, 40, done * 3))
    assert stream.getvalue().splitlines()[-1] == \
        "indexing: 40/40 files, 120 chunks embedded, 2.1 files/s, done in 20s"  # its clock: the first step


def test_a_second_run_on_the_same_reporter_starts_a_new_clock() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = ProgressReporter(stream, clock=clock)
    clock.now += 100
    progress.update(reading(10, 10))  # a first run of 100 s
    clock.now += 3600  # idle, as `sai watch` is between runs
    clock.now += 4
    progress.update(reading(2, 4))
    assert stream.getvalue().splitlines()[-1] == "indexing: 2/4 files"  # the new run's clock started here
    clock.now += 2
    progress.update(reading(4, 4))
    assert stream.getvalue().splitlines()[-1] == "indexing: 4/4 files, 2.0 files/s, done in 2s"


def test_a_run_waiting_for_another_says_so() -> None:
    stream = io.StringIO()
    ProgressReporter(stream).update(IndexProgress("waiting"))
    assert stream.getvalue() == "indexing: another index run of this index is under way; waiting for it to finish\n"


def test_a_terminal_gets_a_bar_of_files_then_one_of_chunks_with_rate_and_time_left() -> None:
    stream = TerminalStream()
    with ProgressReporter(stream) as progress:
        for done in range(1, 6):
            progress.update(reading(done, 5))
            time.sleep(0.12)  # past tqdm's redraw interval
        for done in range(0, 65, 16):
            progress.update(embedding(done, 64))
            time.sleep(0.12)
    text = stream.getvalue()
    frames = [frame for frame in text.replace("\n", "\r").split("\r") if frame.strip()]
    files = [FILES_BAR.search(f) for f in frames if f.startswith("indexing")]
    chunks = [CHUNKS_BAR.search(f) for f in frames if f.startswith("embedding")]
    assert files and all(files) and chunks and all(chunks), text
    assert files[-1].group(1, 2) == ("5", "5")
    assert [int(m.group(1)) for m in chunks] == sorted(int(m.group(1)) for m in chunks)
    assert chunks[-1].group(1, 2) == ("64", "64") and re.search(r"\d\.\d+chunk/s", text)
    assert text.endswith("\n") and text.count("\n") == 2  # each bar ends its line


def test_finish_ends_the_bar_so_other_lines_can_follow() -> None:
    stream = TerminalStream()
    progress = ProgressReporter(stream)
    progress.update(reading(1, 2))
    progress.finish()
    stream.write("watch: watching\n")
    progress.update(reading(2, 2))
    progress.finish()
    assert stream.getvalue().count("\n") == 3 and "\nwatch: watching\n" in stream.getvalue()


def test_disabled_draws_nothing_even_on_a_terminal() -> None:
    stream = TerminalStream()
    with ProgressReporter(stream, enabled=False) as progress:
        progress.update(reading(1, 2))
        progress.update(embedding(2, 3))
        progress.update(IndexProgress("waiting"))
    assert stream.getvalue() == ""


def _slow_tree(tmp_path: Path, server: OllamaStandIn) -> Path:
    """600 chunks, embedded by a stand-in that takes 0.3 s a request of 16 texts (~11 s)."""
    root = write_tree(tmp_path / "proj", many_functions(600, per_file=20))
    write_config(root, server.url, ollama={"url": server.url, "batch_size": 16, "parallel": 1, "backoff_s": 0.01})
    server.stall_next(1000, seconds=0.3)
    return root


@pytest.mark.slow
def test_sai_on_a_pseudo_terminal_draws_chunks_embedded_as_they_are(
    tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = _slow_tree(tmp_path, ollama_server)
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "sai"], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    arrivals = _read_timed(master)
    out, _ = proc.communicate(timeout=120)
    shown = "".join(text for _, text in arrivals)
    assert proc.returncode == 0, shown
    assert FILES_BAR.search(shown) and "30/30 files" in shown, shown
    counts: dict[int, float] = {}  # chunks embedded -> when the bar first showed it
    so_far = ""
    for at, text in arrivals:
        so_far += text
        for match in CHUNKS_BAR.finditer(so_far):
            counts.setdefault(int(match.group(1)), at)
    assert max(counts) == 600 and len([n for n in counts if 0 < n < 600]) >= 4, shown
    lefts = [m.group(3) for m in CHUNKS_BAR.finditer(shown) if 0 < int(m.group(1)) < 300]
    assert lefts and all(left not in ("?", "00:00") for left in lefts), shown  # time left while embedding
    times = sorted(counts.values())
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) < 5.0  # the bar moves while embedding
    assert out.decode().startswith("indexed ")  # stdout is no terminal: the summary line only


@pytest.mark.slow
@pytest.mark.parametrize("vram", [0, 1 << 30])
def test_sai_off_a_terminal_writes_a_line_at_least_every_5s_while_chunks_are_embedded(
    tmp_path: Path, ollama_server: OllamaStandIn, vram: int
) -> None:
    """A model on this machine's CPU embeds after the first stage, from 0; one in a GPU's memory
    during it too (the follower), and the embedding lines count on from what it did."""
    ollama_server.vram = vram
    root = _slow_tree(tmp_path, ollama_server)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "sai"], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    arrivals = _read_timed(proc.stderr.fileno())
    proc.communicate(timeout=120)
    assert proc.returncode == 0
    lines = [(at, line) for at, text in arrivals for line in text.splitlines() if "chunks embedded" in line]
    embedded = [int(re.search(r"(\d+)/600 chunks embedded", line).group(1)) for _, line in lines]  # type: ignore[union-attr]
    assert (embedded[0] == 0 if vram == 0 else embedded[0] < 600) and embedded[-1] == 600, lines
    assert len(embedded) >= (3 if vram == 0 else 2), lines
    assert embedded == sorted(embedded)
    gaps = [b[0] - a[0] for a, b in zip(lines, lines[1:], strict=False)]
    assert max(gaps) < 5.0 + 2.0, lines  # one each PLAIN_EVERY_S (plus one embedding step at most)
    assert any("chunks/s, about" in line and "left" in line for _, line in lines), lines
    assert lines[-1][1].endswith(lines[-1][1].split(", ")[-1]) and "done in" in lines[-1][1]


def test_sai_silent_on_a_pseudo_terminal_shows_nothing(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "proj")
    write_config(root, ollama_server.url)
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "sai", "--silent"], cwd=root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = _read_all(master)
    proc.communicate(timeout=60)
    assert proc.returncode == 0 and shown == ""


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _read_timed(fd: int) -> list[tuple[float, str]]:
    """What the other side wrote, as (seconds since the start, text) in arrival order."""
    started, arrivals = time.monotonic(), []
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        arrivals.append((time.monotonic() - started, data.decode("utf-8", errors="replace")))
    return arrivals
