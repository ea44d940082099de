"""How the command line ends when its run is cut short (Ctrl-C, a closed stdout), and where
its log lines go."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

from sai.errors import redact
from sai.output.render import printable

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
