"""Where names are defined, and which chunk a chunk_id names: an in-memory table per index token.

Built once per token (the value every write of chunk rows replaces, store/vectors.py) from the
id, path, language, lines, symbol, kind and content hash of every chunk: ~0.4 s at 100,000 chunks,
then a lookup is a few dictionary probes (benchmarks/symbol_lookup.py). No embedder is involved.

A *definition* is one symbol in one file: its chunks (a unit too big for one chunk is cut into
overlapping windows that keep its symbol) merged while their ranges overlap or touch. Its lines
span all of them; its chunk_id is its first chunk's.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator

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
    """Every chunk's chunk_id, and every definition under each dotted suffix of its symbol
    (`a.b.c` answers to `a.b.c`, `b.c` and `c`), in one list sorted by the suffix in lower case:
    exact, case-insensitive and prefix matches are all ranges of it, found by bisection."""

    def __init__(self, token: str, rows: Iterable[SymbolRow]) -> None:
        self.token = token
        self._rows = list(rows)
        self._chunk_rows: dict[str, int] | None = None  # chunk_id -> row id, made on first use
        spans: dict[tuple[str, str], list[tuple[int, int, str | None, str | None, str, int]]] = {}
        for row_id, path, language, start, end, symbol, kind, digest in self._rows:
            if symbol:
                spans.setdefault((path, symbol), []).append((start, end, kind, language, digest, row_id))
        self._defs: list[_Def] = [d for (path, symbol), chunks in spans.items()
                                  for d in _definitions(path, symbol, chunks)]
        # best first within a tier: shorter symbols (less nested), then path and line
        self._rank = [0] * len(self._defs)
        for rank, index in enumerate(sorted(range(len(self._defs)), key=lambda i: _order(self._defs[i]))):
            self._rank[index] = rank
        originals, owners = [], []
        for index, found in enumerate(self._defs):
            for suffix in _suffixes(found[0]):
                originals.append(suffix)
                owners.append(index)
        folded = [s.lower() for s in originals]
        order = sorted(range(len(folded)), key=folded.__getitem__)
        self._folded = [folded[k] for k in order]
        self._originals = [originals[k] for k in order]
        self._owners = [owners[k] for k in order]

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> SymbolTable:
        """From a result holding the SYMBOL_COLS columns."""
        columns = [table.column(name).to_pylist() for name in SYMBOL_COLS.split(", ")]
        return cls(token, zip(*columns, strict=True))

    def __len__(self) -> int:
        return len(self._rows)

    def row_id(self, wanted: str) -> int | None:
        """The stored row of the chunk this chunk_id names, or None when no chunk has it now.

        The map is made on the first call (~0.3 s at 100,000 chunks), so a table used only for
        names never hashes every chunk; two threads making it at once make the same map."""
        if self._chunk_rows is None:
            self._chunk_rows = {chunk_id(path, start, end, digest): row_id
                                for row_id, path, _, start, end, _, _, digest in self._rows}
        return self._chunk_rows.get(wanted)

    def lookup(
        self, name: str, *, limit: int, language: str | None = None,
        path_ok: Callable[[str], bool] | None = None,
    ) -> list[Definition]:
        """Definitions of `name`, best match first (MATCHES), then shorter symbols, path, line."""
        found: list[Definition] = []
        if limit < 1:
            return found
        for match, index in self._matches(name):
            if self._passes(index, language, path_ok):
                found.append(_definition(self._defs[index], match))
                if len(found) >= limit:
                    break
        return found

    def defining_rows(self, name: str, *, limit: int) -> list[int]:
        """Row ids of the first chunks of `name`'s definitions, best match first, without the
        prefix tiers: what a search for a bare name adds to its candidates."""
        found: list[int] = []
        if limit < 1:
            return found
        for match, index in self._matches(name):
            if match.startswith("prefix"):
                break
            found.append(self._defs[index][6][3])
            if len(found) >= limit:
                break
        return found

    def _matches(self, name: str) -> Iterator[tuple[str, int]]:
        """(match, definition index) for each definition of `name` once, in lookup order."""
        name = name.strip()
        if not name:
            return
        seen: set[int] = set()
        for match, indices in self._tiers(name):
            for index in sorted(set(indices) - seen, key=self._rank.__getitem__):
                seen.add(index)
                yield match, index

    def _tiers(self, name: str) -> Iterator[tuple[str, list[int]]]:
        """(match, definition indices) per MATCHES entry; later tiers are worked out only if asked."""
        folded = name.lower()
        lo = bisect.bisect_left(self._folded, folded)
        same = range(lo, bisect.bisect_right(self._folded, folded, lo=lo))
        yield "exact", [self._owners[k] for k in same if self._defs[self._owners[k]][0] == name]
        yield "qualified", [self._owners[k] for k in same if self._originals[k] == name]
        yield "case_insensitive", [self._owners[k] for k in same]
        prefixed = range(lo, bisect.bisect_left(self._folded, folded + _LAST, lo=lo))
        yield "prefix", [self._owners[k] for k in prefixed if self._originals[k].startswith(name)]
        yield "prefix_case_insensitive", [self._owners[k] for k in prefixed]

    def _passes(self, index: int, language: str | None, path_ok: Callable[[str], bool] | None) -> bool:
        found = self._defs[index]
        return (language is None or found[5] == language) and (path_ok is None or path_ok(found[2]))


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
