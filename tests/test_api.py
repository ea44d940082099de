"""The public API: the names of `sai.__all__`, and the README's library example on a real tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sai
from sai.embedders.local import LocalEmbedder

PUBLIC = ["load_config", "Project", "index", "refresh", "sync", "search", "find_similar",
          "find_duplicates", "status"]


def test_all_names_the_public_api_and_each_resolves() -> None:
    assert sorted(sai.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert callable(getattr(sai, name)), name
    assert sai.search.__module__ == "sai.query.search"
    assert set(PUBLIC) <= set(dir(sai))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        sai.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("sai.no_such_thing resolved")


def test_importing_sai_imports_no_database_or_model() -> None:
    code = "import sys, sai; print(sorted(m for m in ('duckdb', 'torch', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_library_example_indexes_searches_and_refreshes(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    (tmp_path / "auth.py").write_text("def hash_password(secret):\n    return secret[::-1]\n")
    (tmp_path / "maths.py").write_text("def add(a, b):\n    return a + b\n")
    config = sai.load_config(cwd=tmp_path, env={}, flags={"embedder": "local", "root": str(tmp_path)})
    project = sai.Project(config, embedder=local_embedder)
    try:
        report = sai.index(project)
        assert report.files == 2 and report.chunks >= 2
        hits = sai.search(project, "hash a password", limit=1)
        assert hits[0].path == "auth.py" and hits[0].symbol == "hash_password"
        (tmp_path / "maths.py").write_text("def multiply(a, b):\n    return a * b\n")
        refreshed = sai.refresh(project, ["maths.py"])
        assert [r.path for r in refreshed.refreshed] == ["maths.py"]
        assert sai.find_similar(project, code="def times(x, y):\n    return x * y\n", limit=1)[0].path == "maths.py"
        assert sai.status(project).file_count == 2
        assert sai.find_duplicates(project) == []
    finally:
        project.close()
