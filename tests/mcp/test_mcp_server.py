"""The MCP server through real client sessions: `python -m sai mcp` over stdio and over HTTP.

One fixture index (built once, with the Ollama stand-in) is served read-only to most tests; the
write tests get their own copy of the project, a git repository, served with --allow-write.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from anyio.from_thread import BlockingPortal
from fixtures_tree import many_functions, write_config, write_tree
from mcp import Client
from mcp_sessions import (
    AUTH,
    HEADERS,
    MANY,
    PARSER,
    TOOLS,
    Session,
    mcp_session,
    sai_mcp_command,
    served_url,
    standin_env,
    write_file,
)
from ollama_standin import OllamaStandIn

HIT_TYPES = {"path": str, "start_line": int, "end_line": int, "score": float, "snippet": str}


# ---------------------------------------------------------------- fixtures (project_dir: conftest.py)
@pytest.fixture(scope="module")
def writable_dir(tmp_path_factory: pytest.TempPathFactory, project_dir: Path) -> Path:
    """A copy of the indexed project, committed to git, for the write tools."""
    root = tmp_path_factory.mktemp("writable") / "project"
    shutil.copytree(project_dir, root)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def session(portal: BlockingPortal, project_dir: Path, standin: OllamaStandIn) -> Iterator[Session]:
    with mcp_session(portal, project_dir, standin_env(standin)) as opened:
        yield opened


@pytest.fixture(scope="module")
def writer(
    portal: BlockingPortal, writable_dir: Path, standin: OllamaStandIn,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Session]:
    env = {**standin_env(standin), "SAI_SETUP_SKIP_INSTALL": "1",
           "HOME": str(tmp_path_factory.mktemp("home"))}
    # cwd = root: indexer.sync hands git's root-relative paths to refresh(), which resolves
    # them against the process cwd (reported; the read-only session runs from root's parent).
    with mcp_session(portal, writable_dir, env, "--allow-write", "--allow-setup",
                     cwd=writable_dir) as opened:
        yield opened


@pytest.fixture(scope="module")
def http_url(
    project_dir: Path, standin: OllamaStandIn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """`sai mcp --http 127.0.0.1:0`: the URL is read from the server's "serving" line."""
    stderr = tmp_path_factory.mktemp("http") / "stderr.log"
    with stderr.open("wb") as log:
        args = [*sai_mcp_command(project_dir), "--http", "127.0.0.1:0"]
        proc = subprocess.Popen(args, env={**os.environ, **standin_env(standin)},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        try:
            yield served_url(stderr, proc)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


# ---------------------------------------------------------------- a client session, synchronously

def _assert_hit(hit: dict[str, Any]) -> None:
    for key, kind in HIT_TYPES.items():
        assert isinstance(hit[key], kind), (key, hit)
    assert hit["symbol"] is None or isinstance(hit["symbol"], str)
    assert hit["score"] == round(hit["score"], 4)


# ---------------------------------------------------------------- listing and identity
def test_lists_exactly_the_nine_tools_with_defaults_and_ranges(session: Session) -> None:
    tools = {t.name: t for t in session.portal.call(session.client.list_tools).tools}
    assert set(tools) == TOOLS
    limit = tools["sai_search_code"].input_schema["properties"]["limit"]
    assert (limit["default"], limit["minimum"], limit["maximum"]) == (8, 1, 50)
    assert tools["sai_search_code"].input_schema["required"] == ["query"]
    assert tools["sai_sync"].input_schema["properties"]["since"]["default"] == "HEAD~1"
    assert "--allow-write" in tools["sai_refresh"].description
    neighbours = tools["sai_read_chunk"].input_schema["properties"]["neighbours"]
    assert (neighbours["default"], neighbours["minimum"], neighbours["maximum"]) == (1, 0, 5)
    assert tools["sai_find_symbol"].input_schema["required"] == ["name"]
    assert all(tools[name].annotations.read_only_hint for name in ("sai_read_chunk", "sai_find_symbol"))
    assert all(t.output_schema for t in tools.values())


def test_docs_describe_every_tool_and_argument(session: Session) -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    for tool in session.portal.call(session.client.list_tools).tools:
        assert f"### `{tool.name}`" in docs
        assert all(f"| `{arg}` |" in docs for arg in tool.input_schema["properties"]), tool.name


def test_output_schemas_name_every_key_search_and_status_return(session: Session) -> None:
    tools = {t.name: t for t in session.portal.call(session.client.list_tools).tools}
    hits = tools["sai_search_code"].output_schema
    hit_keys = set(hits["$defs"]["HitOut"]["properties"])
    status_keys = set(tools["sai_index_status"].output_schema["properties"])
    assert {"language", "stale", "rank", "score_kind"} <= hit_keys
    assert {"embedder", "file_count", "indexed_at", "stale_files"} <= status_keys
    lexical = session.call("sai_search_code", query="hash_password", mode="lexical")["hits"]
    assert lexical and all(set(h) <= hit_keys for h in lexical)
    assert {"rank", "score_kind"} <= set(lexical[0])
    assert set(session.call("sai_index_status")) <= status_keys


def test_closed_output_schemas_refuse_an_undeclared_key(session: Session) -> None:
    # guards Session.call's check: a key the outputSchema does not declare fails validation
    status = session.call("sai_index_status")
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        jsonschema.validate({**status, "surprise": 1}, session.output_schema("sai_index_status"))
    hits = session.call("sai_search_code", query="hash_password", mode="lexical")
    hits["hits"][0]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        jsonschema.validate(hits, session.output_schema("sai_search_code"))


def test_every_tools_real_output_validates_against_its_output_schema(
    session: Session, writer: Session, writable_dir: Path, tmp_path: Path
) -> None:
    # Session.call validates each result; these calls reach every tool and the optional keys
    seen: dict[str, set[str]] = {}

    def call(on: Session, tool: str, **arguments: Any) -> dict[str, Any]:
        result = on.call(tool, **arguments)
        seen.setdefault(tool, set()).update(result)
        return result

    explained = call(session, "sai_search_code", query="hash a password", explain=True)["hits"]
    assert {"rank", "explain"} <= set(explained[0]) and explained[0]["explain"]["signals"] is not None
    assert "score_kind" in call(session, "sai_search_code", query="hash_password", mode="lexical")["hits"][0]
    assert call(session, "sai_find_similar", path="src/dup_a.py", line=2, min_score=0)["hits"]
    assert call(session, "sai_find_duplicates")["clusters"]
    call(session, "sai_index_status")
    chunk_id = explained[0]["chunk_id"]
    assert call(session, "sai_read_chunk", chunk_id=chunk_id, enclosing=True)["chunk"]["chunk_id"] == chunk_id
    assert call(session, "sai_find_symbol", name="create")["definitions"]
    assert call(session, "sai_find_references", name="create")["name"] == "create"
    call(session, "sai_find_callers", name="create", depth=2)
    call(session, "sai_find_callees", name="create")
    call(session, "sai_prepare_mcp_setup", target_directory=str(tmp_path), execute=True)
    assert "not_found" in call(writer, "sai_refresh", paths=["src/auth.py", "src/no_such_file.py"])
    assert "note" in call(writer, "sai_sync", since="HEAD")  # the tree is as committed
    assert call(writer, "sai_impact")["units"] == []  # ...so nothing changed
    assert set(seen) == TOOLS
    assert "execution_blocked" in seen["sai_prepare_mcp_setup"]


def test_server_identity_and_instructions_name_the_write_tools(session: Session) -> None:
    assert session.client.server_info.name == "sai"
    text = session.client.instructions
    assert all(name in text for name in TOOLS) and "--allow-write" in text


# ---------------------------------------------------------------- read tools
def test_search_code_returns_contract_hits_best_first(session: Session) -> None:
    hits = session.call("sai_search_code", query="hash a password with a salt")["hits"]
    assert 0 < len(hits) <= 8
    for hit in hits:
        _assert_hit(hit)
    assert hits[0]["path"] == "src/auth.py" and hits[0]["symbol"] == "hash_password"
    assert all(-1.0 <= h["score"] <= 1.0 for h in hits)


def test_search_limit_is_clamped_to_1_through_50(session: Session) -> None:
    # a budget large enough for 50 hits: the default (2000 tokens) would leave some out
    hits = session.call("sai_search_code", query="handler request field", limit=500, max_tokens=100_000,
                        group_by="chunk")["hits"]
    assert len(hits) == 50
    assert len(session.call("sai_search_code", query="handler request field", limit=0)["hits"]) == 1


def test_search_grouped_by_file_gives_each_file_once_with_its_best_chunks(session: Session) -> None:
    query = "handler request field"
    plain = session.call("sai_search_code", query=query, limit=8, group_by="chunk")["hits"]
    assert [h["path"] for h in plain].count("src/many.py") > 1
    hits = session.call("sai_search_code", query=query, limit=8, group_by="file")["hits"]
    paths = [h["path"] for h in hits]
    assert len(paths) == len(set(paths)) == len(hits) and "src/many.py" in paths
    for hit in hits:
        _assert_hit(hit)
        assert all(c["chunk_id"] != hit["chunk_id"] for c in hit.get("chunks", ()))  # its own is not repeated
    many = hits[paths.index("src/many.py")]["chunks"]
    assert 1 <= len(many) <= 4 and all(c["symbol"].startswith("handler_") for c in many)
    assert "chunks" not in plain[0]
    assert session.call("sai_search_code", query=query, group_by="file")["hits"] == \
        session.call("sai_search_code", query=query)["hits"]  # by file is the default
    assert session.error("sai_search_code", query=query, group_by="folder").code == -32602


def test_snippet_is_capped_unless_include_text(session: Session) -> None:
    query = "parse config lines into key value pairs"
    capped = session.call("sai_search_code", query=query, path_glob="src/dup_a.py")["hits"][0]
    full = session.call("sai_search_code", query=query, path_glob="src/dup_a.py",
                        include_text=True)["hits"][0]
    assert capped["snippet"].count("\n") == 7
    assert full["snippet"].count("\n") > 7 and full["snippet"].startswith(capped["snippet"])


def test_path_glob_and_language_filter_hits(session: Session) -> None:
    hits = session.call("sai_search_code", query="user session token", path_glob="src/auth*")["hits"]
    assert hits and all(h["path"] == "src/auth.py" for h in hits)
    assert session.call("sai_search_code", query="handler", language="rust")["hits"] == []


def test_sql_in_path_glob_matches_nothing_and_the_table_survives(session: Session) -> None:
    before = session.call("sai_index_status")["chunk_count"]
    injected = "'; DROP TABLE source_code; --"
    assert session.call("sai_search_code", query="password", path_glob=injected)["hits"] == []
    assert session.call("sai_index_status")["chunk_count"] == before > 60
    assert session.call("sai_search_code", query="password")["hits"]


def test_path_glob_follows_globset_and_an_invalid_one_is_refused(session: Session) -> None:
    hits = session.call("sai_search_code", query="user session token", path_glob="{lib,src}/a[t-v]th.py")
    assert hits["hits"] and {h["path"] for h in hits["hits"]} == {"src/auth.py"}
    for tool, arguments in (("sai_search_code", {"query": "password"}), ("sai_find_duplicates", {})):
        error = session.error(tool, path_glob="src/[z-a]", **arguments)
        assert (error.code, error.message) == (-32602, "invalid path_glob: src/[z-a]: invalid range; 'z' > 'a'")
    error = session.error("sai_find_duplicates", path_glob="{src,lib")
    assert error.code == -32602 and error.message.startswith("invalid path_glob: {src,lib: unclosed alternate")


def test_find_similar_by_location_excludes_the_source_chunk(session: Session) -> None:
    hits = session.call("sai_find_similar", path="src/dup_a.py", line=5, min_score=0.0)["hits"]
    for hit in hits:
        _assert_hit(hit)
    assert all(h["path"] != "src/dup_a.py" for h in hits)
    assert hits[0]["path"] == "src/dup_b.py" and hits[0]["score"] == pytest.approx(1.0)


def test_find_similar_by_code_applies_min_score(session: Session) -> None:
    hits = session.call("sai_find_similar", code=PARSER, min_score=0.99)["hits"]
    assert {h["path"] for h in hits} == {"src/dup_a.py", "src/dup_b.py"}


def test_find_similar_refuses_a_missing_location_and_bad_targets(session: Session) -> None:
    missing = session.error("sai_find_similar", path="src/auth.py", line=9999)
    assert (missing.code, missing.message) == (-32602, "no indexed chunk at src/auth.py:9999")
    assert session.error("sai_find_similar", path="src/auth.py").code == -32602
    assert session.error("sai_find_similar").code == -32602


def test_find_similar_with_code_and_a_location_follows_the_code(session: Session) -> None:
    by_code = session.call("sai_find_similar", code=PARSER, min_score=0.99)
    both = session.call("sai_find_similar", code=PARSER, path="src/auth.py", line=5, min_score=0.99)
    assert both == by_code and {h["path"] for h in both["hits"]} == {"src/dup_a.py", "src/dup_b.py"}
    nowhere = session.call("sai_find_similar", code=PARSER, path="src/none.py", line=1)
    assert nowhere["hits"]  # the location is not even looked up


def test_find_duplicates_returns_the_copied_function_as_a_cluster(session: Session) -> None:
    result = session.call("sai_find_duplicates", path_glob="src/dup_*")
    (cluster,) = result["clusters"]
    assert cluster["size"] == 2 and cluster["max_sim"] == pytest.approx(1.0)
    assert [m["path"] for m in cluster["members"]] == ["src/dup_a.py", "src/dup_b.py"]
    assert set(cluster["members"][0]) == {"path", "start_line", "end_line", "symbol", "chunk_id"}
    assert isinstance(cluster["min_sim"], float)


def test_find_duplicates_semantic_metric_is_served_with_its_own_default(session: Session) -> None:
    result = session.call("sai_find_duplicates", path_glob="src/dup_*", metric="semantic")
    assert (result["metric"], result["min_score"]) == ("semantic", 0.85)  # the stand-in model's default
    (cluster,) = result["clusters"]  # an exact copy: cosine and shape 1.0
    assert [m["path"] for m in cluster["members"]] == ["src/dup_a.py", "src/dup_b.py"]
    assert cluster["max_sim"] == pytest.approx(1.0)


def test_min_cluster_size_1_gives_the_clusters_of_2(session: Session) -> None:
    tools = {t.name: t for t in session.portal.call(session.client.list_tools).tools}
    assert tools["sai_find_duplicates"].input_schema["properties"]["min_cluster_size"]["minimum"] == 1
    one = session.call("sai_find_duplicates", min_cluster_size=1)
    two = session.call("sai_find_duplicates", min_cluster_size=2)
    assert one["clusters"] and one["clusters"] == two["clusters"]
    assert all(c["size"] >= 2 for c in one["clusters"])
    assert (one["min_cluster_size"], two["min_cluster_size"]) == (1, 2)


def test_index_status_reports_the_fixture_index(session: Session, project_dir: Path) -> None:
    status = session.call("sai_index_status")
    assert status["backend"] == "duckdb" and status["collection"] == "source_code"
    assert status["model"] == "nomic-embed-text" and status["vector_dim"] == 768
    assert status["chunker"] == "ast" and status["chunk_count"] > 60


def test_bad_or_missing_arguments_are_invalid_params(session: Session) -> None:
    missing = session.error("sai_search_code")
    assert missing.code == -32602 and "query" in missing.message
    assert session.error("sai_search_code", query="x", limit="many").code == -32602
    assert session.error("sai_search_code", query="   ").code == -32602


# one argument every tool needs, or (find_similar) needs one of
GIVEN = {"sai_search_code": {"query": "password"}, "sai_find_similar": {"code": PARSER},
         "sai_refresh": {"paths": ["src/auth.py"]}, "sai_read_chunk": {"path": "src/auth.py", "start_line": 5},
         "sai_find_symbol": {"name": "create"}, "sai_find_references": {"name": "create"},
         "sai_find_callers": {"name": "create"}, "sai_find_callees": {"name": "create"}}


def test_null_for_any_optional_argument_means_its_default(session: Session, tmp_path: Path) -> None:
    given = {**GIVEN, "sai_prepare_mcp_setup": {"target_directory": str(tmp_path)}}
    for tool in session.portal.call(session.client.list_tools).tools:
        required = set(tool.input_schema.get("required", []))
        nulls = {arg: None for arg in tool.input_schema["properties"] if arg not in required}
        arguments = {**nulls, **given.get(tool.name, {})}
        assert all(p.get("type") or p.get("anyOf") for p in tool.input_schema["properties"].values())
        if tool.name in ("sai_refresh", "sai_sync"):  # past validation: refused as read-only
            assert "read-only" in session.error(tool.name, **arguments).message
            continue
        if tool.name == "sai_impact":  # past validation: this project is no git repository
            assert "not inside a git repository" in session.error(tool.name, **arguments).message
            continue
        assert session.call(tool.name, **arguments) == session.call(
            tool.name, **given.get(tool.name, {})), tool.name
    assert session.error("sai_search_code", query=None).message.startswith(
        "invalid arguments for sai_search_code: query: Field required")


def test_nul_bytes_in_paths_are_invalid_params_and_messages_escape_control_characters(
    session: Session,
) -> None:
    nul = session.error("sai_find_similar", path="src/a\x00.py", line=1)
    assert nul.code == -32602 and "NUL byte" in nul.message
    assert "src/a\\x00.py" in nul.message and "\x00" not in nul.message
    target = session.error("sai_prepare_mcp_setup", target_directory="/tmp/x\x00y")
    assert target.code == -32602 and "target_directory" in target.message
    missing = session.error("sai_find_similar", path="src/two\nlines.py", line=1)
    assert missing.code == -32602 and "\n" not in missing.message
    assert missing.message == "no indexed chunk at src/two\\nlines.py:1"


def test_a_path_too_long_for_the_file_system_is_invalid_params_quoted_short(session: Session) -> None:
    long = "a" * 5000
    for tool, arguments in (("sai_find_similar", {"path": long, "line": 1}),
                            ("sai_read_chunk", {"path": long, "start_line": 1})):
        error = session.error(tool, **arguments)
        assert error.code == -32602 and "File name too long" in error.message, (tool, error.message)
        assert "(5,000 characters)" in error.message and len(error.message) < 400
    for tool, arguments in (("sai_read_chunk", {"chunk_id": long}),
                            ("sai_search_code", {"query": "x", "language": long})):
        error = session.error(tool, **arguments)
        assert error.code == -32602 and "(5,002 characters)" in error.message, (tool, error.message)
    assert long not in session.stderr.read_text(encoding="utf-8")


def test_write_tools_are_refused_by_a_read_only_server(session: Session) -> None:
    refresh = session.error("sai_refresh", paths=["src/auth.py"])
    assert (refresh.code, refresh.message) == (
        -32602, "server is read-only; restart with --allow-write to enable refresh")
    sync = session.error("sai_sync")
    assert (sync.code, sync.message) == (
        -32602, "server is read-only; restart with --allow-write to enable sync")


def test_prepare_setup_without_allow_setup_reports_execution_blocked(
    session: Session, tmp_path: Path
) -> None:
    result = session.call("sai_prepare_mcp_setup", target_directory=str(tmp_path), execute=True)
    assert result["target_directory"] == str(tmp_path)
    assert result["recommended_command"].endswith(
        f'--embedder ollama --target-dir "{tmp_path}" --features "mcp,duckdb,ollama"')
    server = result["mcp_server_config_example"]["mcpServers"]["sai"]
    assert server["args"] == ["mcp", "--config", str(tmp_path / "sai-cfg.yml")] and server["cwd"] == str(tmp_path)
    assert len(result["next_steps"]) == 5 and server["command"] in result["next_steps"][1]
    assert result["execution_blocked"] is True and "--allow-setup" in result["execution_blocked_reason"]
    assert "executed" not in result and list(tmp_path.iterdir()) == []
    assert (result["execution_attempted"], result["success"]) == (False, False)
    assert result["error"] == result["execution_blocked_reason"]
    assert result["stdout"] is None and result["stderr"] is None


def test_prepare_setup_takes_ort_as_the_offline_local_embedder(session: Session, tmp_path: Path) -> None:
    ort = session.call("sai_prepare_mcp_setup", target_directory=str(tmp_path), embedder="ort")
    local = session.call("sai_prepare_mcp_setup", target_directory=str(tmp_path), embedder="local")
    assert ort == local
    assert '--embedder local' in ort["recommended_command"]
    assert ort["recommended_command"].endswith('--features "mcp,duckdb,local"')
    assert "execution_attempted" not in ort  # only with execute
    assert session.error("sai_prepare_mcp_setup", embedder="onnx").code == -32602


# ---------------------------------------------------------------- write tools
def test_refresh_reindexes_an_edited_file(writer: Session, writable_dir: Path) -> None:
    write_file(writable_dir / "src" / "auth.py", AUTH + "\n\ndef rotate_api_key(owner):\n    return owner\n")
    result = writer.call("sai_refresh", paths=["src/auth.py"])
    assert result["removed"] == [] and len(result["refreshed"]) == 1
    assert result["refreshed"][0]["path"] == "src/auth.py" and result["refreshed"][0]["chunks"] >= 4
    top = writer.call("sai_search_code", query="rotate api key owner", limit=1)["hits"][0]
    assert top["symbol"] == "rotate_api_key"


def test_refresh_of_a_deleted_file_removes_it(writer: Session, writable_dir: Path) -> None:
    (writable_dir / "src" / "dup_b.py").unlink()
    assert writer.call("sai_refresh", paths=["src/dup_b.py"]) == {"refreshed": [], "removed": ["src/dup_b.py"]}
    assert writer.error("sai_find_similar", path="src/dup_b.py", line=2).code == -32602


@pytest.mark.parametrize("outside", ["../../etc/passwd", "/etc/passwd"])
def test_refresh_refuses_paths_outside_the_root(writer: Session, outside: str) -> None:
    error = writer.error("sai_refresh", paths=[outside])
    assert error.code == -32602 and "outside the project root" in error.message


def test_refresh_needs_one_to_200_paths(writer: Session) -> None:
    empty = writer.error("sai_refresh", paths=[])
    assert (empty.code, empty.message) == (-32602, "refresh requires at least one path")
    many = writer.error("sai_refresh", paths=[f"src/f{i}.py" for i in range(201)])
    assert (many.code, many.message) == (-32602, "too many paths (max 200)")


def test_sync_notes_no_changes_then_picks_up_an_edit(writer: Session, writable_dir: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "commit", "-q", "-a", "-m", "edits"], cwd=writable_dir, check=True)
    assert writer.call("sai_sync", since="HEAD") == {
        "refreshed": [], "removed": [], "note": "no changed files"}
    write_file(writable_dir / "src" / "many.py", MANY + "def handler_extra(request):\n    return 1\n")
    result = writer.call("sai_sync", since="HEAD")
    assert [r["path"] for r in result["refreshed"]] == ["src/many.py"] and "note" not in result


