"""Exact nearest neighbours over an in-memory copy of a collection's vectors.

Why not DuckDB's HNSW index (vss), which SAI used up to index format 3 (docs/design.md, "Vector
search"): its graph is rewritten into the file on every commit and the old space is never reused
(25 one-line refreshes took a 12.6 MB index to 134 MB), it keeps deleted rows (recall fell after
refreshes), it cannot search a filtered subset (filters ran after a global top 50), its build at
the end of a run was the longest step of indexing, and concurrent scans crashed a server. An
exact scan of a float32 matrix in numpy costs 2.7 ms at 20,000 x 384 and 8.2 ms at 80,000 (the
same scan inside DuckDB: 34 ms and 176 ms), is always exact, filters by a mask, and leaves
nothing derived in the file.

A chunk may have no vector yet (a first index run stores chunks first and embeds them after):
its row is in the table, for the masks of filtered lexical search, but no scan or cosine sees it.

A process loads the matrix once per index *token* (a value every write transaction that changes
chunks replaces) and shares it between threads; loading costs ~55 ms at 20,000 chunks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sai.store.duckdb.rows import matrix_of


@dataclass(frozen=True)
class VectorTable:
    """Every chunk's id, file, language and vector, row-aligned and read-only."""

    token: str
    ids: np.ndarray  # int64
    matrix: np.ndarray  # float32 (n, d), rows L2-normalised
    paths: tuple[str, ...]  # distinct paths; path_of indexes into it
    path_of: np.ndarray  # int32 per row
    languages: tuple[str | None, ...]
    language_of: np.ndarray  # int32 per row
    present: np.ndarray | None = None  # bool per row: has its vector (None: every row has)

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> VectorTable:
        """From a result with columns id, path, language, embedding, in any order (rows by id)."""
        ids = table.column("id").to_numpy()
        if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():
            table = table.take(np.argsort(ids, kind="stable"))
        paths, path_of = _encoded(table.column("path"))
        languages, language_of = _encoded(table.column("language"))
        column = table.column("embedding").combine_chunks()
        present = _valid(column) if column.null_count else None
        matrix = matrix_of(table.column("embedding")) if table.num_rows else np.zeros((0, 0), np.float32)
        if present is not None:
            matrix[~present] = 0.0  # a null's slots hold anything
        return cls(
            token=token,
            ids=table.column("id").to_numpy().astype(np.int64),  # sorted above
            matrix=np.ascontiguousarray(matrix),
            paths=paths,
            path_of=path_of,
            languages=languages,
            language_of=language_of,
            present=present,
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def vectors(self) -> int:
        """How many rows have their vector."""
        return len(self.ids) if self.present is None else int(self.present.sum())

    def mask(self, *, language: str | None = None, paths: Iterable[str] | None = None) -> np.ndarray | None:
        """Rows of this language and among these paths; None when nothing is filtered."""
        if language is None and paths is None:
            return None
        keep = np.ones(len(self.ids), dtype=bool)
        if language is not None:
            codes = [k for k, name in enumerate(self.languages) if name == language]
            keep &= np.isin(self.language_of, codes)
        if paths is not None:
            wanted = set(paths)
            codes = [k for k, path in enumerate(self.paths) if path in wanted]
            keep &= np.isin(self.path_of, codes)
        return keep

    def nearest(
        self, vector: np.ndarray, limit: int, *, mask: np.ndarray | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the `limit` rows closest to `vector`, best first (ties by id)."""
        if not len(self.ids) or limit <= 0 or self.vectors == 0:
            return []
        if self.present is not None:
            mask = self.present if mask is None else mask & self.present
        scores = self.matrix @ np.asarray(vector, dtype=np.float32)
        rows = np.arange(len(self.ids)) if mask is None else np.flatnonzero(mask)
        if exclude is not None:
            rows = rows[self.ids[rows] != exclude]
        if len(rows) > limit:
            part = scores[rows]
            rows = rows[np.argpartition(-part, limit - 1)[:limit]]
        order = np.lexsort((self.ids[rows], -scores[rows]))
        rows = rows[order]
        return [(int(i), float(s)) for i, s in zip(self.ids[rows], scores[rows], strict=True)]

    def cosines(self, ids: Iterable[int], vector: np.ndarray) -> dict[int, float]:
        """Cosine of each of these chunks to `vector` (ids not held are left out)."""
        wanted = np.asarray(list(ids), dtype=np.int64)
        rows = np.searchsorted(self.ids, wanted).clip(max=max(len(self.ids) - 1, 0))
        if not len(self.ids):
            return {}
        held = self.ids[rows] == wanted
        if self.present is not None:
            held &= self.present[rows]
        if not held.any():
            return {}
        scores = self.matrix[rows[held]] @ np.asarray(vector, dtype=np.float32)
        return {int(i): float(s) for i, s in zip(wanted[held], scores, strict=True)}

    def vector_of(self, chunk_id: int) -> np.ndarray | None:
        row = int(np.searchsorted(self.ids, chunk_id))
        if row < len(self.ids) and self.ids[row] == chunk_id and (self.present is None or self.present[row]):
            return self.matrix[row]
        return None


# Both in numpy rather than pyarrow's dictionary_encode and is_valid, which load pyarrow.compute
# (0.1-0.3 s of a cold `sai --query-only`).
def _encoded(column: pa.ChunkedArray) -> tuple[tuple[str, ...], np.ndarray]:
    """The distinct values in order of first appearance, and each row's as an int32 code (a null,
    a chunk without a language: -1)."""
    codes: dict[str, int] = {}
    rows = [-1 if value is None else codes.setdefault(value, len(codes)) for value in column.to_pylist()]
    return tuple(codes), np.array(rows, dtype=np.int32)


def _valid(column: pa.Array) -> np.ndarray:
    """Per row: not null (from the validity bitmap)."""
    bits = np.frombuffer(column.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little")[column.offset:column.offset + len(column)].astype(bool)
