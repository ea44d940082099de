"""How the command line ends when its run is cut short (Ctrl-C, a closed stdout), and where
its log lines go."""

from __future__ import annotations

import _thread
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

from sai.errors import redact
from sai.output.render import printable

REDELIVER_S = 0.05  # after this long the hook that dropped a Ctrl-C has returned
BATCHES_KEPT = "interrupted; finished batches are kept — run `sai` again to complete the index"


def interrupted(*, writes_batches: bool) -> int:
    """Say so in one line (an index run keeps its finished batches) and return exit code 130.

    From here on a second Ctrl-C ends the process at once: what is left is the interpreter's
    exit, and its handlers would print tracebacks for a KeyboardInterrupt.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    print(f"error: {BATCHES_KEPT if writes_batches else 'interrupted'}", file=sys.stderr)
    return 130


@contextlib.contextmanager
def interrupts_redelivered() -> Iterator[None]:
    """While the block runs, a Ctrl-C is never lost to a callback Python cannot raise from.

    A KeyboardInterrupt raised in a weak reference's callback, a `__del__` or a generator the
    collector closes is printed as "Exception ignored in …" with a traceback, and dropped: the
    run went on as if no Ctrl-C had come. Here it is delivered to the main thread once more
    (`_thread.interrupt_main`, as if the signal came again), which stops at its next step. It
    is sent from another thread a moment later: sent from the hook, it would be raised in the
    hook itself, and dropped again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = sys.unraisablehook

    def redeliver(failure: sys.UnraisableHookArgs) -> None:
        if issubclass(failure.exc_type, KeyboardInterrupt):
            later = threading.Timer(REDELIVER_S, _thread.interrupt_main)
            later.daemon = True
            later.start()
        else:
            previous(failure)

    sys.unraisablehook = redeliver
    try:
        yield
    finally:
        sys.unraisablehook = previous


def log_to_stderr(*, verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrintableFormatter("sai: %(message)s"))
    logging.basicConfig(handlers=[handler], level=logging.DEBUG if verbose else logging.WARNING)
    for noisy in ("httpx", "httpcore", "urllib3", "sentence_transformers", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class _PrintableFormatter(logging.Formatter):
    """Log lines name files: their control characters are shown escaped, as in every output;
    and whatever a library logs, no secret shows (sai/errors.py `redact`)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return printable(super().formatMessage(record))

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def reader_gone() -> int:
    """stdout's reader went away (`sai --json | head -c 10`): stop quietly, as `cat` does.

    stdout is pointed at /dev/null so that the flush at exit cannot fail again (the recipe of
    the Python docs, "Note on SIGPIPE"); 141 is what a shell reports for a tool ended by SIGPIPE.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass
    return 141
