"""Where names are defined, and which chunk a chunk_id names: a table per index token.

Built once from the id, path, language, lines, symbol, kind and content hash of every chunk
(~0.4 s at 100,000 chunks on a quiet machine as Python tuples; as the flat arrays below ~1.5
times that, paid once per machine since other processes map them), then a lookup is a few dictionary probes
(benchmarks/symbol_lookup.py); after a write (a new index token), the files it touched are
answered from their rows read again, the rest from the table built before (`patched`). The
table is flat arrays, so the one built whole can be a file every process maps
(store/duckdb/copies.py). No embedder is involved.

A *definition* is one symbol in one file: its chunks (a unit too big for one chunk is cut into
overlapping windows that keep its symbol) merged while their ranges overlap or touch. Its lines
span all of them; its chunk_id is its first chunk's.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import Any

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
    from the table built before), so a write does not rebuild it (docs/design.md, "Vector
    search")."""

    def __init__(self, token: str, rows: Iterable[SymbolRow]) -> None:
        self.token = token
        self._layers: tuple[tuple[_Built, frozenset[str]], ...] = ((_Built.of_rows(rows), frozenset()),)

    @classmethod
    def from_arrow(cls, token: str, table: pa.Table) -> SymbolTable:
        """From a result holding the SYMBOL_COLS columns."""
        columns = [table.column(name).to_pylist() for name in SYMBOL_COLS.split(", ")]
        return cls(token, zip(*columns, strict=True))

    @classmethod
    def of_arrays(cls, token: str, arrays: dict[str, Any]) -> SymbolTable:
        """From the arrays a table built whole holds (`arrays`, ARRAYS), as a shared file gives them."""
        table = cls.__new__(cls)
        table.token = token
        table._layers = ((_Built(arrays), frozenset()),)
        return table

    @property
    def arrays(self) -> dict[str, Any]:
        """The arrays of the table built from every row (what a shared file holds)."""
        return self._layers[0][0].arrays

    @property
    def patched_files(self) -> frozenset[str]:
        """The files answered from rows read after the table was built (none: not patched)."""
        return self._layers[0][1]

    @property
    def built_rows(self) -> int:
        """Rows of the table built from every chunk's row (what a patch is weighed against)."""
        return self._layers[0][0].n_rows

    def patched(self, token: str, files: frozenset[str], rows: Iterable[SymbolRow]) -> SymbolTable:
        """This table at `token`: the files `files` (every file written since it was built,
        `patched_files` included) answered from `rows`, their rows at `token`."""
        table = SymbolTable.__new__(SymbolTable)
        table.token = token
        table._layers = ((self._layers[0][0], files), (_Built.of_rows(rows), frozenset()))
        return table

    def __len__(self) -> int:
        return sum(built.n_rows - built.rows_of(hidden) for built, hidden in self._layers)

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
            streams = []
            for layer, ((built, hidden), (_, indices)) in enumerate(zip(self._layers, tiers, strict=True)):
                fresh = np.fromiter(set(indices) - seen[layer], np.int64)
                seen[layer].update(fresh.tolist())
                # a layer's rank orders as _order does: its definitions are made as the merge reaches them
                fresh = fresh[np.argsort(built.rank[fresh], kind="stable")]
                streams.append(_ranked(built, fresh.tolist(), layer, hidden))
            match = tiers[0][0]
            for *_, definition in heapq.merge(*streams):
                yield match, definition


def _ranked(built: _Built, indices: list[int], layer: int, hidden: frozenset[str]
            ) -> Iterator[tuple[tuple[int, str, int], int, int, _Def]]:
    """The definitions of these indices (in rank order) with their merge keys, hidden files left out."""
    for index in indices:
        definition = built.definition(index)
        if definition[2] not in hidden:
            yield _order(definition), layer, int(built.rank[index]), definition


class _Strings:
    """An Arrow string array as a sequence of str (what bisect and look-ups read)."""

    def __init__(self, values: pa.Array) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, k: int) -> Any:  # str, or None where the column holds a null
        return self.values[k].as_py()

    def span(self, lo: int, hi: int) -> list[str]:
        return self.values.slice(lo, hi - lo).to_pylist()


