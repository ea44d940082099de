"""Ctrl-C around DuckDB calls: never lost, always KeyboardInterrupt.

DuckDB's Python client looks for signals while a query runs. When a Ctrl-C came, it stops the
query and raises RuntimeError('Query interrupted') (or duckdb.InterruptException) in place of
the KeyboardInterrupt; when the query finished first, it drops the KeyboardInterrupt altogether,
and the Ctrl-C is ignored (6 of 8 SIGINTs sent to a loop of short queries). So while a block of
DuckDB calls runs in the main thread (the one Python signal handlers run in), SIGINT is also
noted here, and the block ends in KeyboardInterrupt whenever one came.

A Ctrl-C can also land while the block runs a callback whose exceptions Python cannot raise (a
weak reference's, a `__del__`): the KeyboardInterrupt is then printed as "Exception ignored in …"
with a traceback, and dropped. It was noted, so the block still ends in KeyboardInterrupt; while
the block runs, such a dropped KeyboardInterrupt is not printed.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Run the block; a Ctrl-C during it ends it in KeyboardInterrupt, whatever DuckDB did."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield  # no handler of Python's runs here: nothing to note
        return
    came: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        came.append(signum)
        previous(signum, frame)  # Python's own handler raises KeyboardInterrupt

    unraisable = sys.unraisablehook

    def quiet(failure: sys.UnraisableHookArgs) -> None:
        if not (came and issubclass(failure.exc_type, KeyboardInterrupt)):
            unraisable(failure)

    signal.signal(signal.SIGINT, note)
    sys.unraisablehook = quiet
    try:
        yield
    except BaseException as exc:
        # a block never left (a Ctrl-C inside contextlib's own code) is closed by the collector:
        # its GeneratorExit goes through, the KeyboardInterrupt already went its way
        if came and not isinstance(exc, (KeyboardInterrupt, GeneratorExit)):
            raise KeyboardInterrupt from exc
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = unraisable
    if came:
        raise KeyboardInterrupt

