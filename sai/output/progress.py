"""Progress of long work on stderr: a tqdm bar with rates and time left on a terminal, sparse
plain lines otherwise (a log file, CI), nothing when disabled (--silent).

The plain lines keep the format scripts read (`indexing: 12/40 files, 300 chunks embedded`);
once a run has taken a second they go on with its rates and the time left.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

PLAIN_EVERY_S = 5.0
RATES_AFTER_S = 1.0  # rates measured over less time than this say nothing
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} files [{elapsed}<{remaining}, {rate_fmt}]{postfix}"


class ProgressReporter:
    """Receives (files done, files to do, chunks embedded) and draws it; a context manager.

    One reporter may serve several runs (`sai watch`): a run that starts again from fewer
    files done, or with another total, starts a new bar and a new clock.
    """

    def __init__(self, stream: TextIO, *, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = enabled and stream.isatty()
        self.clock = clock
        self.started = clock()
        self.last: float | None = None  # when the last plain line was written
        self.done = 0
        self.total = 0
        self.bar: tqdm | None = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def finish(self) -> None:
        """End the bar's line on a terminal, so that other output can follow it."""
        self._close_bar()

    def update(self, done: int, total: int, embedded: int) -> None:
        if not self.enabled or total == 0:
            return
        if total != self.total or done < self.done:
            self._new_run(total)
        self.done = done
        if self.tty:
            self._draw(done, total, embedded)
        else:
            self._line(done, total, embedded)

    def _new_run(self, total: int) -> None:
        if self.total:  # a run before this one: its clock and bar end here
            self.started = self.clock()
            self.last = None
        self._close_bar()
        self.total = total

    def _draw(self, done: int, total: int, embedded: int) -> None:
        elapsed = self.clock() - self.started
        rate = f", {embedded / elapsed:.1f} chunks/s" if elapsed > 0 else ""
        postfix = f"{embedded} chunks embedded{rate}"
        if self.bar is None:
            self.bar = self._new_bar(total, postfix)
        self.bar.set_postfix_str(postfix, refresh=False)
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.bar.refresh()  # the last update may fall within mininterval

    def _new_bar(self, total: int, postfix: str) -> tqdm:
        # A terminal that does not tell its size (a new pty) would get an empty bar: 100x20 then.
        sized = _columns(self.stream) > 0
        return tqdm(total=total, desc="indexing", unit="file", file=self.stream, postfix=postfix,
                    bar_format=BAR_FORMAT, dynamic_ncols=sized, ncols=None if sized else 100,
                    nrows=None if sized else 20, mininterval=0.1, leave=True)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _line(self, done: int, total: int, embedded: int) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < PLAIN_EVERY_S and done < total:
            return
        self.last = now
        line = f"indexing: {done}/{total} files, {embedded} chunks embedded"
        elapsed = now - self.started
        if elapsed >= RATES_AFTER_S:
            line += f", {done / elapsed:.1f} files/s, {embedded / elapsed:.1f} chunks/s"
            line += f", done in {_duration(elapsed)}" if done >= total else \
                f", about {_duration((total - done) * elapsed / max(done, 1))} left"
        self.stream.write(line + "\n")
        self.stream.flush()


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
