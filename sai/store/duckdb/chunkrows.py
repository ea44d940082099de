"""Every chunk's row without its text, per index token: what ranking reads per query.

Hybrid search reads the candidates' rows (path, lines, symbol, kind, ...) after scoring; asking
DuckDB for 60 ids scanned those columns of the whole table (~35-60 ms at 78-100k chunks on the
busy test machine). This copy costs one read per token (the value every write of chunk rows
replaces, store/vectors.py) and ~15 MB at 100k chunks; a look-up is a binary search and an
Arrow slice. The rows read whole are mapped from a file other processes map too
(store/duckdb/copies.py); a write's new token patches the copy with the rows it changed
(`patched`), which leaves the rows read whole as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from sai.models import ChunkRow


@dataclass(frozen=True)
class RowTable:
    """The rows of CHUNK_COLS with an empty text, sorted by id; after patches, the rows `alive`
    keeps of them and the rows written since (`added`), so a table mapped from a shared file
    (store/duckdb/copies.py) is never copied by a patch."""

    token: str
    ids: np.ndarray  # int64, sorted
    table: pa.Table
    alive: np.ndarray | None = None  # bool per row: still in the index (None: every row)
    added: RowTable | None = None  # the rows written since these were read, sorted by id

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> RowTable:
        return cls(token=token, ids=table.column("id").to_numpy().astype(np.int64), table=table)

    def __len__(self) -> int:
        own = len(self.ids) if self.alive is None else int(np.count_nonzero(self.alive))
        return own + (0 if self.added is None else len(self.added))

    def patched(self, token: str, removed: np.ndarray, added: pa.Table) -> RowTable:
        """This table without the `removed` ids, with the `added` rows (same columns, by id)."""
        alive = np.ones(len(self.ids), bool) if self.alive is None else self.alive.copy()
        if len(removed):
            alive &= ~np.isin(self.ids, removed)
        parts = [added.cast(self.table.schema)]
        if self.added is not None:
            kept = ~np.isin(self.added.ids, removed)
            parts.insert(0, self.added.table.filter(pa.array(kept)))
        table = pa.concat_tables(parts)
        ids = table.column("id").to_numpy().astype(np.int64)
        order = np.argsort(ids, kind="stable")
        table = table.take(pa.array(order)).combine_chunks() if len(ids) else table
        return replace(self, token=token, alive=alive, added=RowTable(token=token, ids=ids[order], table=table))

    def _where(self, wanted: np.ndarray) -> np.ndarray:
        """The row of each wanted id in this table's own rows (-1: not held, or not alive)."""
        at = np.full(len(wanted), -1, np.int64)
        if not len(self.ids):
            return at
        found = np.searchsorted(self.ids, wanted).clip(max=len(self.ids) - 1)
        hit = self.ids[found] == wanted
        if self.alive is not None:
            hit &= self.alive[found]
        at[hit] = found[hit]
        return at

    def rows(self, ids: Iterable[int], build: Callable[[pa.Table], list[ChunkRow]]) -> list[ChunkRow]:
        """The rows of these ids in the order given (ids not held are left out); `build` turns
        an Arrow slice into ChunkRows."""
        wanted = np.asarray(list(ids), dtype=np.int64)
        own = self._where(wanted)
        later = self.added._where(wanted) if self.added is not None else np.full(len(wanted), -1)
        # one-row slices, not table.take(), which imports pyarrow.compute (0.1-0.3 s of a cold query)
        slices = [self.added.table.slice(int(b), 1) if b >= 0 else self.table.slice(int(a), 1)  # type: ignore[union-attr]
                  for a, b in zip(own, later, strict=True) if a >= 0 or b >= 0]
        return build(pa.concat_tables(slices) if slices else self.table.slice(0, 0))
