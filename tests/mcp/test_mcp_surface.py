"""What the MCP server costs an agent, through real client sessions: a compact tools/list,
`sai mcp --tools` serving fewer tools (stdio and HTTP), and answers fitted to `max_tokens`."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal
from mcp.shared.exceptions import MCPError
from mcp_sessions import (
    AUTH,
    MANY,
    PARSER,
    TOOLS,
    Session,
    index_project,
    mcp_session,
    sai_mcp_command,
    served_url,
    standin_env,
    write_file,
)
from ollama_standin import OllamaStandIn

CONTRACT = {"sai_search_code", "sai_find_similar", "sai_find_duplicates", "sai_index_status",
            "sai_refresh", "sai_sync", "sai_prepare_mcp_setup"}
LONG = "def long_report(rows):\n" + "".join(f"    total_{i} = sum(row[{i}] for row in rows)\n" for i in range(120))
BUDGETS = (120, 250, 500, 1000)


@pytest.fixture(scope="module")
def surface_dir(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Path:
    root = tmp_path_factory.mktemp("surface")
    for name, text in {"src/auth.py": AUTH, "src/dup_a.py": PARSER, "src/dup_b.py": PARSER, "src/dup_c.py": PARSER,
                       "src/many.py": MANY, "src/report.py": LONG}.items():
        write_file(root / name, text)
    write_file(root / "sai-cfg.yml", "root: .\next: [py]\nollama:\n  backoff_s: 0.01\n")
    return index_project(root, standin)


@pytest.fixture(scope="module")
def plain(portal: BlockingPortal, surface_dir: Path, standin: OllamaStandIn) -> Iterator[Session]:
    """`sai mcp` as a client starts it: no flags."""
    with mcp_session(portal, surface_dir, standin_env(standin), output_schemas=False) as opened:
        yield opened


def _listed(session: Session) -> list[dict[str, Any]]:
    tools = session.portal.call(session.client.list_tools).tools
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def _text(session: Session, tool: str, **arguments: Any) -> str:
    """The answer's text content: the JSON an agent reads."""
    result = session.portal.call(session.client.call_tool, tool, arguments)
    assert not result.is_error, result.content
    return result.content[0].text


def _keys(schema: Any) -> set[str]:
    if isinstance(schema, list):
        return set().union(*map(_keys, schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    found = set(schema) - {"properties"}
    for key, value in schema.items():
        found |= set().union(*map(_keys, value.values())) if key == "properties" and value else _keys(value)
    return found


# ---------------------------------------------------------------- tools/list
def test_every_tool_has_a_short_name_for_the_tools_flag() -> None:
    from sai.mcp.server import SHORT_NAMES, TOOL_NAMES

    assert sorted(SHORT_NAMES.values()) == sorted(TOOL_NAMES)


def test_tools_list_of_all_tools_fits_in_10000_characters(plain: Session) -> None:
    tools = _listed(plain)
    assert {t["name"] for t in tools} == TOOLS and CONTRACT <= {t["name"] for t in tools}
    assert len(json.dumps(tools, ensure_ascii=False)) <= 10_000
    assert not any("outputSchema" in t for t in tools)  # published with --output-schemas only
    assert "title" not in _keys([t["inputSchema"] for t in tools])
    assert all(len(t["description"]) <= 300 and "\n" not in t["description"] for t in tools)
    language = next(t for t in tools if t["name"] == "sai_search_code")["inputSchema"]["properties"]["language"]
    assert language["type"] == ["string", "null"] and "default" not in language


def test_tools_flag_lists_only_those_tools_and_refuses_the_others(
    portal: BlockingPortal, surface_dir: Path, standin: OllamaStandIn
) -> None:
    with mcp_session(portal, surface_dir, standin_env(standin), "--tools", "search, read,sai_find_symbol") as narrow:
        assert {t["name"] for t in _listed(narrow)} == {"sai_search_code", "sai_read_chunk", "sai_find_symbol"}
        assert "sai_refresh" not in narrow.client.instructions and "sai_read_chunk" in narrow.client.instructions
        hit = narrow.call("sai_search_code", query="hash a password")["hits"][0]
        assert narrow.call("sai_read_chunk", chunk_id=hit["chunk_id"])["chunk"]["chunk_id"] == hit["chunk_id"]
        for tool, arguments in (("sai_find_duplicates", {}), ("sai_refresh", {"paths": ["src/auth.py"]})):
            error = narrow.error(tool, **arguments)
            assert error.error.code == -32602
            assert f"tool '{tool}' is not served here (sai mcp --tools search,read,symbol)" in str(error)


def test_an_unknown_tools_name_is_one_error_line_and_exit_2(surface_dir: Path, standin: OllamaStandIn) -> None:
    done = subprocess.run([*sai_mcp_command(surface_dir), "--tools", "search,lookup"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env={**os.environ, **standin_env(standin)}, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: unknown tool 'lookup' in --tools; choose from search, similar, duplicates, status, read, "
        "symbol, refresh, sync, setup, refs, callers, callees, impact"
    ]


def test_tools_flag_serves_the_same_tools_over_http(
    surface_dir: Path, standin: OllamaStandIn, tmp_path: Path
) -> None:
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as log:
        proc = subprocess.Popen([*sai_mcp_command(surface_dir), "--http", "127.0.0.1:0", "--tools", "status"],
                                env={**os.environ, **standin_env(standin)}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log)
        try:
            url = served_url(stderr, proc)
            listed = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30).json()
            called = httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "sai_search_code", "arguments": {"query": "x"}}}, timeout=30).json()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    assert [t["name"] for t in listed["result"]["tools"]] == ["sai_index_status"]
    assert called["error"]["code"] == -32602 and "not served here" in called["error"]["message"]


