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

from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.output.progress import ProgressReporter

REPO = Path(__file__).resolve().parent.parent
BAR = re.compile(r"indexing: +\d+%\|[# 0-9]*\| (\d+)/(\d+) files \[\d\d:\d\d<(\d\d:\d\d|\?), +[\d.?]+file/s\]"
                 r", (\d+) chunks embedded(, [\d.]+ chunks/s)?")


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_every_5s_tell_rates_and_time_left_after_the_first_second() -> None:
    stream, clock = io.StringIO(), Clock()
    with ProgressReporter(stream, clock=clock) as progress:
        for done in range(1, 41):
            clock.now += 0.5
            progress.update(done, 40, done * 3)
    assert stream.getvalue().splitlines() == [
        "indexing: 1/40 files, 3 chunks embedded",
        "indexing: 11/40 files, 33 chunks embedded, 2.0 files/s, 6.0 chunks/s, about 14s left",
        "indexing: 21/40 files, 63 chunks embedded, 2.0 files/s, 6.0 chunks/s, about 10s left",
        "indexing: 31/40 files, 93 chunks embedded, 2.0 files/s, 6.0 chunks/s, about 4s left",
        "indexing: 40/40 files, 120 chunks embedded, 2.0 files/s, 6.0 chunks/s, done in 20s",
    ]


def test_a_second_run_on_the_same_reporter_starts_a_new_clock() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = ProgressReporter(stream, clock=clock)
    clock.now += 100
    progress.update(10, 10, 10)  # a first run of 100 s
    clock.now += 3600  # idle, as `sai watch` is between runs
    clock.now += 4
    progress.update(2, 4, 8)
    assert stream.getvalue().splitlines()[-1] == \
        "indexing: 2/4 files, 8 chunks embedded"  # the new run's clock started at its first update
    clock.now += 2
    progress.update(4, 4, 16)
    assert stream.getvalue().splitlines()[-1] == \
        "indexing: 4/4 files, 16 chunks embedded, 2.0 files/s, 8.0 chunks/s, done in 2s"


def test_a_terminal_gets_one_bar_with_rate_and_time_left_ending_its_line() -> None:
    stream = TerminalStream()
    with ProgressReporter(stream) as progress:
        for done in range(1, 6):
            progress.update(done, 5, done * 4)
            time.sleep(0.12)  # past tqdm's redraw interval
    text = stream.getvalue()
    frames = [BAR.search(frame) for frame in text.split("\r") if frame.strip()]
    assert frames and all(frames), text
    assert frames[-1].group(1, 2, 4) == ("5", "5", "20") and frames[-1].group(5)
    assert re.search(r"\d\.\d+file/s", text) and "chunks/s" in text
    assert text.endswith("\n") and text.count("\n") == 1


def test_finish_ends_the_bar_so_other_lines_can_follow() -> None:
    stream = TerminalStream()
    progress = ProgressReporter(stream)
    progress.update(1, 2, 1)
    progress.finish()
    stream.write("watch: watching\n")
    progress.update(2, 2, 2)
    progress.finish()
    assert stream.getvalue().count("\n") == 3 and "\nwatch: watching\n" in stream.getvalue()


def test_disabled_draws_nothing_even_on_a_terminal() -> None:
    stream = TerminalStream()
    with ProgressReporter(stream, enabled=False) as progress:
        progress.update(1, 2, 1)
        progress.update(2, 2, 3)
    assert stream.getvalue() == ""


def test_sai_on_a_pseudo_terminal_shows_rate_and_time_left(tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "proj", many_functions(120, per_file=4))
    write_config(root, ollama_server.url)
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "sai"], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = _read_all(master)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, shown
    assert BAR.search(shown) and "30/30 files" in shown and "file/s" in shown, shown
    assert out.decode().startswith("indexed ")  # stdout is no terminal: the summary line only


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