def test_sync_nulls_mean_the_defaults(writer: Session) -> None:
    result = writer.call("sai_sync", since="HEAD", staged=None, paths=None)
    assert result == writer.call("sai_sync", since="HEAD")


def test_sync_with_an_unknown_revision_names_it_and_the_fix(writer: Session) -> None:
    error = writer.error("sai_sync", since="no-such-rev")
    assert error.code == -32602 and "\n" not in error.message
    assert error.message.startswith("git does not know the revision 'no-such-rev'")
    assert error.message.endswith("give an existing commit, branch or tag, e.g. HEAD")


def test_nul_bytes_in_write_tool_paths_are_invalid_params(writer: Session) -> None:
    for tool in ("sai_refresh", "sai_sync"):
        error = writer.error(tool, paths=["src/auth.py", "src/\x00"])
        assert error.code == -32602 and "NUL byte" in error.message, tool


@pytest.mark.parametrize("broken", ["no repository", "no git"])
def test_sync_git_failures_are_internal_errors_naming_the_fix(
    portal: BlockingPortal, project_dir: Path, standin: OllamaStandIn, tmp_path: Path, broken: str
) -> None:
    root = tmp_path / "project"
    shutil.copytree(project_dir, root)  # not a git repository
    env = standin_env(standin)
    if broken == "no git":
        (tmp_path / "bin").mkdir()
        env["PATH"] = str(tmp_path / "bin")
    with mcp_session(portal, root, env, "--allow-write") as session:
        error = session.error("sai_sync")
    assert error.code == -32603 and "\n" not in error.message and "usage" not in error.message
    expected = f"{root} is not inside a git repository" if broken == "no repository" \
        else f"cannot run git in {root}"
    assert error.message.startswith(expected), error.message
    assert error.message.endswith("pass the files instead (--file, or sai_sync's paths)")
    cli = subprocess.run([sys.executable, "-m", "sai", "sync", "--config", str(root / "sai-cfg.yml")],
                         env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert (cli.returncode, cli.stdout, cli.stderr) == (1, "", f"error: {error.message}\n")


def test_prepare_setup_runs_the_script_with_allow_setup(writer: Session, writable_dir: Path) -> None:
    target = writable_dir / "setup-ran"
    target.mkdir()
    result = writer.call("sai_prepare_mcp_setup", target_directory="setup-ran", execute=True)
    assert result["target_directory"] == str(target)  # relative to the project root
    assert result["executed"] is True and result["exit_code"] == 0, result["stderr_tail"]
    assert (target / "sai-cfg.yml").is_file() and (target / ".mcp.json.example").is_file()
    assert "execution_blocked" not in result
    assert (result["execution_attempted"], result["success"], result["error"]) == (True, True, None)
    assert result["stdout"] == result["stdout_tail"] and "sai-cfg.yml" in result["stdout"]
    assert result["stderr"] == result["stderr_tail"]


def test_prepare_setup_reports_a_failed_script_run(writer: Session, writable_dir: Path) -> None:
    target = writable_dir / "setup-fails"
    (target / ".mcp.json.example.sai-tmp").mkdir(parents=True)  # the script cannot write its example
    result = writer.call("sai_prepare_mcp_setup", target_directory=str(target), execute=True)
    assert (result["execution_attempted"], result["success"]) == (True, False)
    assert result["exit_code"] != 0 and result["stderr"] == result["stderr_tail"]
    assert result["error"].startswith(f"setup.sh exited with code {result['exit_code']}: ")
    assert result["error"].endswith("Is a directory") and "\n" not in result["error"]


@pytest.mark.parametrize("outside", ["..", "/tmp", "../.."])
def test_prepare_setup_never_runs_the_script_outside_the_project_root(
    writer: Session, writable_dir: Path, outside: str
) -> None:
    before = sorted(p.name for p in writable_dir.parent.iterdir())
    error = writer.error("sai_prepare_mcp_setup", target_directory=outside, execute=True)
    assert error.code == -32602 and "is outside the project root" in error.message, error.message
    assert sorted(p.name for p in writable_dir.parent.iterdir()) == before
    assert not (writable_dir.parent / "sai-cfg.yml").exists()
    described = writer.call("sai_prepare_mcp_setup", target_directory=outside)  # describing writes nothing
    assert described["target_directory"] == str((writable_dir / outside).resolve())


def test_prepare_setup_refuses_a_global_install_and_defaults_to_the_root(
    writer: Session, writable_dir: Path
) -> None:
    error = writer.error("sai_prepare_mcp_setup", install_globally=True, execute=True)
    assert error.code == -32602 and "~/.local/bin, outside the project root" in error.message
    assert writer.call("sai_prepare_mcp_setup")["target_directory"] == str(writable_dir)


# ---------------------------------------------------------------- raw frames over stdio
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
SEARCH = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
HOSTILE = [  # (frame, the id the answer carries, its error code)
    *[(SEARCH % (n, tool, args), n, -32602) for n, (tool, args) in enumerate([
        ("sai_search_code", '{"query":"\\ud800"}'), ("sai_find_similar", '{"code":"x\\udfff"}'),
        ("sai_read_chunk", '{"chunk_id":"\\ud83d"}'), ("sai_find_symbol", '{"name":"\\ud800\\ud800"}'),
        ("sai_index_status", '{"\\ud800":1}'), ("sai_find_duplicates", '{"path_glob":"\\udc00"}'),
    ], start=1)],
    ('{"jsonrpc":"2.0","id":20,"method":', None, -32700),
    ("not json at all", None, -32700),
    ('[{"jsonrpc":"2.0","id":21,"method":"tools/list"}]', None, -32600),
    ("[]", None, -32600),
    ('{"jsonrpc":"2.0","id":22,"method":"tools/list","params":[1]}', 22, -32602),
    ('{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', None, -32600),
    ('{"jsonrpc":"2.0","id":[1],"method":"tools/list"}', None, -32600),
    ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None, -32600),
    ('{"id":23,"method":"tools/list"}', 23, -32600),
    ('"hello"', None, -32600),
    ("{}", None, -32600),
]


