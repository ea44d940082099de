"""Hybrid ranking: fusion arithmetic and the cheap signals, by direct calls of merge/fuse on
ChunkRow lists (search() itself, on an indexed tree, is tested in test_search.py)."""

from __future__ import annotations

import pytest

from sai.query import ranking
from sai.query.ranking import fuse, merge
from sai.store.tables import ChunkRow


def row(chunk_id: int, path: str, *, symbol: str | None = None, score: float = 0.0) -> ChunkRow:
    return ChunkRow(id=chunk_id, path=path, language="python", start_line=chunk_id,
                    end_line=chunk_id + 1, symbol=symbol, text=f"chunk {chunk_id}", score=score)


# --- fusion arithmetic ------------------------------------------------------------------------

def test_fusion_sums_reciprocal_ranks_of_both_lists():
    a, b, c = row(1, "a.py"), row(2, "b.py"), row(3, "c.py")
    fused = fuse(merge([a, b], [(c, 9.0), (b, 5.0)]), "some words here")
    k = ranking.RRF_K
    expected = {1: 1 / (k + 1), 2: 1 / (k + 2) + 1 / (k + 2), 3: 1 / (k + 1)}
    assert {f.row.id: f.fused for f in fused} == pytest.approx(expected)
    assert [f.row.id for f in fused] == [2, 1, 3]  # in both lists beats first place in one


def test_symbol_whose_name_words_the_query_holds_ranks_higher():
    write, read = row(1, "buf.js", symbol="Buffer.writeFloat"), row(2, "buf.js", symbol="Buffer.readFloat")
    order = [c.row.id for c in fuse(merge([write, read], []), "reads a float from the buffer")]
    assert order == [2, 1]


def test_merge_keeps_each_chunk_once_with_its_rank_in_each_list():
    a, b = row(1, "a.py", score=0.9), row(2, "b.py", score=0.5)
    merged = {c.row.id: c for c in merge([a, b], [(b, 7.5)])}
    assert (merged[1].semantic_rank, merged[1].lexical_rank) == (1, None)
    assert (merged[2].semantic_rank, merged[2].lexical_rank, merged[2].bm25) == (2, 1, 7.5)


def test_fusion_ties_break_by_path_then_line():
    rows = [row(5, "b.py"), row(4, "a.py")]
    fused = fuse(merge([], [(rows[0], 1.0)]) + merge([], [(rows[1], 1.0)]), "two words")
    assert [f.row.path for f in fused] == ["a.py", "b.py"]


def test_tests_and_examples_rank_below_code_unless_the_query_asks_for_them():
    test, example, code = row(1, "tests/test_cart.py"), row(2, "examples/cart.py"), row(3, "src/cart.py")
    lists = ([test, example, code], [(test, 3.0), (example, 2.0), (code, 1.0)])
    plain = [c.row.path for c in fuse(merge(*lists), "add an item to the cart")]
    assert plain[0] == "src/cart.py"
    asked = [c.row.path for c in fuse(merge(*lists), "tests for adding an item to the cart")]
    assert asked[0] == "tests/test_cart.py"


def test_a_chunk_defining_a_named_identifier_is_boosted():
    caller, definer = row(1, "a.py", symbol="use_it"), row(2, "b.py", symbol="Cart.add_item")
    lists = ([caller, definer], [(caller, 4.0), (definer, 3.0)])
    assert fuse(merge(*lists), "add_item")[0].row.id == 2
    assert fuse(merge(*lists), "where is add_item called")[0].row.id == 2
    assert fuse(merge(*lists), "put something in the basket")[0].row.id == 1


def test_fuse_records_what_each_signal_added():
    defined = row(1, "src/http.py", symbol="Client.fetch_json")
    tested = row(2, "tests/test_http.py", symbol="test_fetch_json")
    fused = {c.row.id: c for c in fuse(merge([defined, tested], [(tested, 3.0)]), "fetch_json")}
    k = ranking.RRF_K
    first, second = fused[1], fused[2]
    assert first.rrf == pytest.approx(1 / (k + 1)) and second.rrf == pytest.approx(1 / (k + 2) + 1 / (k + 1))
    assert first.signals.definition == ranking.NAME_QUERY_BOOST and first.signals.test_penalty == 1.0
    assert second.signals.test_penalty == ranking.TEST_PENALTY and second.signals.definition == 0.0
    for c in (first, second):
        s = c.signals
        assert c.fused == pytest.approx((c.rrf + s.name_match + s.definition) * s.test_penalty)
