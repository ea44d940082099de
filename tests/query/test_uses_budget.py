"""`max_tokens` on the answers that follow the code (refs, callers, callees, impact), on a real
indexed git tree: the rendered answer (MCP text content, `--json` line, CLI text) never exceeds
its budget, keeps its places best first, and says what it left out in `truncated`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal
from fixtures_tree import open_served, run_cli, write_tree
from mcp_sessions import mcp_session, standin_env
from ollama_standin import OllamaStandIn

from sai.impact import impact
from sai.indexing import indexer
from sai.output.budget import Budget, Spelling
from sai.output.uses import call_tree_json, fitted_call_tree_json, fitted_impact_json, impact_json
from sai.query.calls import callers

MIDS, TOPS = 6, 4
HUB = "def leaf(n):\n    return n + 1\n\n\n" + "".join(
    f"def mid_{i}(n):\n    return leaf(n) * {i}\n\n\n" for i in range(MIDS))
TOP = "".join(f"from hub import mid_{i}\n" for i in range(MIDS)) + "\n\n" + "".join(
    f"def top_{i}_{j}(n):\n    return mid_{i}(n) + {j}\n\n\n" for i in range(MIDS) for j in range(TOPS)) + (
    "def fan(n):\n    return " + " + ".join(f"mid_{i}(n)" for i in range(MIDS)) + "\n")
COPY = "def leaf_copy(n):\n    return n + 1\n"
CONFIG = "root: .\next: [py]\n"
SMALL = 150  # tokens: every one of these answers is larger whole
CLI = (("refs", "leaf"), ("refs", "mid_0"), ("callers", "leaf", "--depth", "2"), ("callees", "fan", "--depth", "2"),
       ("impact",))
MCP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sai_find_references", {"name": "mid_1"}), ("sai_find_callers", {"name": "leaf", "depth": 2}),
    ("sai_find_callees", {"name": "fan", "depth": 2}), ("sai_impact", {}))
MCP_BUDGET = Budget(SMALL, Spelling(budget="max_tokens", read="sai_read_chunk with its chunk_id"))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Path:
    tree = {"hub.py": HUB, "top.py": TOP, "copy.py": COPY, "sai-cfg.yml": CONFIG, ".gitignore": ".index/\n"}
    root = write_tree(tmp_path_factory.mktemp("usesbudget") / "project", tree)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    (root / "hub.py").write_text(HUB.replace("+ 1", "+ 2").replace(") * ", ") // "), encoding="utf-8")
    project = open_served(root, standin)
    try:
        indexer.index(project)
    finally:
        project.close()
    return root


@pytest.mark.parametrize("command", CLI, ids=["-".join(c) for c in CLI])
def test_cli_answers_fit_a_small_budget_and_say_what_they_left_out(
    capsys: pytest.CaptureFixture[str], root: Path, command: tuple[str, ...]
) -> None:
    config = ("--config", str(root / "sai-cfg.yml"))
    code, whole, _ = run_cli(capsys, *config, *command, "--json", "--max-tokens", "100000")
    assert code == 0 and "truncated" not in json.loads(whole) and len(whole) > SMALL * 4
    code, line, _ = run_cli(capsys, *config, *command, "--json", "--max-tokens", str(SMALL))
    answer = json.loads(line)
    assert code == 0 and len(line) - 1 <= SMALL * 4, len(line)
    truncated = answer["truncated"]
    assert truncated["omitted"] > 0 and truncated["max_tokens"] == SMALL and "raise --max-tokens" in truncated["hint"]
    if command[0] in ("callers", "callees"):
        assert f"`sai {command[0]} SYMBOL` follows a kept node further" in truncated["hint"]
    code, text, _ = run_cli(capsys, *config, *command, "--max-tokens", str(SMALL // 3))  # text is terser
    last = text.rstrip("\n").split("\n")[-1]
    assert code == 0 and len(text) <= SMALL // 3 * 4 and last.startswith("… ") and "raise --max-tokens" in last


def test_a_tree_keeps_its_shallow_levels_first_and_counts_what_it_pruned(root: Path, standin: OllamaStandIn) -> None:
    project = open_served(root, standin)
    try:
        tree = callers(project, "leaf", depth=2, limit=10)
    finally:
        project.close()
    whole = call_tree_json(tree)
    callers_of_a_mid = TOPS + 1  # its tops and fan
    assert len(whole["tree"]) == MIDS and all(len(n["children"]) == callers_of_a_mid for n in whole["tree"])
    cut = fitted_call_tree_json(tree, budget=Budget(1200, MCP_BUDGET.spelling))
    assert len(json.dumps(cut, ensure_ascii=False)) <= 1200 * 4
    assert [n["symbol"] for n in cut["tree"]] == [n["symbol"] for n in whole["tree"]]  # every mid before any top
    kept = [len(n["children"]) for n in cut["tree"]]
    assert kept == sorted(kept, reverse=True) and 0 < sum(kept) < MIDS * callers_of_a_mid  # earlier siblings first
    assert all(n["more"] == callers_of_a_mid - len(n["children"]) for n in cut["tree"])
    assert cut["truncated"]["omitted"] == MIDS * callers_of_a_mid - sum(kept)
    assert "sai_find_callers on its symbol follows a kept node further" in cut["truncated"]["hint"]
    tiny = fitted_call_tree_json(tree, budget=Budget(1, MCP_BUDGET.spelling))  # not even the head fits
    assert tiny["tree"] == [] and tiny["more"] == MIDS and tiny["truncated"]["over_budget"] is True


def test_impact_keeps_the_changed_units_before_their_callers(root: Path, standin: OllamaStandIn) -> None:
    project = open_served(root, standin)
    try:
        found = impact(project, since=None, limit=10)
    finally:
        project.close()
    whole = impact_json(found)
    assert {u["symbol"] for u in whole["units"]} >= {"leaf", "mid_0"} and any(u["callers"] for u in whole["units"])
    cut = fitted_impact_json(found, budget=MCP_BUDGET)
    assert len(json.dumps(cut, ensure_ascii=False)) <= SMALL * 4
    assert cut["units"] and not any(u["callers"] or u["copies"] for u in cut["units"])
    assert len(cut["units"]) + cut["more"] == len(whole["units"]) + whole["more"]
    assert all(u["callers_more"] == len(w["callers"]) + w["callers_more"]
               for u, w in zip(cut["units"], whole["units"], strict=False))


def test_mcp_answers_fit_a_small_budget(portal: BlockingPortal, root: Path, standin: OllamaStandIn) -> None:
    with mcp_session(portal, root, standin_env(standin)) as session:
        for tool, arguments in MCP:
            whole = session.portal.call(session.client.call_tool, tool, {**arguments, "max_tokens": 100_000})
            assert len(whole.content[0].text) > SMALL * 4, tool
            answer = session.call(tool, **arguments, max_tokens=SMALL)  # checked against its outputSchema
            result = session.portal.call(session.client.call_tool, tool, {**arguments, "max_tokens": SMALL})
            assert len(result.content[0].text) <= SMALL * 4, (tool, len(result.content[0].text))
            assert "raise max_tokens" in answer["truncated"]["hint"], tool
