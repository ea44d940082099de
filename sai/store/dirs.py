"""The directory an index lives in: made with a `.gitignore` that ignores all of it.

An index is a cache of the tree (rebuilt by `sai`), so `git add -A` in an indexed project must
not pick up the index file and its lock files, as tools that keep caches in a project do.
Only a directory this creates gets the file: one the user chose and already had is theirs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

IGNORE_ALL = "# made by sai: the index is rebuilt by `sai`, never committed\n*\n"


def make_index_dir(path: Path) -> None:
    """Create `path` (and its parents) when missing, with a `.gitignore` of `*`; OSError as is."""
    if path.is_dir():
        return
    path.mkdir(parents=True, exist_ok=True)
    (path / ".gitignore").write_text(IGNORE_ALL, encoding="utf-8")


def fsync_path(path: Path) -> None:
    """Flush a file's or a directory's entry to disk (a directory: so a rename in it survives a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_synced(path: Path, write: Callable[[BinaryIO], object], *, aside: Path | None = None) -> None:
    """Make `path` what `write` writes: written aside, fsynced, renamed over it, the directory
    fsynced. A process killed anywhere leaves the old file or the new one whole, and at worst the
    file aside."""
    aside = aside or path.with_name(path.name + ".new")
    with open(aside, "wb") as out:
        write(out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(aside, path)
    fsync_path(path.parent)
