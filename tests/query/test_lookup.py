"""After a hit: chunk_id, sai_read_chunk / `sai read`, sai_find_symbol / `sai symbol`, and search
explain, through a real MCP session over stdio and the CLI, against the Ollama stand-in."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal
from fixtures_tree import run_cli
from mcp_sessions import Session, index_project, mcp_session, standin_env
from ollama_standin import OllamaStandIn

from sai.models import chunk_id, sha256_hex
from sai.query.ranking import TEST_PENALTY, recombined

CART = """\
import { Item } from "./item";

export class Cart {
  private items: Item[] = [];

  computeTotal(items: Item[]): number {
    return items.reduce((sum, item) => sum + item.price, 0);
  }

  add(item: Item): void {
    this.items.push(item);
  }
}

export function computeTotalPrice(cart: Cart): number {
  return cart.computeTotal([]);
}
"""
ITEM = "export interface Item {\n  name: string;\n  price: number;\n}\n"
BILLING = '''"""Billing helpers."""


class Invoice:
    def computetotal(self, lines):
        return sum(line.amount for line in lines)


def compute_discount(total, rate):
    return total * rate
'''
TEST_CART = "def test_compute_total():\n    assert compute_total([]) == 0\n"
TREE = {"src/cart.ts": CART, "src/item.ts": ITEM, "src/billing.py": BILLING, "tests/test_cart.py": TEST_CART}
HEX16 = re.compile(r"[0-9a-f]{16}")


def _build(root: Path, standin: OllamaStandIn) -> Path:
    for key, text in TREE.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(text, encoding="utf-8")
    (root / "sai-cfg.yml").write_text("root: .\next: [ts, py]\n", encoding="utf-8")
    return index_project(root, standin)


def _lines(root: Path, key: str, start: int, end: int) -> str:
    return "\n".join((root / key).read_text(encoding="utf-8").split("\n")[start - 1:end])


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Path:
    return _build(tmp_path_factory.mktemp("lookup") / "project", standin)


@pytest.fixture(scope="module")
def session(portal: BlockingPortal, project_dir: Path, standin: OllamaStandIn) -> Iterator[Session]:
    with mcp_session(portal, project_dir, standin_env(standin)) as opened:
        yield opened


def _hit(session: Session, query: str, symbol: str, **arguments: object) -> dict:
    hits = session.call("sai_search_code", query=query, **arguments)["hits"]
    return next(h for h in hits if h["symbol"] == symbol)


# ---------------------------------------------------------------- chunk_id
def test_every_hit_and_cluster_member_carries_its_chunk_id(session: Session, project_dir: Path) -> None:
    hits = session.call("sai_search_code", query="compute the total price of the items")["hits"]
    similar = session.call("sai_find_similar", path="src/cart.ts", line=7, min_score=0.0)["hits"]
    clusters = session.call("sai_find_duplicates", min_score=0.0, top_k=3)["clusters"]
    members = [m for c in clusters for m in c["members"]]
    assert hits and similar and members
    for found in hits + similar + members:
        text = _lines(project_dir, found["path"], found["start_line"], found["end_line"])
        if found.get("symbol") == "Cart":  # a class chunk holds its own lines, not its methods'
            continue
        expected = chunk_id(found["path"], found["start_line"], found["end_line"], sha256_hex(text))
        assert found["chunk_id"] == expected, found


def test_chunk_ids_are_the_same_in_an_index_built_elsewhere(
    session: Session, portal: BlockingPortal, tmp_path: Path, standin: OllamaStandIn
) -> None:
    other = _build(tmp_path / "elsewhere", standin)
    with mcp_session(portal, other, standin_env(standin)) as second:
        theirs = second.call("sai_search_code", query="compute total", limit=20)["hits"]
    ours = session.call("sai_search_code", query="compute total", limit=20)["hits"]
    assert {(h["path"], h["start_line"], h["chunk_id"]) for h in theirs} == {
        (h["path"], h["start_line"], h["chunk_id"]) for h in ours}


# ---------------------------------------------------------------- sai_read_chunk
def test_read_chunk_by_a_hits_id_gives_the_chunk_its_neighbours_and_its_class(
    session: Session, project_dir: Path
) -> None:
    hit = _hit(session, "compute the total of the items", "Cart.computeTotal")
    read = session.call("sai_read_chunk", chunk_id=hit["chunk_id"], neighbours=1, enclosing=True)
    chunk = read["chunk"]
    assert (chunk["path"], chunk["start_line"], chunk["end_line"]) == ("src/cart.ts", 6, 8)
    assert chunk["text"] == _lines(project_dir, "src/cart.ts", 6, 8)
    assert (chunk["symbol"], chunk["kind"], chunk["language"]) == ("Cart.computeTotal", "method", "typescript")
    assert chunk["chunk_id"] == hit["chunk_id"] and chunk["stale"] is False
    (before,), (after,) = read["before"], read["after"]
    assert (before["start_line"], before["end_line"], before["symbol"]) == (1, 1, None)
    assert before["text"] == _lines(project_dir, "src/cart.ts", 1, 1)
    assert (after["start_line"], after["end_line"], after["symbol"], after["kind"]) == (10, 12, "Cart.add", "method")
    assert after["text"] == _lines(project_dir, "src/cart.ts", 10, 12)
    enclosing = read["enclosing"]
    assert (enclosing["symbol"], enclosing["kind"], enclosing["start_line"], enclosing["end_line"]) == (
        "Cart", "class", 3, 13)


def test_read_chunk_neighbours_are_clamped_to_5_and_enclosing_is_off_by_default(session: Session) -> None:
    hit = _hit(session, "compute the total of the items", "Cart.computeTotal")
    none = session.call("sai_read_chunk", chunk_id=hit["chunk_id"], neighbours=0)
    assert (none["before"], none["after"], none["enclosing"]) == ([], [], None)
    many = session.call("sai_read_chunk", chunk_id=hit["chunk_id"], neighbours=99)
    assert [c["start_line"] for c in many["after"]] == [10, 15]  # every chunk after it in the file
    assert many == session.call("sai_read_chunk", chunk_id=hit["chunk_id"], neighbours=5)


def test_read_chunk_by_path_and_lines(session: Session) -> None:
    inside = session.call("sai_read_chunk", path="src/cart.ts", start_line=7, neighbours=0)["chunk"]
    assert (inside["symbol"], inside["start_line"], inside["end_line"]) == ("Cart.computeTotal", 6, 8)
    spanning = session.call("sai_read_chunk", path="src/cart.ts", start_line=7, end_line=11)["chunk"]
    assert (spanning["symbol"], spanning["start_line"], spanning["end_line"]) == ("Cart", 3, 13)
    past = session.call("sai_read_chunk", path="src/cart.ts", start_line=16, end_line=99)["chunk"]
    assert past["symbol"] == "computeTotalPrice"  # no chunk holds the range: the one at start_line
    by_id = session.call("sai_read_chunk", chunk_id=inside["chunk_id"], neighbours=0)["chunk"]
    assert by_id == inside


@pytest.mark.parametrize(("arguments", "message"), [
    ({"path": "src/cart.ts", "start_line": 2}, "no indexed chunk at src/cart.ts:2"),
    ({"path": "src/none.ts", "start_line": 1}, "no indexed chunk at src/none.ts:1"),
    ({"path": "../../etc/passwd", "start_line": 1}, "outside the project root"),
    ({"path": "src/cart.ts"}, "path and start_line go together; give both (end_line is optional)"),
    ({}, "give a chunk_id from a search hit, or path and start_line"),
    ({"chunk_id": "0123456789abcdef", "path": "src/cart.ts", "start_line": 1},
     "give either chunk_id or path with start_line, not both"),
    ({"chunk_id": "nope"}, "chunk_id 'nope' is not a chunk_id"),
    ({"path": "src/cart.ts", "start_line": 9, "end_line": 3}, "lines 9-3 are not a range"),
    ({"chunk_id": "0123456789abcdef"}, "chunk 0123456789abcdef is not in the index (the code changed "
     "or was re-indexed); search again to get a current chunk_id"),
])
def test_read_chunk_refuses_bad_targets_as_invalid_params(session: Session, arguments: dict, message: str) -> None:
    error = session.error("sai_read_chunk", **arguments)
    assert error.code == -32602 and message in error.message, error.message


def test_an_edited_and_reindexed_chunk_is_reported_gone(
    portal: BlockingPortal, project_dir: Path, standin: OllamaStandIn, tmp_path: Path, capsys
) -> None:
    root = tmp_path / "project"
    shutil.copytree(project_dir, root)
    with mcp_session(portal, root, standin_env(standin), "--allow-write") as writer:
        old = _hit(writer, "compute the total of the items", "Cart.computeTotal")["chunk_id"]
        (root / "src/cart.ts").write_text(CART.replace("sum + item.price", "sum + item.price * 2"))
        assert writer.call("sai_read_chunk", chunk_id=old)["chunk"]["stale"] is True
        writer.call("sai_refresh", paths=["src/cart.ts"])
        gone = writer.error("sai_read_chunk", chunk_id=old)
        new = _hit(writer, "compute the total of the items", "Cart.computeTotal")["chunk_id"]
        read = writer.call("sai_read_chunk", chunk_id=new)["chunk"]
    assert gone.code == -32602 and gone.message == (
        f"chunk {old} is not in the index (the code changed or was re-indexed); search again to get "
        "a current chunk_id")
    assert new != old and "item.price * 2" in read["text"] and read["stale"] is False
    cli = subprocess.run([sys.executable, "-m", "sai", "read", old], cwd=root, capture_output=True, text=True,
                         env={**os.environ, **standin_env(standin)}, timeout=60)
    assert (cli.returncode, cli.stdout, cli.stderr) == (1, "", f"error: {gone.message}\n")


# ---------------------------------------------------------------- sai_find_symbol
def test_find_symbol_finds_the_method_by_its_last_name_first(session: Session, standin: OllamaStandIn) -> None:
    before = standin.requests
    found = session.call("sai_find_symbol", name="computeTotal")["definitions"]
    first = found[0]
    assert (first["symbol"], first["path"], first["kind"], first["match"]) == (
        "Cart.computeTotal", "src/cart.ts", "method", "qualified")
    assert (first["start_line"], first["end_line"], first["language"]) == (6, 8, "typescript")
    read = session.call("sai_read_chunk", chunk_id=first["chunk_id"], neighbours=0)["chunk"]
    assert read["symbol"] == "Cart.computeTotal"
    assert [(d["symbol"], d["match"]) for d in found[1:]] == [
        ("Invoice.computetotal", "case_insensitive"), ("computeTotalPrice", "prefix")]
    assert standin.requests == before  # no embedder involved


def test_find_symbol_filters_by_language_glob_and_limit(session: Session) -> None:
    python = session.call("sai_find_symbol", name="computeTotal", language="py")["definitions"]
    assert [d["symbol"] for d in python] == ["Invoice.computetotal"]
    assert session.call("sai_find_symbol", name="Cart", path_glob="src/item.ts")["definitions"] == []
    assert len(session.call("sai_find_symbol", name="c", limit=1)["definitions"]) == 1
    kinds = {d["symbol"]: d["kind"] for d in session.call("sai_find_symbol", name="I", limit=50)["definitions"]}
    assert kinds["Item"] == "interface" and kinds["Invoice"] == "class"
    exact = session.call("sai_find_symbol", name="Cart.computeTotal")["definitions"][0]
    assert (exact["symbol"], exact["match"]) == ("Cart.computeTotal", "exact")


def test_find_symbol_refuses_a_blank_name_and_an_unknown_language(session: Session) -> None:
    assert "symbol name is empty" in session.error("sai_find_symbol", name="  ").message
    assert session.error("sai_find_symbol", name="x", language="cobol").code == -32602


# ---------------------------------------------------------------- explain
def test_hybrid_explain_adds_up_to_the_fused_score_and_orders_the_hits(session: Session) -> None:
    hits = session.call("sai_search_code", query="compute total", explain=True, limit=8)["hits"]
    fused = []
    for hit in hits:
        why = hit["explain"]
        signals = why["signals"]
        assert why["semantic_rank"] is not None or why["lexical_rank"] is not None
        assert why["cosine"] == hit["score"]
        assert why["fused"] == pytest.approx(recombined(why["rrf"], signals), abs=4e-6)
        expected_penalty = TEST_PENALTY if hit["path"].startswith("tests/") else 1.0
        assert signals["test_penalty"] == expected_penalty
        fused.append(why["fused"])
    assert fused == sorted(fused, reverse=True)
    assert "explain" not in session.call("sai_search_code", query="compute total")["hits"][0]


def test_semantic_and_lexical_explain_hold_only_their_list(session: Session) -> None:
    semantic = session.call("sai_search_code", query="compute total", mode="semantic", explain=True,
                            group_by="chunk")["hits"]
    assert [h["explain"]["semantic_rank"] for h in semantic] == [h["rank"] for h in semantic]
    assert all(h["explain"]["lexical_rank"] is h["explain"]["fused"] is h["explain"]["signals"] is None
               for h in semantic)
    lexical = session.call("sai_search_code", query="compute total", mode="lexical", explain=True,
                           group_by="chunk")["hits"]
    assert [h["explain"]["lexical_rank"] for h in lexical] == [h["rank"] for h in lexical]
    assert all(h["explain"]["bm25"] == h["score"] and h["explain"]["cosine"] is None for h in lexical)
    assert all(h["explain"]["semantic_rank"] is h["explain"]["fused"] is None for h in lexical)


# ---------------------------------------------------------------- the CLI
@pytest.fixture
def in_project(project_dir: Path, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(project_dir)
    monkeypatch.setenv("OLLAMA_HOST", standin.url)
    return project_dir


def test_cli_symbol_prints_one_row_per_definition(in_project: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "symbol", "computeTotal", "--limit", "2")
    assert (code, out) == (0, "2 definition(s) of computeTotal:\n"
                               "  src/cart.ts:6-8  Cart.computeTotal  method\n"
                               "  src/billing.py:5-6  Invoice.computetotal  method\n")
    code, out, _ = run_cli(capsys, "symbol", "computeTotal", "--language", "ts", "--json")
    assert [d["symbol"] for d in json.loads(out)["definitions"]] == ["Cart.computeTotal", "computeTotalPrice"]
    assert run_cli(capsys, "symbol", "nothingLikeThis")[1] == "no definitions of nothingLikeThis\n"


def test_cli_read_prints_the_chunk_with_its_neighbours(in_project: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, "read", "--path", "src/cart.ts", "--start-line", "7", "--json", "--enclosing")
    read = json.loads(out)
    assert code == 0 and read["chunk"]["symbol"] == "Cart.computeTotal" and len(read["after"]) == 1
    cid, enclosing = read["chunk"]["chunk_id"], read["enclosing"]
    assert enclosing["text"].startswith("export class Cart {") and enclosing["text"].endswith("}")
    code, out, _ = run_cli(capsys, "read", cid, "--neighbours", "0", "--enclosing")
    assert (code, out) == (0, f"== enclosing src/cart.ts:3-13  Cart  [class]  chunk {enclosing['chunk_id']}\n"
                              f"{enclosing['text']}\n"
                              f"== chunk src/cart.ts:6-8  Cart.computeTotal  [method]  chunk {cid}\n"
                              f"{_lines(in_project, 'src/cart.ts', 6, 8)}\n")
    code, _, err = run_cli(capsys, "read")
    assert (code, err) == (2, "error: give a chunk_id from a search hit, or path and start_line\n")


def test_cli_explain_adds_a_line_after_each_contract_row_only_when_asked(in_project: Path, capsys) -> None:
    _, plain, _ = run_cli(capsys, "--query", "compute total", "--query-only", "--limit", "3")
    _, explained, _ = run_cli(capsys, "--query", "compute total", "--query-only", "--limit", "3", "--explain")
    rows = explained.splitlines()
    assert [r for r in rows if not r.startswith("      explain: ")] == plain.splitlines()
    explains = [k for k, r in enumerate(rows) if r.startswith("      explain: ")]
    assert len(explains) == 3 and all(rows[k].startswith(("      explain: semantic #", "      explain: cosine"))
                                      for k in explains)
    assert all("= fused " in rows[k] for k in explains)
    # each follows its hit's row, or the folded chunks' line under it
    assert all(rows[k - 1].startswith(("  0.", "      lines: ")) for k in explains)
    assert "explain" not in plain
    code, _, err = run_cli(capsys, "--explain")
    assert (code, err) == (2, "error: --explain needs --query; it says why each search hit ranked where it did\n")


def test_cli_through_the_entry_point_as_a_subprocess(project_dir: Path, standin: OllamaStandIn) -> None:
    done = subprocess.run([sys.executable, "-m", "sai", "symbol", "computeTotal", "--json", "--silent"],
                          cwd=project_dir, env={**os.environ, **standin_env(standin)}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout)["definitions"][0]["symbol"] == "Cart.computeTotal"

