"""Hybrid ranking: fusion arithmetic and the cheap signals, by direct calls of merge/fuse on
ChunkRow lists (search() itself, on an indexed tree, is tested in test_search.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sai.models import ChunkRow
from sai.query import intent, ranking
from sai.query.ranking import fuse, merge
from sai.query.ranking.facts import facts_of


def row(chunk_id: int, path: str, *, symbol: str | None = None, score: float = 0.0) -> ChunkRow:
    return ChunkRow(id=chunk_id, path=path, language="python", start_line=chunk_id,
                    end_line=chunk_id + 1, symbol=symbol, text=f"chunk {chunk_id}", score=score)


# --- fusion arithmetic ------------------------------------------------------------------------

def test_fusion_sums_reciprocal_ranks_of_both_lists(monkeypatch):
    monkeypatch.setattr(ranking.signals, "FILE_SUPPORT", 0.0)  # the file signals are tested below
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


@pytest.mark.parametrize(("query", "share"), [
    ("Gets an unsigned 32 bit integer from self in little-endian byte order", 1.0),  # get, 32, le
    ("Gets an unsigned 32 bit integer from self in big-endian byte order", 2 / 3),  # le is not big endian
    ("Gets an unsigned 32 bit integer, the little one", 2 / 3),  # le spells out two words: both are needed
])
def test_an_abbreviated_name_word_is_held_when_the_query_spells_it_out(query, share):
    pool = ranking.signals.Pool([], facts_of(query))
    got = ranking.signals.name_match(row(1, "buf.rs", symbol="Buf.get_u32_le"), pool)
    assert got == pytest.approx(ranking.signals.NAME_MATCH * share)


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


@pytest.mark.parametrize("constructor", [
    replace(row(1, "JsonMapper.java", symbol="JsonMapper.JsonMapper"), kind="constructor"),
    row(1, "json_mapper.rb", symbol="JsonMapper.JsonMapper"),  # a callable named like its type
])
def test_a_bare_type_name_finds_the_type_before_its_constructor(constructor):
    cls = replace(row(2, "JsonMapper.java", symbol="JsonMapper", score=0.5), kind="class")
    fused = fuse(merge([constructor, cls], [(constructor, 3.0), (cls, 2.0)]), "JsonMapper")
    assert [c.row.id for c in fused] == [2, 1]
    assert (fused[0].signals.definition, fused[1].signals.definition) == (
        ranking.NAME_QUERY_BOOST, ranking.DEFINITION_BOOST)


@pytest.mark.parametrize(("query", "wanted", "other"), [
    ("Session", ("sessions.py", "Session", "class"), ("sessions.py", "session", "function")),  # case
    ("Engine", ("gin.go", "Engine", "struct"), ("binding/validator.go", "validator.Engine", "method")),  # nesting
    ("Sinatra::Helpers", ("base.rb", "Sinatra.Helpers", "module"), ("base.rb", "Sinatra.helpers", "method")),
])
def test_a_bare_name_gets_its_closest_definition_first(query, wanted, other):
    rows = [replace(row(i, path, symbol=name), kind=kind) for i, (path, name, kind) in enumerate((other, wanted), 1)]
    fused = fuse(merge(rows, [(rows[0], 2.0), (rows[1], 1.0)]), query)  # the other one leads both lists
    assert [c.row.symbol for c in fused] == [wanted[1], other[1]]
    assert [c.signals.definition for c in fused] == [ranking.NAME_QUERY_BOOST, ranking.DEFINITION_BOOST]


def test_a_definition_neither_list_holds_joins_the_candidates_without_ranks():
    caller, definition = row(1, "a.py", symbol="use_it"), row(2, "b.py", symbol="add_item")
    merged = {c.row.id: c for c in merge([caller], [(caller, 3.0)], [definition, caller])}
    assert (merged[2].semantic_rank, merged[2].lexical_rank) == (None, None)
    assert (merged[1].semantic_rank, merged[1].lexical_rank) == (1, 1)  # a defined row in a list keeps its ranks
    assert fuse(list(merged.values()), "add_item")[0].row.id == 2


def test_a_test_files_support_takes_its_penalty():
    tests = [row(i, "src/test/CartTest.java", symbol=f"CartTest.t{i}") for i in range(1, 9)]
    code = row(9, "src/main/Cart.java", symbol="Cart")
    fused = {c.row.id: c for c in fuse(merge([*tests, code], []), "how the cart totals are computed")}
    best = fused[1]
    assert best.signals.file_support == pytest.approx(ranking.FILE_SUPPORT * ranking.TEST_PENALTY)


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
        assert c.fused == pytest.approx(ranking.recombined(c.rrf, dict(c.signals.values)))


# --- file-level signals -----------------------------------------------------------------------

def test_a_file_the_query_names_ranks_above_a_slightly_closer_chunk():
    other, named = row(1, "net/helpers.py"), row(2, "net/resolver.py")
    fused = fuse(merge([other, named], []), "how the DNS resolver is chosen")
    assert [c.row.path for c in fused] == ["net/resolver.py", "net/helpers.py"]
    assert fused[0].signals.path_match == pytest.approx(ranking.PATH_MATCH / 3)  # dns, resolver, chosen
    assert fused[1].signals.path_match == 0.0


def test_a_word_names_a_file_through_its_stem():
    other, named = row(1, "msgpack/helpers.cs"), row(2, "msgpack/Serializer.cs")
    fused = fuse(merge([other, named], []), "how objects are serialized to bytes")
    assert [c.row.path for c in fused] == ["msgpack/Serializer.cs", "msgpack/helpers.cs"]
    assert fused[0].signals.path_match == pytest.approx(ranking.PATH_MATCH / 3)  # objects, serialized, bytes



def test_a_bare_identifier_that_is_a_file_name_brings_that_file_first():
    caller, named = row(1, "detail/output/serializer.hpp", symbol="serializer"), row(2, "adl_serializer.hpp")
    lists = ([caller, named], [(caller, 5.0), (named, 4.0)])
    fused = fuse(merge(*lists), "adl_serializer")
    assert [c.row.path for c in fused] == ["adl_serializer.hpp", "detail/output/serializer.hpp"]
    assert fused[0].signals.path_match == ranking.FILE_NAMED
    assert fuse(merge(*lists), "serializer output")[0].row.path == "detail/output/serializer.hpp"


def test_a_file_many_candidates_come_from_outranks_one_slightly_better_chunk():
    lone = row(1, "lone.py")
    module = [row(10 + i, "routing.py") for i in range(3)]
    fused = fuse(merge([lone, *module], []), "how are url routes matched")
    assert fused[0].row.path == "routing.py"
    assert fused[0].signals.file_support == pytest.approx(ranking.FILE_SUPPORT)
    assert [c.signals.file_support > 0 for c in fused].count(True) == 2  # each file's best chunk only


def test_further_chunks_of_a_file_rank_below_other_files_best():
    big = [row(i, "big.py") for i in range(1, 4)]
    small = row(9, "small.py")
    fused = fuse(merge([*big, small], []), "some words here")
    assert [c.row.path for c in fused] == ["big.py", "small.py", "big.py", "big.py"]
    assert [c.signals.repeat for c in fused] == [1.0, 1.0, ranking.REPEAT_DECAY, ranking.REPEAT_DECAY ** 2]



@pytest.mark.parametrize("query", ["Return the width of the box", "Parses a header line", "True if the box is empty",
                                   "copies the buffer"])
def test_a_query_reading_like_a_functions_docstring_gets_no_file_signals(query):
    big = [row(i, "big.py") for i in range(1, 4)]
    small = row(9, "small.py")
    fused = fuse(merge([*big, small], []), query)
    assert [c.row.path for c in fused] == ["big.py", "big.py", "big.py", "small.py"]  # plain fused order
    assert all(c.signals.repeat == 1.0 and c.signals.file_support == 0.0 for c in fused)


@pytest.mark.parametrize("query", ["box width computation", "how is the box width computed", "where boxes are drawn"])
def test_a_topic_or_question_gets_the_file_signals(query):
    big = [row(i, "big.py") for i in range(1, 4)]
    fused = fuse(merge([*big, row(9, "small.py")], []), query)
    assert [c.row.path for c in fused][:2] == ["big.py", "small.py"]
    assert fused[0].signals.file_support > 0


@pytest.mark.parametrize("query", ["Rails::Engine", "Illuminate\\Routing\\Router", "pkg.sub.Router"])
def test_a_qualified_name_is_looked_up_by_its_last_part(query):
    other = row(1, "lib/other.rb", symbol="Helper")
    named = row(2, f"lib/{query.replace('::', '.').replace(chr(92), '.').split('.')[-1].lower()}.rb")
    fused = fuse(merge([other, named], [(other, 3.0)]), query)
    assert fused[0].row.id == 2 and fused[0].signals.path_match == ranking.FILE_NAMED


def test_a_query_starting_with_a_verb_prefers_functions_to_classes_and_gap_chunks():
    cls = replace(row(1, "box.py", symbol="Box"), kind="class")
    gap = row(2, "box.py")
    method = replace(row(3, "box.py", symbol="Box.width"), kind="method")
    lists = ([cls, gap, method], [])
    acting = fuse(merge(*lists), "Return the width of the box")
    assert acting[0].row.id == 3
    assert {c.row.id: c.signals.kind_factor for c in acting} == {1: ranking.ACTION_UNIT, 2: ranking.ACTION_UNIT, 3: 1.0}
    assert fuse(merge(*lists), "A box with a width")[0].row.id == 1  # no verb: no factor


@pytest.mark.parametrize(("query", "place", "verb"), [
    ("how are routes registered", True, False),
    ("connection pooling and TCP connector", True, False),
    ("request and response object internals", True, False),  # `request` names a topic here
    ("Request the lock before writing", False, True),
    ("Return the MIME type of the part", False, True),
    ("Parses a header line", False, True),
    ("Optionally set the formatter", False, True),
    ("True if the box is empty", False, False),
    ("websocket client implementation for streaming binary frames over a connection", False, False),
])
def test_query_intent_from_its_first_words(query, place, verb):
    words = query.split()
    assert intent.asks_for_place(words) is place
    assert intent.starts_with_verb(words) is verb


def test_the_file_a_name_is_exactly_beats_its_partial_files():
    partial, whole = row(1, "src/Serializer.Json.cs"), row(2, "src/Serializer.cs")
    fused = fuse(merge([partial, whole], [(partial, 2.0), (whole, 1.0)]), "Serializer")
    assert [c.row.id for c in fused] == [2, 1]
    assert (fused[0].signals.path_match, fused[1].signals.path_match) == (ranking.FILE_NAMED, ranking.FILE_NAMED / 2)


def test_an_identifier_inside_a_sentence_that_is_a_file_name_lifts_that_file():
    other, named = row(1, "src/JToken.cs"), row(2, "src/JsonReader.cs")
    fused = fuse(merge([other, named], []), "JsonReader base class and token reading API")
    assert fused[0].row.path == "src/JsonReader.cs"
    # of its 6 words (stopwords aside) "jsonreader" meets the name part "json", "reading" "reader"
    assert fused[0].signals.path_match == pytest.approx(ranking.NAMED_INSIDE + 2 * ranking.PATH_MATCH / 6)


def test_adjacent_words_run_together_name_a_file():
    other, named = row(1, "gson/JsonTreeWriter.java"), row(2, "gson/JsonElement.java")
    fused = fuse(merge([other, named], []), "JSON element hierarchy and tree model")
    assert fused[0].row.path == "gson/JsonElement.java"
    assert fused[0].signals.path_match == pytest.approx(ranking.NAMED_INSIDE + 2 * ranking.PATH_MATCH / 5)
    assert fused[1].signals.path_match == pytest.approx(2 * ranking.PATH_MATCH / 5)  # json, tree: no name


# --- a leading scope names the place (commit subjects, task titles) ---------------------------

@pytest.mark.parametrize(("query", "scopes"), [
    ("fix(client): send falsy JSON bodies", (("client",),)),
    ("ignore/types: add `ssa` type", (("ignore", "types"),)),
    ("ignore,globset: increase pool capacity", (("ignore",), ("globset",))),
    ("puma_http11.c: pre-intern env keys", (("pumahttp11.c",),)),
    ("feat(trie-router)!: match suffix wildcards", (("trierouter",),)),
    ("fix: derive Default when possible", ()),  # a change type names no place
    ("Fix the parser: it drops the last line", ()),  # a colon later in the sentence is no scope
    ("parse the header", ()),
])
def test_a_leading_scope_is_read_as_the_place_it_names(query, scopes):
    assert facts_of(query).scopes == scopes


def test_a_chunk_under_the_scope_ranks_above_closer_chunks_elsewhere():
    other, scoped = row(1, "src/router/reg-exp-router/router.ts"), row(2, "src/router/trie-router/node.ts")
    lists = ([other, scoped], [(other, 3.0), (scoped, 2.0)])
    assert fuse(merge(*lists), "match suffix wildcard routes")[0].row.id == 1
    first = fuse(merge(*lists), "fix(trie-router): match suffix wildcard routes")[0]
    assert first.row.id == 2
    assert first.signals is not None and first.signals.scope_match == ranking.signals.SCOPE_MATCH


@pytest.mark.parametrize(("path", "inside"), [
    ("crates/ignore/src/types.rs", True),
    ("crates/ignore/src/default_types.rs", True),  # one of the file name's words
    ("crates/globset/src/types.rs", False),  # the parts in order: ignore, then types
    ("modules/caddypki/ca.go", True),  # the folder's name ends with it
])
def test_a_scope_names_folders_and_files_in_order(path, inside):
    scope = facts_of("ignore/types: add a type").scopes if "pki" not in path else (("pki",),)
    assert ranking.in_scope(path, scope) is inside


def test_ci_scripts_and_regression_tests_rank_as_tests_do_unless_asked_for():
    ci, regress, code = row(1, ".github/travis/build.sh"), row(2, "regress/pane-ops.sh"), row(3, "spawn.c")
    lists = ([ci, regress, code], [(ci, 3.0), (regress, 2.0), (code, 1.0)])
    assert fuse(merge(*lists), "do not invoke clear check on respawn")[0].row.path == "spawn.c"
    assert fuse(merge(*lists), "build on the github ci with asan")[0].row.path == ".github/travis/build.sh"


def test_a_name_defined_only_in_a_test_is_found_first_by_that_name():
    helper = row(1, "tests/helpers.py", symbol="build_sample_tree")
    callers = [row(i, f"src/m{i}.py", symbol=f"use{i}") for i in range(2, 6)]
    lexical = [(c, 9.0 - c.id) for c in callers] + [(helper, 1.0)]
    assert fuse(merge([*callers, helper], lexical), "build_sample_tree")[0].row.id == 1
