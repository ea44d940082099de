"""What search and find_similar share: the filters a question names, a row as a hit, and the
order of equal scores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sai.models import ChunkRow, Hit
from sai.source.globs import compile_glob
from sai.source.languages import canonical_language
from sai.store import IndexReader, Scope


@dataclass(frozen=True)
class Filters:
    """A question's language and glob; the glob is compiled when they are given, so a bad one
    fails before the index is read or a model loaded."""

    language: str | None
    path_glob: str | None
    matches: Callable[[str], bool] | None

    @classmethod
    def of(cls, *, language: str | None, path_glob: str | None) -> Filters:
        return cls(language, path_glob, compile_glob(path_glob) if path_glob else None)

    def scope(self, reader: IndexReader) -> Scope:
        """The chunks a filtered question is about: a language and the indexed keys the glob passes."""
        name = canonical_language(self.language) if self.language else None
        if self.matches is None or not self.path_glob:
            return Scope(name)
        matches = self.matches
        return Scope(name, frozenset(key for key in reader.files() if matches(key)))


def best_first(score: float, row: ChunkRow) -> tuple[float, str, int, int]:
    """Higher scores first; equal ones (to 1e-6: backends round vectors differently) by place,
    so every backend orders ties alike whatever ids it gave the chunks."""
    return -round(score, 6), row.path, row.start_line, row.end_line


def hit_of(row: ChunkRow, *, stale: bool) -> Hit:
    return Hit(
        path=row.path, start_line=row.start_line, end_line=row.end_line, symbol=row.symbol,
        score=float(row.score), text=row.text, language=row.language, stale=stale, chunk_id=row.chunk_id,
    )