# ---------------------------------------------------------------- answers within max_tokens
def test_default_search_answers_are_within_2000_tokens(plain: Session) -> None:
    for arguments in ({"query": "hash a password"}, {"query": "handler request field", "limit": 50},
                      {"query": "sum of the rows", "include_text": True, "limit": 50, "group_by": "chunk"}):
        text = _text(plain, "sai_search_code", **arguments)
        assert len(text) <= 2000 * 4, arguments
    assert "truncated" in json.loads(text)  # 50 whole chunks do not fit


CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sai_search_code", {"query": "handler request field", "limit": 50}),
    ("sai_search_code", {"query": "sum of the rows", "include_text": True, "limit": 50}),
    ("sai_find_similar", {"path": "src/many.py", "line": 1, "limit": 50, "min_score": 0}),
    ("sai_read_chunk", {"path": "src/many.py", "start_line": 61, "neighbours": 5, "enclosing": True}),
    ("sai_find_symbol", {"name": "handler", "limit": 50}),
    ("sai_find_duplicates", {"min_score": 0.5}),
)


@pytest.mark.parametrize(("tool", "arguments"), CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CALLS)])
def test_no_answer_exceeds_its_max_tokens_and_a_cut_one_says_so(
    plain: Session, tool: str, arguments: dict[str, Any]
) -> None:
    whole = _text(plain, tool, **arguments, max_tokens=1_000_000)
    assert "truncated" not in json.loads(whole) and len(whole) > BUDGETS[0] * 4  # the smallest budget cuts
    for max_tokens in BUDGETS:
        text = _text(plain, tool, **arguments, max_tokens=max_tokens)
        answer = json.loads(text)
        if len(whole) <= max_tokens * 4:
            assert text == whole
            continue
        truncated = answer["truncated"]
        assert truncated["max_tokens"] == max_tokens and "raise max_tokens" in truncated["hint"]
        assert len(text) <= max_tokens * 4 or truncated.get("over_budget"), (max_tokens, len(text))


def test_a_budget_too_small_for_one_hit_answers_with_the_best_hit(plain: Session) -> None:
    best = json.loads(_text(plain, "sai_search_code", query="hash a password"))["hits"][0]
    answer = json.loads(_text(plain, "sai_search_code", query="hash a password", max_tokens=1))
    assert [h["chunk_id"] for h in answer["hits"]] == [best["chunk_id"]] and answer["hits"][0]["snippet"] == ""
    assert answer["truncated"]["over_budget"] is True


@pytest.mark.parametrize("max_tokens", [0, -3, 2.5, "lots"])
def test_a_budget_that_is_not_a_positive_integer_is_invalid_params(plain: Session, max_tokens: Any) -> None:
    with pytest.raises(MCPError) as raised:
        plain.portal.call(plain.client.call_tool, "sai_search_code", {"query": "x", "max_tokens": max_tokens})
    assert raised.value.error.code == -32602 and "max_tokens" in str(raised.value)
