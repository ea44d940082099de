"""The fixture index most MCP server tests serve (test_mcp_server.py, test_mcp_http.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_sessions import AUTH, MANY, PARSER, index_project, write_file
from ollama_standin import OllamaStandIn


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Path:
    root = tmp_path_factory.mktemp("project")
    write_file(root / "src" / "auth.py", AUTH)
    write_file(root / "src" / "dup_a.py", PARSER)
    write_file(root / "src" / "dup_b.py", PARSER)
    write_file(root / "src" / "many.py", MANY)
    write_file(root / ".gitignore", ".index/\n")
    write_file(root / "sai-cfg.yml", "root: .\next: [py]\nollama:\n  backoff_s: 0.01\n")  # quick retries
    return index_project(root, standin)
