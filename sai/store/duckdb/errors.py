"""DuckDB's errors as SAI's: one-line StoreErrors naming the index file and the fix.

Every session of the DuckDB store runs inside `translate`; Ctrl-C inside a query becomes
KeyboardInterrupt (never lost: interrupts.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import duckdb

from sai.errors import StoreCorruptError, StoreError
from sai.store.duckdb import interrupts

# What DuckDB says of a file that is not whole: bad checksums, a foreign header, a truncated end.
DAMAGED = ("Corrupt", "corrupt", "not a valid DuckDB", "checksum", "Checksum", "Could not read enough bytes")


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


@contextlib.contextmanager
def translate(path: Path) -> Iterator[None]:
    """Database errors raised in the block as one-line StoreErrors; Ctrl-C as KeyboardInterrupt
    (never lost inside a query: interrupts.py)."""
    try:
        with interrupts.kept():
            yield
    except duckdb.InterruptException as exc:
        raise KeyboardInterrupt from exc
    except duckdb.Error as exc:
        raise describe(exc, path) from exc
    except RuntimeError as exc:  # how DuckDB's client reports a Ctrl-C it stopped a query for
        if str(exc).strip().lower() == "query interrupted":
            raise KeyboardInterrupt from exc
        raise


def describe(exc: duckdb.Error, path: Path) -> StoreError:
    """The StoreError a database error means for the user, with the fix."""
    text = str(exc)
    line = first_line(exc)
    if "No space left" in text or "disk full" in text.lower():
        return StoreError(f"no space left on the disk holding the index {path}; free some space "
                          "and run the command again (committed batches are kept)")
    if any(s in text for s in DAMAGED):
        return StoreCorruptError(f"the index file {path} is damaged ({line}); rebuild it with "
                                 f"`sai --recreate`, which keeps the damaged file as {path}.damaged")
    if isinstance(exc, duckdb.IOException | duckdb.PermissionException):
        return StoreError(f"cannot use the index {path}: {line}; check the path and its "
                          "permissions, or set duckdb.path")
    return StoreError(f"the index {path} failed: {line}; run `sai` again, or rebuild it with "
                      "`sai --recreate` if it keeps failing")
