"""Progress of long work on stderr: a tqdm bar with rates and time left on a terminal, sparse
plain lines otherwise (a log file, CI), nothing when disabled (--silent).

An index run has two stages (models.IndexProgress): reading files (seconds) and embedding the
stored chunks (most of a first run). Each gets its own bar and clock, so the rate and the time
left follow the work that takes the time. The plain lines keep the format scripts read
(`indexing: 12/40 files, 300 chunks embedded`), one at least every PLAIN_EVERY_S while work
goes on, with the rate and time left once a stage has run for a second.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

from sai.models import IndexProgress

PLAIN_EVERY_S = 5.0
RATES_AFTER_S = 1.0  # rates measured over less time than this say nothing
FILES_FORMAT = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} files "
                "[{elapsed}<{remaining}, {rate_fmt}]{postfix}")
CHUNKS_FORMAT = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} chunks embedded "
                 "[{elapsed}<{remaining}, {rate_fmt}]")


class ProgressReporter:
    """Receives IndexProgress steps and draws them; a context manager.

    One reporter may serve several runs (`sai watch`): a run that starts again from fewer
    files done, or with another total, starts a new bar and a new clock.
    """

    def __init__(self, stream: TextIO, *, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = enabled and stream.isatty()
        self.clock = clock
        self.started = clock()  # when the current stage began
        self.last: float | None = None  # when the last plain line was written
        self.stage = ""
        self.files = (0, 0)  # (done, total) of the run's reading stage
        self.bar: tqdm | None = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def finish(self) -> None:
        """End the bar's line on a terminal, so that other output can follow it."""
        self._close_bar()

    def update(self, step: IndexProgress) -> None:
        if not self.enabled:
            return
        if step.stage == "waiting":
            self._close_bar()
            self._write("indexing: another index run of this index is under way; waiting for it to finish")
            return
        if step.stage == "reading":
            if step.files_total == 0:
                return
            done, total = self.files
            if self.stage and (self.stage != "reading" or step.files_total != total or step.files_done < done):
                self.stage = ""  # another run (watch): its stage starts a new bar and clock
            self.files = (step.files_done, step.files_total)
        if step.stage != self.stage:
            self._begin(step.stage)
        if self.tty:
            self._draw(step)
        else:
            self._line(step)

    def _begin(self, stage: str) -> None:
        self._close_bar()
        self.stage = stage
        self.started = self.clock()
        self.last = None

    def _draw(self, step: IndexProgress) -> None:
        done, total = ((step.files_done, step.files_total) if step.stage == "reading"
                       else (step.chunks_embedded, max(step.chunks_to_embed, step.chunks_embedded)))
        if self.bar is None:
            self.bar = self._new_bar(step.stage, total)
        if step.stage == "reading" and step.chunks_embedded:  # a run that embeds as it reads
            self.bar.set_postfix_str(f"{step.chunks_embedded} chunks embedded", refresh=False)
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.bar.refresh()  # the last update may fall within mininterval

    def _new_bar(self, stage: str, total: int) -> tqdm:
        # A terminal that does not tell its size (a new pty) would get an empty bar: 100x20 then.
        sized = _columns(self.stream) > 0
        reading = stage == "reading"
        return tqdm(total=total, desc="indexing" if reading else "embedding", unit="file" if reading else "chunk",
                    file=self.stream, bar_format=FILES_FORMAT if reading else CHUNKS_FORMAT,
                    dynamic_ncols=sized, ncols=None if sized else 100, nrows=None if sized else 20,
                    mininterval=0.1, leave=True)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _line(self, step: IndexProgress) -> None:
        now = self.clock()
        finished = (step.files_done >= step.files_total if step.stage == "reading"
                    else step.chunks_embedded >= step.chunks_to_embed)
        if self.last is not None and now - self.last < PLAIN_EVERY_S and not finished:
            return
        self.last = now
        done, total = self.files
        elapsed = now - self.started
        if step.stage == "reading":
            line = f"indexing: {done}/{total} files"
            if step.chunks_embedded:  # a run that embeds as it reads (a store without pending vectors)
                line += f", {step.chunks_embedded} chunks embedded"
            if elapsed >= RATES_AFTER_S:
                line += f", {done / elapsed:.1f} files/s" + _left(done, total, elapsed)
        else:
            line = f"indexing: {done}/{total} files, {step.chunks_embedded}/{step.chunks_to_embed} chunks embedded"
            if elapsed >= RATES_AFTER_S:
                line += f", {step.chunks_embedded / elapsed:.1f} chunks/s"
                line += _left(step.chunks_embedded, step.chunks_to_embed, elapsed)
        self._write(line)

    def _write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


def _left(done: int, total: int, elapsed: float) -> str:
    if done >= total:
        return f", done in {_duration(elapsed)}"
    if not done:
        return ""
    return f", about {_duration((total - done) * elapsed / done)} left"


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's stream), or no size
        return 0


def _duration(seconds: float) -> str:
    """12s, 3m05s, 1h02m."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
