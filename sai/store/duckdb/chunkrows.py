"""Every chunk's row without its text, in memory per index token: what ranking reads per query.

Hybrid search reads the candidates' rows (path, lines, symbol, kind, ...) after scoring; asking
DuckDB for 60 ids scanned those columns of the whole table (~35-60 ms at 78-100k chunks on the
busy test machine). This copy costs one read per token (the value every write of chunk rows
replaces, store/vectors.py) and ~15 MB at 100k chunks; a look-up is a binary search and an
Arrow take. A write's new token patches the copy with the rows it changed (`patched`).
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

    def patched(self, token: str, removed: np.ndarray, added: pa.Table) -> RowTable:
        """This table without the `removed` ids, with the `added` rows (same columns, by id)."""
        table, ids = self.table, self.ids
        if len(removed):
            keep = ~np.isin(ids, removed)
            table, ids = table.filter(pa.array(keep)), ids[keep]
        if not added.num_rows:
            return RowTable(token=token, ids=ids, table=table)
        new_ids = added.column("id").to_numpy().astype(np.int64)
        table = pa.concat_tables([table, added.cast(table.schema)])
        ids = np.concatenate([ids, new_ids])
        if len(ids) > len(new_ids) and new_ids[0] <= ids[len(ids) - len(new_ids) - 1]:  # an id handed out again
            order = np.argsort(ids, kind="stable")
            table, ids = table.take(pa.array(order)), ids[order]
        if table.column(0).num_chunks > 16:
            table = table.combine_chunks()
        return RowTable(token=token, ids=ids, table=table)

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
