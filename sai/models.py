"""Data that crosses module boundaries: frozen dataclasses only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path


def sha256_hex(data: str | bytes) -> str:
    """Hex SHA-256 of text (UTF-8) or bytes; the content hash used across SAI."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SourceFile:
    """A file the walker accepted: its key (root-relative, '/'-separated) and facts."""

    key: str
    path: Path
    language: str | None
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Chunk:
    """A piece of a file that gets one embedding. Lines are 1-based and inclusive."""

    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str | None = None
    language: str | None = None

    @property
    def content_hash(self) -> str:
        return sha256_hex(self.text)


@dataclass(frozen=True)
class Hit:
    """One search or similarity result."""

    path: str
    start_line: int
    end_line: int
    symbol: str | None
    score: float
    text: str
    language: str | None = None
    stale: bool = False
    rank: int | None = None
    score_kind: str = "cosine"


@dataclass(frozen=True)
class ClusterMember:
    path: str
    start_line: int
    end_line: int
    symbol: str | None


@dataclass(frozen=True)
class Cluster:
    """A group of near-duplicate chunks joined by edges of similarity >= min_score."""

    members: tuple[ClusterMember, ...]
    min_sim: float
    max_sim: float

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class IndexStatus:
    backend: str
    collection: str
    model: str | None
    vector_dim: int | None
    chunk_count: int
    chunker: str | None
    embedder: str | None = None
    file_count: int = 0
    indexed_at: str | None = None
    stale_files: int | None = None
    languages: dict[str, int] = field(default_factory=dict)  # chunks per language name held


@dataclass(frozen=True)
class IndexReport:
    """What an index run did; counts refer to the walked files."""

    chunks: int
    files: int
    skipped: int
    embedded: int
    unchanged: int
    removed: int


@dataclass(frozen=True)
class PathResult:
    """Per-path outcome of refresh/sync: re-indexed with n chunks, or removed with a reason."""

    path: str
    chunks: int | None = None
    removed_reason: str | None = None


@dataclass(frozen=True)
class RefreshReport:
    """What refresh/sync did; `not_found`: keys neither on disk nor in the index (a typo)."""

    refreshed: tuple[PathResult, ...] = field(default_factory=tuple)
    removed: tuple[PathResult, ...] = field(default_factory=tuple)
    not_found: tuple[str, ...] = field(default_factory=tuple)
