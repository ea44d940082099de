"""The MCP tools over a real stdio session answer alike on both backends (Qdrant in local mode)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal
from mcp_sessions import AUTH, MANY, PARSER, index_project, mcp_session, standin_env, write_file
from ollama_standin import OllamaStandIn

CONFIG = "root: .\next: [py]\nollama:\n  backoff_s: 0.01\n"
QDRANT = "backend: qdrant\nqdrant:\n  path: .index/qdrant\n"
CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sai_search_code", {"query": "hash a password"}),
    ("sai_search_code", {"query": "parse config lines", "mode": "semantic", "path_glob": "src/dup_*"}),
    ("sai_search_code", {"query": "password salt", "mode": "lexical", "language": "python"}),
    ("sai_find_similar", {"path": "src/dup_a.py", "line": 2, "min_score": 0}),
    ("sai_find_similar", {"code": "def check(password):\n    return len(password) > 8\n", "min_score": 0}),
    ("sai_find_duplicates", {}),
    ("sai_find_duplicates", {"metric": "cosine", "min_score": 0.5}),
    ("sai_find_symbol", {"name": "handler_3"}),
    ("sai_index_status", {}),
    ("sai_refresh", {"paths": ["src/auth.py"]}),
    ("sai_sync", {"since": "HEAD"}),
)


def _rounded(value: Any, drop: tuple[str, ...]) -> Any:
    """Scores to 4 places (Qdrant normalises stored vectors again), without keys one backend owns."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_rounded(v, drop) for v in value]
    return value


def _answers(portal: BlockingPortal, root: Path, standin: OllamaStandIn) -> list[Any]:
    answers = []
    with mcp_session(portal, root, standin_env(standin), "--allow-write", cwd=root) as session:
        for tool, arguments in CALLS:
            if tool == "sai_refresh":
                write_file(root / "src" / "auth.py", AUTH + "\n\ndef logout(user):\n    return None\n")
            result = session.call(tool, **arguments)
            lexical = arguments.get("mode") == "lexical"  # BM25: Qdrant fixes the mean length at write time
            drop = ("score",) if lexical else ("backend", "indexed_at", "last_refresh_at", "collection")
            answers.append(_rounded(result, drop if tool != "sai_search_code" or lexical else ()))
    return answers


def test_every_tool_answers_alike_on_both_backends(
    tmp_path: Path, portal: BlockingPortal, standin: OllamaStandIn
) -> None:
    answers = {}
    for backend, extra in (("duckdb", ""), ("qdrant", QDRANT)):
        root = tmp_path / "project"  # one path for both: answers name the root
        shutil.rmtree(root, ignore_errors=True)
        for name, text in (("auth.py", AUTH), ("dup_a.py", PARSER), ("dup_b.py", PARSER), ("many.py", MANY)):
            write_file(root / "src" / name, text)
        write_file(root / ".gitignore", ".index/\n")
        write_file(root / "sai-cfg.yml", CONFIG + extra)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
        for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
            subprocess.run(git + step, check=True, capture_output=True)
        index_project(root, standin)
        answers[backend] = _answers(portal, root, standin)
    assert (root / ".index" / "qdrant").is_dir()
    for (tool, arguments), duck, qdrant in zip(CALLS, answers["duckdb"], answers["qdrant"], strict=True):
        assert qdrant == duck, (tool, arguments)
    assert answers["duckdb"][0]["hits"][0]["path"] == "src/auth.py"  # real answers were compared
    assert answers["duckdb"][5]["clusters"] and answers["duckdb"][7]["definitions"]
