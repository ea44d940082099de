"""Every chunk's shape signature by id (sai/text/shape.py): what `sai impact` finds the copies
of a changed unit by, without reading every chunk's row (0.6 s at 100,000 chunks).

A store answers `IndexReader.shapes()` with one; the DuckDB store holds it as a derived copy
per index token (store/duckdb/copies.py: mapped from a shared file, patched by the chunks a
write changed, store/patched.py), the others build it from `all_chunks`. The signatures are held
a minimum per row of `columns` (one row per hash function): comparing one signature with 100,000
takes 1.5 ms so, 6 ms a signature per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sai.store.patched import Patched
from sai.text import shape


@dataclass(frozen=True)
class Signatures:
    """Chunk ids (sorted), their signatures and element counts (0: no shape)."""

    ids: np.ndarray  # int64, sorted
    columns: np.ndarray  # uint32 (shape.SIGNATURE_SIZE, n): column k holds the ids' k-th minima
    sizes: np.ndarray  # uint32 (n,)

    @classmethod
    def of_blobs(cls, ids: np.ndarray, blobs: list[bytes | None]) -> Signatures:
        """From stored signatures (shape.signature's bytes; None or another version's: no shape)."""
        ids = np.asarray(ids, dtype=np.int64)
        sigs, sizes, known = shape.signatures(blobs)
        sizes[~known] = 0
        order = np.argsort(ids, kind="stable")
        return cls(ids=ids[order], columns=np.ascontiguousarray(sigs[order].T), sizes=sizes[order])

    def taken(self, keep: np.ndarray) -> Signatures:
        return Signatures(self.ids[keep], self.columns[:, keep], self.sizes[keep])

    def joined(self, others: Sequence[Signatures]) -> Signatures:
        parts = [self, *others]
        ids = np.concatenate([p.ids for p in parts])
        order = np.argsort(ids, kind="stable")
        return Signatures(ids[order], np.concatenate([p.columns for p in parts], axis=1)[:, order],
                          np.concatenate([p.sizes for p in parts])[order])


class ShapeTable(Patched[Signatures]):
    """The signatures read whole plus a patch (store/patched.py), looked up by id or by likeness."""

    @classmethod
    def of_blobs(cls, token: str, ids: np.ndarray, blobs: list[bytes | None]) -> ShapeTable:
        return cls(token=token, base=Signatures.of_blobs(ids, blobs))

    def of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The signatures and element counts of these ids (a count of 0: no shape, or not held)."""
        wanted = np.asarray(ids, dtype=np.int64)
        sigs = np.zeros((len(wanted), shape.SIGNATURE_SIZE), np.uint32)
        sizes = np.zeros(len(wanted), np.uint32)
        for part, at in self.where(wanted):
            hit = at >= 0
            sigs[hit], sizes[hit] = part.columns[:, at[hit]].T, part.sizes[at[hit]]
        return sigs, sizes

    def alike(self, sig: np.ndarray, at_least: float) -> tuple[np.ndarray, np.ndarray]:
        """The ids of every shaped row whose shape similarity to `sig` is at least `at_least`, with it."""
        found_ids, found_sims = [np.zeros(0, np.int64)], [np.zeros(0, np.float32)]
        for part, live in self.parts():
            equal = np.zeros(len(part.ids), np.uint8)
            for column, minimum in zip(part.columns, sig, strict=True):
                equal += column == minimum
            sims = equal / np.float32(len(sig))
            keep = (sims >= at_least) & (part.sizes > 0)
            hit = np.flatnonzero(keep if live is None else keep & live)
            found_ids.append(part.ids[hit])
            found_sims.append(sims[hit].astype(np.float32))
        return np.concatenate(found_ids), np.concatenate(found_sims)
