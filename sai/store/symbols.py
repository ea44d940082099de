"""Where names are defined, and which chunk a chunk_id names: an in-memory table per index token.

Built once from the id, path, language, lines, symbol, kind and content hash of every chunk
(~0.4 s at 100,000 chunks on a quiet machine), then a lookup is a few dictionary probes
(benchmarks/symbol_lookup.py); after a write (a new index token), the files it touched are
answered from their rows read again, the rest from the table built before (`patched`). No
embedder is involved.

A *definition* is one symbol in one file: its chunks (a unit too big for one chunk is cut into
overlapping windows that keep its symbol) merged while their ranges overlap or touch. Its lines
span all of them; its chunk_id is its first chunk's.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

from sai.models import Definition, chunk_id

SYMBOL_COLS = "id, path, language, start_line, end_line, symbol, kind, content_hash"
# How a name matched, best first: the whole symbol; its last parts (`computeTotal` finds
# `Cart.computeTotal`); either ignoring case; then the same two as prefixes.
MATCHES = ("exact", "qualified", "case_insensitive", "prefix", "prefix_case_insensitive")
SymbolRow = tuple[int, str, str | None, int, int, str | None, str | None, str]
# A definition: (symbol, kind, path, start_line, end_line, language, (first chunk's lines,
# content hash and row id)); its chunk_id is worked out when it is returned.
_Def = tuple[str, str | None, str, int, int, str | None, tuple[int, int, str, int]]
_LAST = "\U0010ffff"  # sorts after every character: the end of a prefix's range


class SymbolTable:
    """Where names are defined: a table built from every chunk's row, or one brought to a later
    token by `patched` (the files a write touched answered from their current rows, the rest
    from the table built before), so a write does not rebuild it (docs/design.md, "How the cost
    grows")."""

    def __init__(self, token: str, rows: Iterable[SymbolRow]) -> None:
        self.token = token
        self._layers: tuple[tuple[_Built, frozenset[str]], ...] = ((_Built(rows), frozenset()),)

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> SymbolTable:
        """From a result holding the SYMBOL_COLS columns."""
        columns = [table.column(name).to_pylist() for name in SYMBOL_COLS.split(", ")]
        return cls(token, zip(*columns, strict=True))

    @property
    def patched_files(self) -> frozenset[str]:
        """The files answered from rows read after the table was built (none: not patched)."""
        return self._layers[0][1]

    @property
    def built_rows(self) -> int:
        """Rows of the table built from every chunk's row (what a patch is weighed against)."""
        return len(self._layers[0][0].rows)

    def patched(self, token: str, files: frozenset[str], rows: Iterable[SymbolRow]) -> SymbolTable:
        """This table at `token`: the files `files` (every file written since it was built,
        `patched_files` included) answered from `rows`, their rows at `token`."""
        table = SymbolTable.__new__(SymbolTable)
        table.token = token
        table._layers = ((self._layers[0][0], files), (_Built(rows), frozenset()))
        return table

    def __len__(self) -> int:
        return sum(len(built.rows) - built.rows_of(hidden) for built, hidden in self._layers)

    def files_of(self, ids: np.ndarray) -> set[str]:
        """The files of these chunk ids in the table built from every row (ids added since are
        not there: their files are among `patched_files`)."""
        return self._layers[0][0].files_of(ids)

    def row_id(self, wanted: str) -> int | None:
        """The stored row of the chunk this chunk_id names, or None when no chunk has it now."""
        for built, hidden in reversed(self._layers):
            found = built.row(wanted)
            if found is not None and found[1] not in hidden:
                return found[0]
        return None

    def lookup(
        self, name: str, *, limit: int, language: str | None = None,
        path_ok: Callable[[str], bool] | None = None,
    ) -> list[Definition]:
        """Definitions of `name`, best match first (MATCHES), then shorter symbols, path, line."""
        found: list[Definition] = []
        if limit < 1:
            return found
        for match, definition in self._matches(name):
            if (language is None or definition[5] == language) and (path_ok is None or path_ok(definition[2])):
                found.append(_definition(definition, match))
                if len(found) >= limit:
                    break
        return found

    def defining_rows(self, name: str, *, limit: int) -> list[int]:
        """Row ids of the first chunks of `name`'s definitions, best match first, without the
        prefix tiers: what a search for a bare name adds to its candidates."""
        found: list[int] = []
        if limit < 1:
            return found
        for match, definition in self._matches(name):
            if match.startswith("prefix"):
                break
            found.append(definition[6][3])
            if len(found) >= limit:
                break
        return found

    def _matches(self, name: str) -> Iterator[tuple[str, _Def]]:
        """(match, definition) for each definition of `name` once, in lookup order: per tier,
        shorter symbols, then path and line, over every layer."""
        name = name.strip()
        if not name:
            return
        seen: list[set[int]] = [set() for _ in self._layers]
        for tiers in zip(*(built.tiers(name) for built, _ in self._layers), strict=True):
            ranked: list[tuple[tuple[int, str, int], int, int, _Def]] = []
            for layer, ((built, hidden), (_, indices)) in enumerate(zip(self._layers, tiers, strict=True)):
                for index in set(indices) - seen[layer]:
                    seen[layer].add(index)
                    definition = built.defs[index]
                    if definition[2] not in hidden:
                        ranked.append((_order(definition), layer, built.rank[index], definition))
            match = tiers[0][0]
            for *_, definition in sorted(ranked, key=lambda r: r[:3]):
                yield match, definition


class _Built:
    """Every chunk's chunk_id, and every definition under each dotted suffix of its symbol
    (`a.b.c` answers to `a.b.c`, `b.c` and `c`), in one list sorted by the suffix in lower case:
    exact, case-insensitive and prefix matches are all ranges of it, found by bisection."""

    def __init__(self, rows: Iterable[SymbolRow]) -> None:
        self.rows = list(rows)
        self._chunk_rows: dict[str, int] | None = None  # chunk_id -> index of its row, made on first use
        self._ids: np.ndarray | None = None  # sorted row ids and their rows' indices, made on first use
        spans: dict[tuple[str, str], list[tuple[int, int, str | None, str | None, str, int]]] = {}
        for row_id, path, language, start, end, symbol, kind, digest in self.rows:
            if symbol:
                spans.setdefault((path, symbol), []).append((start, end, kind, language, digest, row_id))
        self.defs: list[_Def] = [d for (path, symbol), chunks in spans.items()
                                 for d in _definitions(path, symbol, chunks)]
        # best first within a tier: shorter symbols (less nested), then path and line
        self.rank = [0] * len(self.defs)
        for rank, index in enumerate(sorted(range(len(self.defs)), key=lambda i: _order(self.defs[i]))):
            self.rank[index] = rank
        originals, owners = [], []
        for index, found in enumerate(self.defs):
            for suffix in _suffixes(found[0]):
                originals.append(suffix)
                owners.append(index)
        folded = [s.lower() for s in originals]
        order = sorted(range(len(folded)), key=folded.__getitem__)
        self._folded = [folded[k] for k in order]
        self._originals = [originals[k] for k in order]
        self._owners = [owners[k] for k in order]

    def row(self, wanted: str) -> tuple[int, str] | None:
        """(row id, path) of the chunk this chunk_id names. The map is made on the first call
        (~0.3 s at 100,000 chunks), so a table used only for names never hashes every chunk;
        two threads making it at once make the same map."""
        if self._chunk_rows is None:
            self._chunk_rows = {chunk_id(path, start, end, digest): k
                                for k, (_, path, _, start, end, _, _, digest) in enumerate(self.rows)}
        k = self._chunk_rows.get(wanted)
        return None if k is None else (self.rows[k][0], self.rows[k][1])

    def files_of(self, ids: np.ndarray) -> set[str]:
        if self._ids is None:
            row_ids = np.array([r[0] for r in self.rows], np.int64)
            order = np.argsort(row_ids, kind="stable")
            self._ids = np.stack([row_ids[order], order])
        if not len(ids) or not self._ids.shape[1]:
            return set()
        sorted_ids, order = self._ids
        at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
        held = order[at[sorted_ids[at] == ids]]
        return {self.rows[k][1] for k in held.tolist()}

    def rows_of(self, files: frozenset[str]) -> int:
        return sum(1 for r in self.rows if r[1] in files) if files else 0

    def tiers(self, name: str) -> Iterator[tuple[str, list[int]]]:
        """(match, definition indices) per MATCHES entry for a stripped name; later tiers are worked
        out only if asked."""
        folded = name.lower()
        lo = bisect.bisect_left(self._folded, folded)
        same = range(lo, bisect.bisect_right(self._folded, folded, lo=lo))
        yield "exact", [self._owners[k] for k in same if self.defs[self._owners[k]][0] == name]
        yield "qualified", [self._owners[k] for k in same if self._originals[k] == name]
        yield "case_insensitive", [self._owners[k] for k in same]
        prefixed = range(lo, bisect.bisect_left(self._folded, folded + _LAST, lo=lo))
        yield "prefix", [self._owners[k] for k in prefixed if self._originals[k].startswith(name)]
        yield "prefix_case_insensitive", [self._owners[k] for k in prefixed]


def _order(found: _Def) -> tuple[int, str, int]:
    return len(found[0]), found[2], found[3]


def _suffixes(symbol: str) -> list[str]:
    """`a.b.c` -> `a.b.c`, `b.c`, `c`: the names a qualified symbol answers to."""
    if "." not in symbol:
        return [symbol]
    parts = symbol.split(".")
    return [".".join(parts[k:]) for k in range(len(parts)) if parts[k]]


def _definitions(
    path: str, symbol: str, chunks: list[tuple[int, int, str | None, str | None, str, int]]
) -> list[_Def]:
    """One symbol's chunks in one file as definitions: chunks merged while they overlap or touch."""
    if len(chunks) > 1:
        chunks.sort()
    out: list[_Def] = []
    for start, end, kind, language, digest, row_id in chunks:
        if out and start <= out[-1][4] + 1:
            last = out[-1]
            out[-1] = (symbol, last[1], path, last[3], max(end, last[4]), last[5], last[6])
        else:
            out.append((symbol, kind, path, start, end, language, (start, end, digest, row_id)))
    return out


def _definition(found: _Def, match: str) -> Definition:
    symbol, kind, path, start, end, language, (first, last, digest, _) = found
    return Definition(symbol=symbol, kind=kind, path=path, start_line=start, end_line=end,
                      language=language, chunk_id=chunk_id(path, first, last, digest), match=match)