class RawServer:
    """`sai mcp` over raw pipes: lines in, one answer out within a timeout (never a hang)."""

    def __init__(self, root: Path, env: dict[str, str], stderr: Path) -> None:
        self.errlog = stderr.open("wb")
        self.proc = subprocess.Popen(sai_mcp_command(root), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errlog, env={**os.environ, **env})
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, frame: str | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        text = frame if isinstance(frame, str) else json.dumps(frame)
        self.proc.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 20.0) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout}s") from None

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=20)
        self.errlog.close()


def test_every_hostile_stdio_frame_gets_an_answer_and_the_server_keeps_serving(
    project_dir: Path, standin: OllamaStandIn, tmp_path: Path
) -> None:
    server = RawServer(project_dir, standin_env(standin), tmp_path / "stderr.log")
    try:
        server.send(INITIALIZE)
        assert server.answer(60)["id"] == 0
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for frame, request_id, code in HOSTILE:
            server.send(frame)
            answer = server.answer(timeout=10)
            assert answer["id"] == request_id and answer["error"]["code"] == code, (frame, answer)
        server.send('{"jsonrpc":"2.0","method":"notifications/x","params":[1]}')  # cannot be answered
        server.send({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        assert len(server.answer(timeout=10)["result"]["tools"]) == len(TOOLS)  # still serving
    finally:
        server.close()
    log = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert log.count("sai mcp: stdio: answered ") == len(HOSTILE)
    assert "sai mcp: stdio: dropped the notification" in log


# ---------------------------------------------------------------- HTTP
def test_http_answers_a_plain_json_post_without_a_session(http_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(http_url, json=body, headers=HEADERS, timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert {t["name"] for t in response.json()["result"]["tools"]} == TOOLS


def test_http_tool_call_and_unknown_method(http_url: str) -> None:
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "sai_index_status", "arguments": {}}}
    result = httpx.post(http_url, json=call, headers=HEADERS, timeout=30).json()["result"]
    assert result["structuredContent"]["chunk_count"] > 60
    unknown = {"jsonrpc": "2.0", "id": 3, "method": "sai/nothing"}
    assert httpx.post(http_url, json=unknown, headers=HEADERS, timeout=30).json()["error"]["code"] == -32601


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "192.168.1.20:8765"])
def test_http_refuses_a_non_loopback_host_header(http_url: str, host: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(http_url, json=body, headers={**HEADERS, "Host": host}, timeout=30)
    assert response.status_code == 403


def test_http_refuses_get_and_a_foreign_origin(http_url: str) -> None:
    assert httpx.get(http_url, headers=HEADERS, timeout=10).status_code == 405
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {**HEADERS, "Origin": "http://evil.example"}
    assert httpx.post(http_url, json=body, headers=headers, timeout=30).status_code == 403


def test_http_serves_an_sdk_client_session(portal: BlockingPortal, http_url: str) -> None:
    with portal.wrap_async_context_manager(Client(http_url)) as client:
        assert {t.name for t in portal.call(client.list_tools).tools} == TOOLS
        result = portal.call(client.call_tool, "sai_search_code", {"query": "password salt"})
        assert result.structured_content["hits"][0]["path"] == "src/auth.py"


def test_http_reads_a_form_encoded_post_without_accept_as_json(http_url: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode()
    request = urllib.request.Request(  # what a bare `curl -d` sends; urllib adds no Accept
        http_url, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert request.get_header("Accept") is None
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("application/json")
        answer = json.loads(response.read())
    assert answer["id"] == 7 and {t["name"] for t in answer["result"]["tools"]} == TOOLS
    bare = httpx.post(http_url, content=body, headers={"Accept": "text/html"}, timeout=30)
    assert "content-type" not in bare.request.headers
    assert bare.status_code == 200 and bare.json()["id"] == 7


def test_http_port_0_binds_a_free_port_and_a_busy_port_is_one_error_line(
    http_url: str, project_dir: Path, standin: OllamaStandIn
) -> None:
    port = int(http_url.rsplit(":", 1)[1].split("/")[0])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(http_url, json=call, headers=HEADERS, timeout=30).status_code == 200
    for bind, reason in ((f"127.0.0.1:{port}", "Address already in use"),
                         ("no-such-host.invalid:0", "")):
        busy = subprocess.run([*sai_mcp_command(project_dir), "--http", bind], env={
            **os.environ, **standin_env(standin)}, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=60)
        assert busy.returncode == 1 and busy.stdout == ""
        assert busy.stderr.startswith(f"error: cannot listen on {bind}: {reason}"), busy.stderr
        assert busy.stderr.count("\n") == 1 and "serving" not in busy.stderr


def test_http_accepts_loopback_names_with_any_port(http_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for host in ("localhost:1", "[::1]:8080", "127.0.0.1"):
        response = httpx.post(http_url, json=body, headers={**HEADERS, "Host": host}, timeout=30)
        assert response.status_code == 200, host


# ---------------------------------------------------------------- failures while running
def test_ollama_down_fails_searches_with_the_fix_but_status_still_answers(
    portal: BlockingPortal, project_dir: Path, ollama_server: OllamaStandIn
) -> None:
    with mcp_session(portal, project_dir, standin_env(ollama_server)) as down:
        assert down.call("sai_search_code", query="password")["hits"]
        ollama_server.stop()
        error = down.error("sai_search_code", query="password")
        assert error.code == -32603 and "ollama serve" in error.message
        assert down.call("sai_index_status")["chunk_count"] > 60
        assert down.call("sai_find_duplicates", path_glob="src/dup_*")["clusters"]


def test_stdin_eof_ends_the_server_with_nothing_on_stdout(project_dir: Path, standin: OllamaStandIn) -> None:
    proc = subprocess.run(sai_mcp_command(project_dir), env={**os.environ, **standin_env(standin)}, input=b"",
                          capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""


def test_cli_index_run_while_the_server_serves_and_the_server_sees_the_new_chunks(
    portal: BlockingPortal, tmp_path: Path, standin: OllamaStandIn
) -> None:
    root = tmp_path / "live"
    write_file(root / "src" / "auth.py", AUTH)
    write_file(root / "sai-cfg.yml", "root: .\next: [py]\n")
    env = {**os.environ, **standin_env(standin)}
    cli = [sys.executable, "-m", "sai", "--config", str(root / "sai-cfg.yml"), "--silent"]
    assert subprocess.run(cli, env=env, capture_output=True, timeout=120).returncode == 0
    with mcp_session(portal, root, standin_env(standin)) as live:
        before = live.call("sai_search_code", query="rotate_api_key", mode="lexical")
        assert not any(h["symbol"] == "rotate_api_key" for h in before["hits"])
        write_file(root / "src" / "keys.py", "def rotate_api_key(old):\n    return old[::-1] + 'x'\n")
        done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "1 chunk(s) embedded" in done.stdout
        after = live.call("sai_search_code", query="rotate_api_key")
        assert after["hits"][0]["symbol"] == "rotate_api_key"
        assert live.call("sai_index_status")["chunk_count"] > 0


@pytest.mark.slow
def test_concurrent_mixed_calls_over_http_while_the_cli_refreshes_all_answer(
    tmp_path: Path, standin: OllamaStandIn
) -> None:
    """8 clients at once against a fresh server, while another process writes: no error, no crash."""
    root = tmp_path / "busy"
    write_file(root / "src" / "auth.py", AUTH)
    write_file(root / "src" / "many.py", MANY)
    write_file(root / "sai-cfg.yml", "root: .\next: [py]\n")
    env = {**os.environ, **standin_env(standin)}
    cli = [sys.executable, "-m", "sai", "--config", str(root / "sai-cfg.yml"), "--silent"]
    assert subprocess.run(cli, env=env, capture_output=True, timeout=120).returncode == 0
    stderr = tmp_path / "stderr.log"
    with stderr.open("wb") as log:
        proc = subprocess.Popen([*sai_mcp_command(root), "--http", "127.0.0.1:0"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        try:
            url = served_url(stderr, proc)
            calls = [("sai_search_code", {"query": "handler field", "limit": 8}),
                     ("sai_search_code", {"query": "token", "mode": "lexical", "language": "py"}),
                     ("sai_find_similar", {"path": "src/many.py", "line": 2, "min_score": 0}),
                     ("sai_index_status", {})]
            errors: list[str] = []

            def client(number: int) -> None:
                for k in range(6):
                    name, arguments = calls[(number + k) % len(calls)]
                    body = {"jsonrpc": "2.0", "id": k, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}}
                    answer = httpx.post(url, json=body, headers=HEADERS, timeout=60).json()
                    if "error" in answer or answer["result"].get("isError"):
                        errors.append(json.dumps(answer)[:200])

            threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
            for thread in threads:
                thread.start()
            edited = root / "src" / "auth.py"
            for n in range(2):  # a CLI writer meanwhile, as an agent's editor would be
                edited.write_text(AUTH + f"\n\ndef added_{n}():\n    return {n}\n", encoding="utf-8")
                done = subprocess.run([*cli, "refresh", str(edited)], env=env, capture_output=True, text=True,
                                      timeout=120)
                assert done.returncode == 0, done.stderr
            for thread in threads:
                thread.join(timeout=120)
            assert errors == [] and proc.poll() is None
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def test_allow_write_without_an_index_builds_it_in_the_background_and_answers_meanwhile(
    portal: BlockingPortal, tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = write_tree(tmp_path / "fresh", many_functions(400, per_file=20))
    write_config(root, ollama_server.url,
                 ollama={"url": ollama_server.url, "batch_size": 16, "parallel": 1, "backoff_s": 0.01})
    ollama_server.stall_next(1000, seconds=0.2)  # ~5 s of embedding: the tools answer meanwhile
    with mcp_session(portal, root, standin_env(ollama_server), "--allow-write") as opened:
        deadline = time.monotonic() + 60
        status = opened.call("sai_index_status")
        while status["chunk_count"] < 400 and time.monotonic() < deadline:
            time.sleep(0.1)
            status = opened.call("sai_index_status")
        assert status["indexing"] and status["pending_vectors"] > 0, status
        hits = opened.call("sai_search_code", query="gen_399", explain=True)["hits"]
        assert hits[0]["path"] == "gen/mod_019.py" and hits[0]["symbol"] == "gen_399"
        assert hits[0]["explain"]["pending_vector"] is True  # embedded last: found by its name alone
        symbols = opened.call("sai_find_symbol", name="gen_399")
        assert [d["path"] for d in symbols["definitions"]] == ["gen/mod_019.py"]
        read = opened.call("sai_read_chunk", chunk_id=hits[0]["chunk_id"])
        assert "gen_399" in read["chunk"]["text"]
        while (status["indexing"] or status["pending_vectors"]) and time.monotonic() < deadline:
            time.sleep(0.2)
            status = opened.call("sai_index_status")
        assert (status["indexing"], status["pending_vectors"], status["vector_dim"]) == (False, 0, 768)
        hits = opened.call("sai_search_code", query="gen_399", explain=True)["hits"]
        assert hits[0]["explain"]["pending_vector"] is False and hits[0]["explain"]["cosine"] is not None
    assert ollama_server.inputs_embedded == 400 + 1  # each text once; the query only once vectors existed