class _Built:
    """Every chunk's chunk_id, and every definition under each dotted suffix of its symbol
    (`a.b.c` answers to `a.b.c`, `b.c` and `c`), in one list sorted by the suffix in lower case:
    exact, case-insensitive and prefix matches are all ranges of it, found by bisection.

    Held as flat arrays (ARRAYS), not Python objects, so a table read from a shared file
    (store/duckdb/copies.py) is the file's pages, held once by every process."""

    def __init__(self, arrays: dict[str, Any]) -> None:
        self.arrays = arrays
        self.n_rows = len(arrays["row_id"])
        self.n_defs = len(arrays["def_row"])
        self.rank = arrays["rank"]
        self._paths = _Strings(arrays["paths"])
        self._keys = _Strings(arrays["keys"])
        self._folded, self._originals = _Strings(arrays["folded"]), _Strings(arrays["originals"])
        self._owners = arrays["owners"]
        self._text = {k: _Strings(arrays[k]) for k in ("def_symbol", "def_kind", "def_language", "def_digest")}

    @classmethod
    def of_rows(cls, rows: Iterable[SymbolRow]) -> _Built:
        return cls(_arrays_of(list(rows)))

    def definition(self, index: int) -> _Def:
        a, text = self.arrays, self._text
        path = self._paths[int(a["def_path"][index])]
        return (text["def_symbol"][index], text["def_kind"][index], path,
                int(a["def_start"][index]), int(a["def_end"][index]), text["def_language"][index],
                (int(a["def_first"][index]), int(a["def_last"][index]), text["def_digest"][index],
                 int(a["def_row"][index])))

    def row(self, wanted: str) -> tuple[int, str] | None:
        """(row id, path) of the chunk this chunk_id names."""
        k = bisect.bisect_left(self._keys, wanted)
        if k >= self.n_rows or self._keys[k] != wanted:
            return None
        r = int(self.arrays["key_row"][k])
        return int(self.arrays["row_id"][r]), self._paths[int(self.arrays["row_path"][r])]

    def files_of(self, ids: np.ndarray) -> set[str]:
        sorted_ids, order = self.arrays["ids_sorted"], self.arrays["ids_order"]
        if not len(ids) or not len(sorted_ids):
            return set()
        at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
        held = order[at[sorted_ids[at] == ids]]
        return {self._paths[int(c)] for c in np.unique(self.arrays["row_path"][held])}

    def rows_of(self, files: frozenset[str]) -> int:
        count = 0
        for path in files:
            k = bisect.bisect_left(self._paths, path)
            if k < len(self._paths) and self._paths[k] == path:
                count += int(self.arrays["path_rows"][k])
        return count

    def tiers(self, name: str) -> Iterator[tuple[str, list[int]]]:
        """(match, definition indices) per MATCHES entry for a stripped name; later tiers are worked
        out only if asked."""
        folded = name.lower()
        lo = bisect.bisect_left(self._folded, folded)
        hi = bisect.bisect_right(self._folded, folded, lo=lo)
        owners = self._owners[lo:hi].tolist()
        yield "exact", [k for k in owners if self._text["def_symbol"][k] == name]
        yield "qualified", [k for k, s in zip(owners, self._originals.span(lo, hi), strict=True) if s == name]
        yield "case_insensitive", owners
        end = bisect.bisect_left(self._folded, folded + _LAST, lo=lo)
        prefixed = self._owners[lo:end].tolist()
        originals = self._originals.span(lo, end)
        yield "prefix", [k for k, s in zip(prefixed, originals, strict=True) if s.startswith(name)]
        yield "prefix_case_insensitive", prefixed


def _arrays_of(rows: list[SymbolRow]) -> dict[str, Any]:
    """The arrays of _Built from the rows of every chunk."""
    spans: dict[tuple[str, str], list[tuple[int, int, str | None, str | None, str, int]]] = {}
    for row_id, path, language, start, end, symbol, kind, digest in rows:
        if symbol:
            spans.setdefault((path, symbol), []).append((start, end, kind, language, digest, row_id))
    defs = [d for (path, symbol), chunks in spans.items() for d in _definitions(path, symbol, chunks)]
    rank = np.empty(len(defs), np.int64)  # best first within a tier: shorter symbols, then path and line
    rank[sorted(range(len(defs)), key=lambda i: _order(defs[i]))] = np.arange(len(defs))
    originals, owners = [], []
    for index, definition in enumerate(defs):
        for suffix in _suffixes(definition[0]):
            originals.append(suffix)
            owners.append(index)
    folded = [s.lower() for s in originals]
    order = sorted(range(len(folded)), key=folded.__getitem__)
    paths = sorted({r[1] for r in rows})
    code = {p: k for k, p in enumerate(paths)}
    row_path = np.array([code[r[1]] for r in rows], np.int64)
    row_ids = np.array([r[0] for r in rows], np.int64)
    keys = [chunk_id(path, start, end, digest) for _, path, _, start, end, _, _, digest in rows]
    key_order = sorted(range(len(keys)), key=keys.__getitem__)
    ids_order = np.argsort(row_ids, kind="stable")

    def ints(values: Iterable[int]) -> np.ndarray:
        return np.fromiter(values, np.int64, len(defs))

    texts = {name: pa.array([d[k] for d in defs], pa.string()) for name, k in (("def_symbol", 0), ("def_kind", 1),
                                                                               ("def_language", 5))}
    return texts | {
        "row_id": row_ids, "row_path": row_path, "paths": pa.array(paths, pa.string()),
        "path_rows": np.bincount(row_path, minlength=len(paths)).astype(np.int64),
        "keys": pa.array([keys[k] for k in key_order], pa.string()), "key_row": np.array(key_order, np.int64),
        "ids_sorted": row_ids[ids_order], "ids_order": ids_order.astype(np.int64),
        "def_path": ints(code[d[2]] for d in defs), "def_start": ints(d[3] for d in defs),
        "def_end": ints(d[4] for d in defs),
        "def_first": ints(d[6][0] for d in defs), "def_last": ints(d[6][1] for d in defs),
        "def_digest": pa.array([d[6][2] for d in defs], pa.string()), "def_row": ints(d[6][3] for d in defs),
        "rank": rank, "folded": pa.array([folded[k] for k in order], pa.string()),
        "originals": pa.array([originals[k] for k in order], pa.string()),
        "owners": np.array([owners[k] for k in order], np.int64),
    }


ARRAYS = tuple(_arrays_of([]))  # the names of _Built's arrays, in the order a shared file holds them


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
