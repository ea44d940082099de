"""What the command line says and does when Ctrl-C ends a command."""

from __future__ import annotations

import signal
import sys
import threading

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
