"""The token budget (sai/output/budget.py) over the real payload builders and text renders."""

from __future__ import annotations

import pytest

from sai.errors import UsageError
from sai.models import ChunkContext, Cluster, ClusterMember, Definition, Hit, StoredChunk
from sai.output import payloads, render
from sai.output.budget import CHARS_PER_TOKEN, Budget, Spelling, check_budget, kept_context

SPELLING = Spelling(budget="max_tokens", read="sai_read_chunk with its chunk_id")


def _hits(count: int, lines: int = 8) -> list[Hit]:
    body = "\n".join(f"    value_{n} = compute(value_{n - 1})  # step {n}" for n in range(1, lines))
    return [Hit(path=f"src/mod_{i}.py", start_line=1, end_line=lines, symbol=f"handler_{i}", score=0.5,
                text=f"def handler_{i}(request):\n{body}", language="python", rank=i + 1,
                chunk_id=f"{i:016x}") for i in range(count)]


def _chunk(name: str, start: int, lines: int) -> StoredChunk:
    text = "\n".join(f"    line {n} of {name}" for n in range(lines))
    return StoredChunk(path="src/a.py", start_line=start, end_line=start + lines - 1, symbol=name, kind="function",
                       language="python", chunk_id=f"{start:016x}", text=text)


def _context() -> ChunkContext:
    return ChunkContext(chunk=_chunk("middle", 40, 30), stale=False,
                        before=(_chunk("b2", 1, 15), _chunk("b1", 20, 15)),
                        after=(_chunk("a1", 80, 15), _chunk("a2", 100, 15)), enclosing=_chunk("Cls", 1, 5))


@pytest.mark.parametrize("max_tokens", [110, 150, 250, 400, 700, 1000, 1500])
def test_hits_json_never_exceeds_the_budget_and_says_what_it_left_out(max_tokens: int) -> None:
    # from the smallest answer (one hit without its snippet, and the note) to one short of whole
    hits = _hits(12)
    out = payloads.fitted_hits_json(hits, budget=Budget(max_tokens, SPELLING))
    assert payloads.json_size(out) <= max_tokens * CHARS_PER_TOKEN
    assert [h["path"] for h in out["hits"]] == [h.path for h in hits[:len(out["hits"])]]  # rank order
    truncated = out["truncated"]
    assert truncated["omitted"] == 12 - len(out["hits"])
    assert "raise max_tokens" in truncated["hint"] and truncated["max_tokens"] == max_tokens


def test_snippets_are_shortened_before_hits_are_left_out() -> None:
    hits = _hits(8)
    whole = payloads.json_size(payloads.hits_json(hits))
    out = payloads.fitted_hits_json(hits, budget=Budget(whole // CHARS_PER_TOKEN - 20, SPELLING))
    assert len(out["hits"]) == 8
    assert out["truncated"]["omitted"] == 0 and out["truncated"]["shortened"] == 8
    head = out["truncated"]["head"]
    assert 0 < head < 8 and all(h["snippet"].count("\n") == head - 1 for h in out["hits"])
    assert "sai_read_chunk with its chunk_id" in out["truncated"]["hint"]


def test_an_answer_that_fits_is_unchanged_and_has_no_truncated_key() -> None:
    hits = _hits(3)
    assert payloads.fitted_hits_json(hits, budget=Budget(10_000, SPELLING)) == payloads.hits_json(hits)


def test_a_budget_too_small_for_one_hit_gives_the_best_hit_without_its_snippet() -> None:
    out = payloads.fitted_hits_json(_hits(5), budget=Budget(1, SPELLING))
    assert [h["symbol"] for h in out["hits"]] == ["handler_0"] and out["hits"][0]["snippet"] == ""
    assert out["truncated"]["over_budget"] is True and out["truncated"]["omitted"] == 4
    assert "too small for even one hit" in out["truncated"]["hint"]


@pytest.mark.parametrize("max_tokens", [0, -5, 2.5, "100", True, None])
def test_a_budget_that_is_not_a_positive_integer_is_refused(max_tokens: object) -> None:
    with pytest.raises(UsageError, match="not a positive integer"):
        check_budget(max_tokens)


@pytest.mark.parametrize("max_tokens", [120, 200, 300, 450, 700])
def test_a_read_leaves_out_the_farthest_context_before_cutting_the_chunk(max_tokens: int) -> None:
    context = _context()
    out = payloads.fitted_chunk_context_json(context, budget=Budget(max_tokens, SPELLING))
    assert payloads.json_size(out) <= max_tokens * CHARS_PER_TOKEN
    kept = (out["enclosing"] is not None) + len(out["before"]) + len(out["after"])
    if out["chunk"]["text"] != context.chunk.text:  # the chunk is cut only once it stands alone
        assert kept == 0 and out["truncated"]["shortened"] == 1
    assert out["truncated"]["omitted"] == 5 - kept


def test_kept_context_takes_the_enclosing_unit_then_the_nearest_neighbours() -> None:
    context = _context()
    assert kept_context(context, 2).enclosing is not None and not kept_context(context, 2).before
    three = kept_context(context, 3)
    assert [c.symbol for c in three.before] == ["b1"] and not three.after
    four = kept_context(context, 4)
    assert [c.symbol for c in four.after] == ["a1"]
    assert kept_context(context, 6) == context


def test_definitions_and_clusters_are_cut_at_the_end_and_fit() -> None:
    found = [Definition(symbol=f"Cart.total_{i}", kind="method", path=f"src/cart_{i}.py", start_line=1, end_line=9,
                        language="python", chunk_id=f"{i:016x}", match="prefix") for i in range(30)]
    symbols = payloads.fitted_definitions_json(found, budget=Budget(300, SPELLING))
    assert payloads.json_size(symbols) <= 1200 and symbols["truncated"]["omitted"] == 30 - len(symbols["definitions"])
    members = tuple(ClusterMember(path=f"src/copy_{i}.py", start_line=1, end_line=12, symbol="parse", chunk_id="f" * 16)
                    for i in range(40))
    text = render.duplicate_clusters([Cluster(members=members, min_sim=0.95, max_sim=0.99)], min_score=0.9,
                                     min_cluster_size=2, top_k=10)
    assert text.count("\n") == 42  # unbudgeted: every member


def test_text_output_ends_with_the_omission_line_and_fits() -> None:
    hits = _hits(40)
    budget = Budget(300, Spelling(budget="--max-tokens", read="`sai read CHUNK_ID`"))
    text = payloads.fit_hits(hits, lambda cut: render.query_results("q", hits, cut=cut, budget=budget),
                             size=len, budget=budget)
    assert len(text) <= 1200
    last = text.rstrip("\n").split("\n")[-1]
    shown = int(text.split()[1])
    assert last == f"… {40 - shown} more hits omitted to fit --max-tokens 300; raise --max-tokens"
