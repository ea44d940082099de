"""Is an indexed file still what the index holds? Size and mtime first, then content hash."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sai.models import FileRow, sha256_hex


def stale_keys(root: Path, stored: dict[str, FileRow], keys: Iterable[str]) -> set[str]:
    """The keys whose file changed or vanished since it was indexed."""
    return {key for key in set(keys) if _is_stale(root / key, stored.get(key))}


def _is_stale(path: Path, row: FileRow | None) -> bool:
    if row is None:
        return True
    try:
        info = path.stat()
    except OSError:
        return True
    if info.st_size == row.size and info.st_mtime_ns == row.mtime_ns:
        return False
    try:
        return sha256_hex(path.read_bytes().decode("utf-8")) != row.file_hash
    except (OSError, UnicodeDecodeError):
        return True
