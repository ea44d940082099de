"""Nearest neighbours over a collection's vectors, held once per process or mapped from the sidecar.

Why not DuckDB's HNSW index (vss), which SAI used up to index format 3 (docs/design.md, "Vector
search"): its graph is rewritten into the file on every commit and the old space is never reused
(25 one-line refreshes took a 12.6 MB index to 134 MB), it keeps deleted rows (recall fell after
refreshes), it cannot search a filtered subset (filters ran after a global top 50), its build at
the end of a run was the longest step of indexing, and concurrent scans crashed a server. An
exact scan of a float32 matrix in numpy costs 2.7 ms at 20,000 x 384 and 8.2 ms at 80,000 (the
same scan inside DuckDB: 34 ms and 176 ms), filters by a mask, and leaves nothing derived in the file.

A chunk may have no vector yet (a first index run stores chunks first and embeds them after):
its row is in the table, for the masks of filtered lexical search, but no scan or cosine sees it.

A process reads the table once per index *token* (a value every write transaction that changes
chunks replaces) and shares it between threads. From an index file it maps the collection's
vector sidecar (store/duckdb/sidecar.py: one copy on disk and in the page cache for every process,
patched by the rows a write changed); a writer reading its own uncommitted rows, or an index in
a read-only place, builds it in memory from one Arrow read (~55 ms at 20,000 chunks).

Above FIRST_PASS_ROWS rows, a sidecar table scans in two passes: the Hamming distance
between the query's and the rows' sign bits, taken after one fixed random rotation (which
spreads every direction's weight over all dimensions: without it the signs of the near-zero
dimensions of sparse vectors are noise), picks the `_handed` nearest rows, whose float vectors
are then scored exactly. The bits are 1/32 of the floats (48 bytes a row at 384 dimensions), so
the pass reads little memory. Recall@10 against the exact scan is measured by benchmarks/scale.py
(docs/design.md, "Vector search"). A filter masks the rows before either pass, so a filtered
search searches the filtered subset (the bit pass over all rows costs less than gathering a
large subset's floats); a subset of at most twice the rows handed on is scanned exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from sai.store.duckdb.rows import matrix_of

FIRST_PASS_ROWS = 150_000  # rows above which the bit pass runs (below it the exact scan is as fast)
RESCORE_MIN = 2_000  # rows the bit pass hands to the exact scoring, at least
RESCORE_SHARE = 250  # and at least one row in this many of the table's
_GATHER_SHARE = 0.25  # a mask keeping less than this share is scored by gathering its rows
_BLOCK = 65_536  # rows per step of the bit pass (its temporaries stay in the CPU's cache)
_FAR = np.iinfo(np.uint16).max
_EACH_SCORES = 4_000_000  # scores nearest_each holds at once (16 MB): queries per block = this / rows
_REACHING_SHARE = 0.4  # a floor's bit bound narrows the scan only below this share of the bits


@dataclass(frozen=True)
class VectorTable:
    """Every chunk's id, file, language and vector, row-aligned and read-only.

    Rows may be in any id order; `live` (when not None) marks the rows still in the index (a
    sidecar keeps the tombstoned rows of a refreshed file until it compacts) and `present` those
    that have their vector (a pending row's slots hold zeros)."""

    token: str
    ids: np.ndarray  # int64
    matrix: np.ndarray  # float32 (n, d), L2-normalised
    paths: tuple[str, ...]  # distinct paths; path_of indexes into it
    path_of: np.ndarray  # int32 per row
    languages: tuple[str | None, ...]
    language_of: np.ndarray  # int32 per row (-1: no language)
    present: np.ndarray | None = None  # bool per row: has its vector (None: every row has)
    live: np.ndarray | None = None  # bool per row; None: every row is live
    bits: np.ndarray | None = None  # uint8 (n, d / 8): sign bits of the rotated vectors; None: exact only
    rotation: np.ndarray | None = None  # float32 (d, d): the rotation the bits were taken after

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
        return len(self.ids) if self.live is None else int(np.count_nonzero(self.live))

    @cached_property
    def searchable(self) -> np.ndarray | None:
        """The rows a scan may return (live, with a vector); None: every row."""
        if self.live is None:
            return self.present
        return self.live if self.present is None else self.live & self.present

    @property
    def vectors(self) -> int:
        """How many live rows have their vector."""
        return len(self.ids) if self.searchable is None else int(np.count_nonzero(self.searchable))

    def mask(self, *, language: str | None = None, paths: Iterable[str] | None = None) -> np.ndarray | None:
        """Live rows of this language and among these paths; None when nothing is filtered."""
        if language is None and paths is None:
            return None
        keep = np.ones(len(self.ids), dtype=bool) if self.live is None else self.live.copy()
        if language is not None:
            codes = [k for k, name in enumerate(self.languages) if name == language]
            keep &= np.isin(self.language_of, codes)
        if paths is not None:
            wanted = set(paths)
            codes = [k for k, name in enumerate(self.paths) if name in wanted]
            keep &= np.isin(self.path_of, codes)
        return keep

    def nearest(
        self, vector: np.ndarray, limit: int, *, mask: np.ndarray | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the `limit` rows closest to `vector`, best first (ties by id)."""
        if not len(self.ids) or limit <= 0 or self.vectors == 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        keep = self.searchable if mask is None else (mask if self.searchable is None else mask & self.searchable)
        if exclude is not None:
            keep = (np.ones(len(self.ids), bool) if keep is None else keep) & (self.ids != exclude)
        count = len(self.ids) if keep is None else int(np.count_nonzero(keep))
        handed = _handed(len(self.ids), limit)  # a subset hands on as many rows as the whole table
        if self.bits is not None and self.rotation is not None and len(self.ids) > FIRST_PASS_ROWS \
                and count > 2 * handed:
            rows = np.sort(self._first_pass(query, keep, handed))  # in file order: the gather reads forward
            scores = self.matrix[rows] @ query
        elif keep is None:
            rows, scores = np.arange(len(self.ids)), self.matrix @ query
        else:
            rows = np.flatnonzero(keep)
            scores = self._scores(rows, query)
        return self._best(rows, scores, limit)

    def _scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The query's cosine with these rows: their floats gathered, or, for a share of the
        table past _GATHER_SHARE, every row scored and these taken (the gather costs more)."""
        return self.matrix[rows] @ query if len(rows) < _GATHER_SHARE * len(self.ids) else (self.matrix @ query)[rows]

    def _distances(self, query: np.ndarray) -> np.ndarray:
        """Every row's Hamming distance to the query's sign bits."""
        assert self.bits is not None and self.rotation is not None
        return _hamming(self.bits, np.packbits(query @ self.rotation > 0))

    def _best(self, rows: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """(chunk id, score) of the `limit` best of these rows, best first (ties by id)."""
        if len(rows) > limit:
            best = np.argpartition(-scores, limit - 1)[:limit]
            rows, scores = rows[best], scores[best]
        order = np.lexsort((self.ids[rows], -scores))
        return [(int(i), float(s)) for i, s in zip(self.ids[rows[order]], scores[order], strict=True)]

    def nearest_each(self, queries: np.ndarray, limit: int, *, exclude: list[int],
                     floor: float = -1.0) -> list[list[tuple[int, float]]]:
        """nearest(queries[i], limit, exclude=exclude[i]) for each row among the rows of cosine >=
        floor. A floor that few rows reach is served by the bit pass (_reaching); otherwise a
        block of queries at a time is scored by one matrix product (a merge's hundreds of changed
        units, sai/impact.py), and a table the bit pass serves asks each query alone."""
        queries = np.asarray(queries, dtype=np.float32).reshape(len(exclude), -1)
        if not len(self.ids) or limit <= 0 or self.vectors == 0:
            return [[] for _ in exclude]
        bound = self._bits_reaching(floor)
        if bound is not None:
            return [self._reaching(q, floor, bound, limit, e) for q, e in zip(queries, exclude, strict=True)]
        if self.bits is not None and len(self.ids) > FIRST_PASS_ROWS:
            return [[hit for hit in self.nearest(q, limit, exclude=e) if hit[1] >= floor]
                    for q, e in zip(queries, exclude, strict=True)]
        held, rows = self._rows_of(np.asarray(exclude, np.int64))
        at = np.full(len(exclude), -1, np.int64)
        at[held] = rows
        out: list[list[tuple[int, float]]] = []
        step = max(1, _EACH_SCORES // len(self.ids))
        for start in range(0, len(queries), step):
            scores = self.matrix @ queries[start:start + step].T  # (rows, queries in the block)
            if self.searchable is not None:
                scores[~self.searchable] = -np.inf
            for column, row in enumerate(at[start:start + step]):
                col = scores[:, column]
                if row >= 0:
                    col[row] = -np.inf
                kept = np.flatnonzero(col >= floor)
                out.append(self._best(kept, col[kept], limit))
        return out

    def _bits_reaching(self, floor: float) -> int | None:
        """The Hamming distance a row of cosine >= floor to a query exceeds with odds below 1e-9,
        None when the bits cannot narrow the scan that much (no bits, or a floor most rows reach).

        A sign bit of a randomly rotated vector differs between two vectors at an angle theta
        with probability theta / pi, so the distance over d bits is at most binomial(d, p) with
        p = arccos(floor) / pi: a bound of d p + 6 sigma misses such a row once in a billion (the
        rows of an orthogonal rotation spread no wider than independent ones)."""
        if self.bits is None or self.rotation is None or floor <= -1.0:
            return None
        bits = self.rotation.shape[1]
        p = float(np.arccos(np.clip(floor, -1.0, 1.0))) / np.pi
        bound = bits * p + 6 * (bits * p * (1 - p)) ** 0.5
        return int(bound) if bound < _REACHING_SHARE * bits else None

    def _reaching(self, query: np.ndarray, floor: float, bound: int, limit: int,
                  exclude: int) -> list[tuple[int, float]]:
        """nearest(query, limit, exclude=exclude) among the rows of cosine >= floor: the rows
        within `bound` bits of the query's scored exactly (4 ms at 120,000 rows where the exact
        scan took 10-25; of MiniLM's code vectors, ~5 % of rows pass a bound for floor 0.8)."""
        keep = (self._distances(query) <= bound) & (self.ids != exclude)
        if self.searchable is not None:
            keep &= self.searchable
        rows = np.flatnonzero(keep)
        scores = self._scores(rows, query)
        reached = scores >= floor
        return self._best(rows[reached], scores[reached], limit)

    def _first_pass(self, query: np.ndarray, keep: np.ndarray | None, count: int) -> np.ndarray:
        """At least `count` kept rows whose bits are nearest the query's (Hamming distance): every
        row nearer than the count-th, and as many as it takes at its distance."""
        distance = self._distances(query)
        if keep is not None:
            distance[~keep] = _FAR
        within = np.cumsum(np.bincount(distance, minlength=_FAR + 1))  # a histogram: no sort of every row
        reach = int(np.searchsorted(within, count))
        nearer = np.flatnonzero(distance < reach)
        at = np.flatnonzero(distance == reach)[:count - len(nearer)]
        return np.concatenate([nearer, at])

    @cached_property
    def _by_id(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids of the searchable rows sorted, their rows): what look-ups by id bisect."""
        rows = np.arange(len(self.ids)) if self.searchable is None else np.flatnonzero(self.searchable)
        ids = np.asarray(self.ids[rows])
        if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
        return ids, rows

    def _rows_of(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of `wanted` are held with a vector, their rows)."""
        ids, rows = self._by_id
        if not len(ids):
            return np.zeros(len(wanted), bool), np.zeros(0, np.int64)
        at = np.searchsorted(ids, wanted).clip(max=len(ids) - 1)
        held = ids[at] == wanted
        return held, rows[at[held]]

    def vector_of(self, chunk_id: int) -> np.ndarray | None:
        held, rows = self._rows_of(np.asarray([chunk_id], dtype=np.int64))
        return np.asarray(self.matrix[rows[0]]) if len(rows) else None


def _hamming(bits: np.ndarray, code: np.ndarray) -> np.ndarray:
    """uint16 Hamming distance of every row of `bits` to `code`, a block of rows at a time (the
    per-word counts added column by column: twice as fast as a sum along the rows)."""
    words, code = (bits.view(np.uint64), code.view(np.uint64)) if code.size % 8 == 0 else (bits, code)
    distance = np.empty(len(bits), np.uint16)
    for start in range(0, len(bits), _BLOCK):
        counts = np.bitwise_count(words[start:start + _BLOCK] ^ code).astype(np.uint8)
        total = counts[:, 0].astype(np.uint16)
        for column in range(1, counts.shape[1]):
            total += counts[:, column]
        distance[start:start + _BLOCK] = total
    return distance


def _handed(count: int, limit: int) -> int:
    """Rows the bit pass hands to the exact scoring in a table of `count` rows, for `limit`."""
    return max(RESCORE_MIN, 20 * limit, count // RESCORE_SHARE)


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
