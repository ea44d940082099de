"""Every chunk's row without its text, per index token: what ranking reads per query.

Hybrid search reads the candidates' rows (path, lines, symbol, kind, ...) after scoring; asking
DuckDB for 60 ids scanned those columns of the whole table (~35-60 ms at 78-100k chunks on the
busy test machine). This copy costs one read per token (the value every write of chunk rows
replaces) and ~15 MB at 100k chunks; a look-up is a binary search and an Arrow slice. The rows
read whole are mapped from a file other processes map too (copies.py); a write's new token
patches the copy with the rows it changed (store/patched.py), which leaves them as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from sai.models import ChunkRow
from sai.store.patched import Patched


@dataclass(frozen=True)
class Rows:
    """The rows of CHUNK_COLS with an empty text, sorted by id."""

    ids: np.ndarray  # int64, sorted
    table: pa.Table

    @classmethod
    def of(cls, table: pa.Table) -> Rows:
        return cls(ids=table.column("id").to_numpy().astype(np.int64), table=table)

    def taken(self, keep: np.ndarray) -> Rows:
        return Rows(self.ids[keep], self.table.filter(pa.array(keep)))

    def joined(self, others: Sequence[Rows]) -> Rows:
        table = pa.concat_tables([self.table, *(o.table.cast(self.table.schema) for o in others)])
        ids = table.column("id").to_numpy().astype(np.int64)
        order = np.argsort(ids, kind="stable")
        return Rows(ids[order], table.take(pa.array(order)).combine_chunks() if len(ids) else table)


class RowTable(Patched[Rows]):
    """The rows read whole plus a patch, looked up by id."""

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> RowTable:
        return cls(token=token, base=Rows.of(table))

    def rows(self, ids: Iterable[int], build: Callable[[pa.Table], list[ChunkRow]]) -> list[ChunkRow]:
        """The rows of these ids in the order given (ids not held are left out); `build` turns
        an Arrow slice into ChunkRows."""
        wanted = np.asarray(list(ids), dtype=np.int64)
        found = self.where(wanted)[::-1]  # the rows written since first: an id written again is there
        # one-row slices, not table.take(), which imports pyarrow.compute (0.1-0.3 s of a cold query)
        slices = []
        for k in range(len(wanted)):
            held = next(((part, int(at[k])) for part, at in found if at[k] >= 0), None)
            if held is not None:
                slices.append(held[0].table.slice(held[1], 1))
        return build(pa.concat_tables(slices) if slices else self.base.table.slice(0, 0))
