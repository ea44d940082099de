"""Progress of long work on stderr: a bar on a terminal, sparse plain lines otherwise."""

from __future__ import annotations

import time
from typing import TextIO

PLAIN_EVERY_S = 5.0
BAR_WIDTH = 28


class ProgressReporter:
    """Receives (files done, files to do, chunks embedded) and draws it; a context manager."""

    def __init__(self, stream: TextIO, *, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = enabled and stream.isatty()
        self.started = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()

    def update(self, done: int, total: int, embedded: int) -> None:
        if not self.enabled or total == 0:
            return
        now = time.monotonic()
        finished = done >= total
        if self.tty:
            if now - self.last < 0.1 and not finished:
                return
            filled = int(BAR_WIDTH * done / total)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            self.stream.write(f"\r[{bar}] {done}/{total} files, {embedded} chunks embedded, "
                              f"{now - self.started:.0f}s")
            self.drawn = True
        elif now - self.last >= PLAIN_EVERY_S or finished:
            self.stream.write(f"indexing: {done}/{total} files, {embedded} chunks embedded\n")
        else:
            return
        self.last = now
        self.stream.flush()
