"""The vocabulary of failures SAI reports. Each message is one sentence with the fix.

Each class carries what the front ends answer with: `exit_code` for the CLI (1: an error the user
can act on, 2: bad usage) and `rpc_code` for MCP (-32602: the caller's mistake, -32603: a
failure while running).

Secrets never appear in a message or a log line: `redact` hides the ones a front end registered
with `keep_secret` (the Qdrant API key, the HTTP bearer token), any passed to it, and any value
written as `Bearer …` or `api-key=…` (`api_key: …`, `"api-key": "…"`), whatever a server echoed.
"""

import re
from collections.abc import Iterable

_SECRET_VALUE = re.compile(r"""(?i)(\bbearer\s+|\bapi[-_ ]?key["']?\s*[:=]\s*["']?)[^\s"'&,;<>]+""")
_KEPT: set[str] = set()
HIDDEN = "***"

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SHOWN_CHARS = 200  # how much of a caller's value a message quotes (a 5,000-character path is not read)


class SaiError(Exception):
    """A problem the user can act on; front ends print it as one line."""

    exit_code = 1
    rpc_code = INTERNAL_ERROR


class ConfigError(SaiError):
    """The configuration file, an environment variable or a flag is invalid."""


class UsageError(SaiError):
    """A call's arguments are wrong or missing (CLI exit 2, MCP -32602)."""

    exit_code = 2
    rpc_code = INVALID_PARAMS


class OutsideRootError(SaiError):
    """A path points outside the project root (the caller's mistake: MCP -32602)."""

    rpc_code = INVALID_PARAMS


class NotFoundError(SaiError):
    """The requested chunk or location is not in the index (MCP -32602)."""

    rpc_code = INVALID_PARAMS


class EmbedderError(SaiError):
    """The embedding model could not be reached, loaded or run."""


class StoreError(SaiError):
    """The index file could not be opened, read or written."""


class StoreLockedError(StoreError):
    """Another process held the index file for longer than the wait allows."""


class StoreCorruptError(StoreError):
    """The index file is damaged; only rebuilding it helps."""


class IndexMismatchError(StoreError):
    """The index was built with another model, dimension, chunker or schema."""


class ReadOnlyError(UsageError):
    """A write was asked of a read-only server."""


class GlobError(UsageError):
    """A glob (`path_glob`, `include`, `exclude`) cannot be read; `reason` says why."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"invalid path_glob: {shown(pattern)}: {reason}")
        self.pattern = pattern
        self.reason = reason


def keep_secret(value: str | None) -> None:
    """Remember `value` (a key or token) so that `redact` hides it from every message."""
    if value:
        _KEPT.add(value)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every kept secret, each of `secrets` and any Bearer or api-key value hidden."""
    for secret in sorted({*_KEPT, *(s for s in secrets if s)}, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return _SECRET_VALUE.sub(lambda m: m.group(1) + HIDDEN, text)


def shown(value: str, limit: int = SHOWN_CHARS) -> str:
    """`value` as a message quotes it: cut to `limit` characters, saying how long it was."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({len(value):,} characters)"
