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
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pyarrow as pa

from sai.models import Definition, chunk_id

SYMBOL_COLS = "id, path, language, start_line, end_line, symbol, kind, content_hash"
# How a name matched, best first: the whole symbol; its last parts (`computeTotal` finds
# `Cart.computeTotal`); either ignoring case; then the same two as prefixes.
MATCHES = ("exact", "qualified", "case_insensitive", "prefix", "prefix_case_insensitive")
SymbolRow = tuple[int, str, str | None, int, int, str | None, str | None, str]


@dataclass(frozen=True)
class _Def:
    symbol: str
    kind: str | None
    path: str
    start_line: int
    end_line: int
    language: str | None
    chunk_id: str


class SymbolTable:
    """Every chunk's chunk_id, and every definition indexed by the dotted suffixes of its symbol."""

    def __init__(self, token: str, rows: Iterable[SymbolRow]) -> None:
        self.token = token
        self._chunk_rows: dict[str, int] = {}
        spans: dict[tuple[str, str], list[SymbolRow]] = {}
        for row in rows:
            row_id, path, _, start, end, symbol, _, digest = row
            self._chunk_rows[chunk_id(path, start, end, digest)] = row_id
            if symbol:
                spans.setdefault((path, symbol), []).append(row)
        self._defs = [d for chunks in spans.values() for d in _definitions(chunks)]
        self._exact: dict[str, list[int]] = {}
        self._folded: dict[str, list[int]] = {}
        keys: list[tuple[str, int]] = []
        for index, found in enumerate(self._defs):
            for suffix in _suffixes(found.symbol):
                self._exact.setdefault(suffix, []).append(index)
                self._folded.setdefault(suffix.lower(), []).append(index)
                keys.append((suffix.lower(), index))
        keys.sort()
        self._keys = [k for k, _ in keys]
        self._key_defs = [i for _, i in keys]

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> SymbolTable:
        """From a result holding the SYMBOL_COLS columns."""
        columns = [table.column(name).to_pylist() for name in SYMBOL_COLS.split(", ")]
        return cls(token, zip(*columns, strict=True))

    def __len__(self) -> int:
        return len(self._chunk_rows)

    def row_id(self, wanted: str) -> int | None:
        """The stored row of the chunk this chunk_id names, or None when no chunk has it now."""
        return self._chunk_rows.get(wanted)

    def lookup(
        self, name: str, *, limit: int, language: str | None = None,
        path_ok: Callable[[str], bool] | None = None,
    ) -> list[Definition]:
        """Definitions of `name`, best match first (MATCHES), then shorter symbols, path, line."""
        name = name.strip()
        if not name or limit < 1:
            return []
        found: list[Definition] = []
        seen: set[int] = set()
        for match, indices in self._tiers(name):
            chosen = [i for i in dict.fromkeys(indices) if i not in seen and self._passes(i, language, path_ok)]
            seen.update(chosen)
            chosen.sort(key=lambda i: (len(self._defs[i].symbol), self._defs[i].path, self._defs[i].start_line))
            found += [_definition(self._defs[i], match) for i in chosen[: limit - len(found)]]
            if len(found) >= limit:
                break
        return found

    def _tiers(self, name: str) -> Iterable[tuple[str, list[int]]]:
        """(match, definition indices) per MATCHES entry; later tiers are worked out only if asked."""
        exact = self._exact.get(name, [])
        yield "exact", [i for i in exact if self._defs[i].symbol == name]
        yield "qualified", exact
        yield "case_insensitive", self._folded.get(name.lower(), [])
        prefixed = self._prefixed(name.lower())
        sensitive = [i for i in prefixed if any(s.startswith(name) for s in _suffixes(self._defs[i].symbol))]
        yield "prefix", sensitive
        yield "prefix_case_insensitive", prefixed

    def _prefixed(self, folded: str) -> list[int]:
        start = bisect.bisect_left(self._keys, folded)
        end = bisect.bisect_left(self._keys, folded + "\U0010ffff", lo=start)
        return self._key_defs[start:end]

    def _passes(self, index: int, language: str | None, path_ok: Callable[[str], bool] | None) -> bool:
        found = self._defs[index]
        return (language is None or found.language == language) and (path_ok is None or path_ok(found.path))


def _suffixes(symbol: str) -> list[str]:
    """`a.b.c` -> `a.b.c`, `b.c`, `c`: the names a qualified symbol answers to."""
    parts = symbol.split(".")
    return [".".join(parts[k:]) for k in range(len(parts)) if parts[k]]


def _definitions(chunks: list[SymbolRow]) -> list[_Def]:
    """One symbol's chunks in one file as definitions: chunks merged while they overlap or touch."""
    chunks = sorted(chunks, key=lambda r: (r[3], r[4], r[0]))
    out: list[_Def] = []
    for _, path, language, start, end, symbol, kind, digest in chunks:
        if out and start <= out[-1].end_line + 1:
            last = out[-1]
            out[-1] = _Def(last.symbol, last.kind, path, last.start_line, max(end, last.end_line),
                           last.language, last.chunk_id)
        else:
            out.append(_Def(symbol or "", kind, path, start, end, language, chunk_id(path, start, end, digest)))
    return out


def _definition(found: _Def, match: str) -> Definition:
    return Definition(symbol=found.symbol, kind=found.kind, path=found.path, start_line=found.start_line,
                      end_line=found.end_line, language=found.language, chunk_id=found.chunk_id, match=match)
