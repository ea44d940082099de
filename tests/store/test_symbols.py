"""The in-memory symbol table (sai/store/symbols.py): chunk_ids to rows, and name lookups."""

from __future__ import annotations

import pytest

from sai.models import chunk_id
from sai.source.files import compile_glob
from sai.store.symbols import MATCHES, SymbolTable

ROWS = [  # id, path, language, start, end, symbol, kind, content hash
    (1, "src/cart.ts", "typescript", 3, 13, "Cart", "class", "h1"),
    (2, "src/cart.ts", "typescript", 6, 8, "Cart.computeTotal", "method", "h2"),
    (3, "src/total.py", "python", 1, 2, "computeTotal", "function", "h3"),
    (4, "lib/old.py", "python", 1, 2, "COMPUTETOTAL", "function", "h4"),
    (5, "src/cart.ts", "typescript", 15, 17, "computeTotalPrice", "function", "h5"),
    (6, "src/big.py", "python", 1, 60, "Big.run", "method", "h6"),
    (7, "src/big.py", "python", 53, 90, "Big.run", "method", "h7"),  # a window of the same unit
    (8, "src/big.py", "python", 95, 99, "Big.run", "method", "h8"),  # an overload further down
    (9, "src/cart.ts", "typescript", 1, 1, None, None, "h9"),  # a gap chunk: no definition
]


@pytest.fixture
def table() -> SymbolTable:
    return SymbolTable("token", ROWS)


def _found(table: SymbolTable, name: str, **kwargs: object) -> list[tuple[str, str, str]]:
    return [(d.symbol, d.path, d.match) for d in table.lookup(name, limit=kwargs.pop("limit", 20), **kwargs)]


def test_matches_come_exact_then_qualified_then_ignoring_case_then_prefixes(table: SymbolTable) -> None:
    assert _found(table, "computeTotal") == [
        ("computeTotal", "src/total.py", "exact"),
        ("Cart.computeTotal", "src/cart.ts", "qualified"),
        ("COMPUTETOTAL", "lib/old.py", "case_insensitive"),
        ("computeTotalPrice", "src/cart.ts", "prefix"),
    ]
    assert [m for *_, m in _found(table, "computetotalp")] == ["prefix_case_insensitive"]
    assert set(MATCHES) >= {m for *_, m in _found(table, "c")}


def test_a_qualified_name_matches_its_whole_symbol(table: SymbolTable) -> None:
    assert _found(table, "Cart.computeTotal") == [("Cart.computeTotal", "src/cart.ts", "exact")]
    assert _found(table, "Cart.comp")[0] == ("Cart.computeTotal", "src/cart.ts", "prefix")


def test_filters_and_limit_apply_before_the_cut(table: SymbolTable) -> None:
    assert _found(table, "computeTotal", language="typescript") == [
        ("Cart.computeTotal", "src/cart.ts", "qualified"), ("computeTotalPrice", "src/cart.ts", "prefix")]
    assert [p for _, p, _ in _found(table, "computeTotal", path_ok=compile_glob("lib/**"))] == ["lib/old.py"]
    assert len(_found(table, "computeTotal", limit=2)) == 2
    assert _found(table, "  ") == [] and _found(table, "nothing") == []


def test_windows_of_one_unit_make_one_definition_and_separate_ranges_two(table: SymbolTable) -> None:
    runs = table.lookup("run", limit=10)
    assert [(d.start_line, d.end_line, d.chunk_id) for d in runs] == [
        (1, 90, chunk_id("src/big.py", 1, 60, "h6")), (95, 99, chunk_id("src/big.py", 95, 99, "h8"))]
    assert {d.kind for d in runs} == {"method"}


def test_every_chunk_id_names_its_row_and_unknown_ids_none(table: SymbolTable) -> None:
    assert all(table.row_id(chunk_id(path, start, end, digest)) == row_id
               for row_id, path, _, start, end, _, _, digest in ROWS)
    assert table.row_id("0123456789abcdef") is None and len(table) == len(ROWS)


def test_chunk_id_changes_with_key_lines_and_text() -> None:
    base = chunk_id("a.py", 1, 2, "h")
    assert base == chunk_id("a.py", 1, 2, "h") and len(base) == 16
    assert len({base, chunk_id("b.py", 1, 2, "h"), chunk_id("a.py", 1, 3, "h"), chunk_id("a.py", 1, 2, "g")}) == 4


def test_defining_rows_are_each_definitions_first_chunk_without_prefix_matches(table: SymbolTable) -> None:
    assert table.defining_rows("computeTotal", limit=10) == [3, 2, 4]  # not computeTotalPrice
    assert table.defining_rows("run", limit=10) == [6, 8]  # window 7 belongs to definition 6
    assert table.defining_rows("computeTotal", limit=2) == [3, 2]
    assert table.defining_rows("Cart.computeTotal", limit=10) == [2]
    assert table.defining_rows("comp", limit=10) == [] and table.defining_rows(" ", limit=10) == []
