"""Every chunk's row without its text, in memory per index token: what ranking reads per query.

Hybrid search reads the candidates' rows (path, lines, symbol, kind, ...) after scoring; asking
DuckDB for 60 ids scanned those columns of the whole table (~35-60 ms at 78-100k chunks on the
busy test machine). This copy costs one read per token (the value every write of chunk rows
replaces, store/vectors.py) and ~15 MB at 100k chunks; a look-up is a binary search and an
Arrow take.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sai.models import ChunkRow


@dataclass(frozen=True)
class RowTable:
    """The rows of CHUNK_COLS with an empty text, sorted by id."""

    token: str
    ids: np.ndarray  # int64, sorted
    table: pa.Table

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> RowTable:
        return cls(token=token, ids=table.column("id").to_numpy().astype(np.int64), table=table)

    def rows(self, ids: Iterable[int], build: Callable[[pa.Table], list[ChunkRow]]) -> list[ChunkRow]:
        """The rows of these ids in the order given (ids not held are left out); `build` turns
        an Arrow slice into ChunkRows."""
        wanted = np.asarray(list(ids), dtype=np.int64)
        if not len(self.ids) or not len(wanted):
            return []
        at = np.searchsorted(self.ids, wanted).clip(max=len(self.ids) - 1)
        at = at[self.ids[at] == wanted]
        # one-row slices, not table.take(), which imports pyarrow.compute (0.1-0.3 s of a cold query)
        slices = [self.table.slice(int(row), 1) for row in at]
        return build(pa.concat_tables(slices) if slices else self.table.slice(0, 0))
