"""Every chunk's shape signature by id (sai/text/shape.py): what `sai impact` finds the copies
of a changed unit by, without reading every chunk's row (0.6 s at 100,000 chunks).

A store answers `IndexReader.shapes()` with one; the DuckDB store holds it as a derived copy
per index token (store/duckdb/copies.py: mapped from a shared file, patched by the chunks a
write changed), the others build it from `all_chunks`. A patch leaves the rows read whole as
they are (a mapped file is never copied): it masks the ones changed since (`alive`) and holds
the rows written since apart (`added`). The signatures are held a minimum per row of `columns`
(one row per hash function): comparing one signature with 100,000 takes 1.5 ms so, 6 ms a
signature per row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sai.text import shape


@dataclass(frozen=True)
class ShapeTable:
    """Chunk ids (sorted), their signatures and element counts (0: no shape)."""

    token: str
    ids: np.ndarray  # int64, sorted
    columns: np.ndarray  # uint32 (shape.SIGNATURE_SIZE, n): column k holds the ids' k-th minima
    sizes: np.ndarray  # uint32 (n,)
    alive: np.ndarray | None = None  # bool per row: still in the index (None: every row)
    added: ShapeTable | None = None  # the rows written since these were read, sorted by id

    @classmethod
    def of_blobs(cls, token: str, ids: np.ndarray, blobs: list[bytes | None]) -> ShapeTable:
        """From stored signatures (shape.signature's bytes; None or another version's: no shape)."""
        ids = np.asarray(ids, dtype=np.int64)
        sigs, sizes, known = shape.signatures(blobs)
        sizes[~known] = 0
        order = np.argsort(ids, kind="stable")
        return cls(token=token, ids=ids[order], columns=np.ascontiguousarray(sigs[order].T), sizes=sizes[order])

    def __len__(self) -> int:
        own = len(self.ids) if self.alive is None else int(np.count_nonzero(self.alive))
        return own + (0 if self.added is None else len(self.added))

    def patched(self, token: str, removed: np.ndarray, added: ShapeTable) -> ShapeTable:
        """This table without the `removed` ids, with the `added` rows."""
        alive = np.ones(len(self.ids), bool) if self.alive is None else self.alive.copy()
        alive &= ~np.isin(self.ids, removed)
        parts = [added]
        if self.added is not None:
            kept = ~np.isin(self.added.ids, removed)
            parts.insert(0, ShapeTable(token, self.added.ids[kept], self.added.columns[:, kept],
                                       self.added.sizes[kept]))
        ids = np.concatenate([p.ids for p in parts])
        order = np.argsort(ids, kind="stable")
        later = ShapeTable(token, ids[order], np.concatenate([p.columns for p in parts], axis=1)[:, order],
                           np.concatenate([p.sizes for p in parts])[order])
        return replace(self, token=token, alive=alive, added=later)

    def of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The signatures and element counts of these ids (a count of 0: no shape, or not held)."""
        wanted = np.asarray(ids, dtype=np.int64)
        sigs = np.zeros((len(wanted), shape.SIGNATURE_SIZE), np.uint32)
        sizes = np.zeros(len(wanted), np.uint32)
        for part, at in self._where(wanted):
            hit = at >= 0
            sigs[hit], sizes[hit] = part.columns[:, at[hit]].T, part.sizes[at[hit]]
        return sigs, sizes

    def alike(self, sig: np.ndarray, at_least: float) -> tuple[np.ndarray, np.ndarray]:
        """The ids of every shaped row whose shape similarity to `sig` is at least `at_least`, with it."""
        found_ids, found_sims = [np.zeros(0, np.int64)], [np.zeros(0, np.float32)]
        for part, live in self._parts():
            equal = np.zeros(len(part.ids), np.uint8)
            for column, minimum in zip(part.columns, sig, strict=True):
                equal += column == minimum
            sims = equal / np.float32(len(sig))
            hit = np.flatnonzero((sims >= at_least) & (part.sizes > 0) & live)
            found_ids.append(part.ids[hit])
            found_sims.append(sims[hit].astype(np.float32))
        return np.concatenate(found_ids), np.concatenate(found_sims)

    def _parts(self) -> list[tuple[ShapeTable, np.ndarray | bool]]:
        own: np.ndarray | bool = True if self.alive is None else self.alive
        return [(self, own)] + ([(self.added, True)] if self.added is not None else [])

    def _where(self, wanted: np.ndarray) -> list[tuple[ShapeTable, np.ndarray]]:
        """For each part, the row of each wanted id in it (-1: not held there, or not alive)."""
        out = []
        for part, live in self._parts():
            at = np.full(len(wanted), -1, np.int64)
            if len(part.ids):
                found = np.searchsorted(part.ids, wanted).clip(max=len(part.ids) - 1)
                hit = part.ids[found] == wanted
                if live is not True:
                    hit &= np.asarray(live)[found]
                at[hit] = found[hit]
            out.append((part, at))
        return out
