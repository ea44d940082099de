"""Children that a test stops with SIGINT, as a terminal's Ctrl-C does.

A shell starts a background job (`make test &`) with SIGINT ignored, and a child inherits that:
its Python then installs no KeyboardInterrupt handler and the test's SIGINT does nothing. Every
test that sends SIGINT to a child starts it with `preexec_fn=default_sigint`.
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """In the child, between fork and exec: SIGINT back to its default action."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
