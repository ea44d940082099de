"""What a newcomer meets first: mistyped flags, argument checks, the index directory, the
index's own embedder, the text rows of a search (issue "A newcomer's first hour")."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn

from sai.cli.commands import main
from sai.config import load_config
from sai.errors import UsageError
from sai.indexing import indexer
from sai.project import Project
from sai.query.similar import find_similar


@pytest.mark.parametrize(("argv", "unknown", "close"), [
    (["--qurey", "x"], "--qurey", "--query"),
    (["--embeder", "local", "status"], "--embeder", "--embedder"),
    (["duplicates", "--min-scroe", "0.9"], "--min-scroe", "--min-score"),
])
def test_a_mistyped_flag_is_named_with_the_close_one(
    argv: list[str], unknown: str, close: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"sai: error: unknown option {unknown}; did you mean {close}?"


def test_an_unknown_flag_with_nothing_close_points_at_the_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["status", "--zzzzzz"])
    assert capsys.readouterr().err.splitlines()[-1] == "sai: error: unknown option --zzzzzz; see sai --help"


def _project(root: Path, server: OllamaStandIn) -> Path:
    """Two small Python files (renamed copies, shaped enough to pair) and a config that names
    the stand-in but no embedder or model."""
    write_tree(root, {
        "src/cart.py": "def cart_total(items):\n    total = 0\n    for item in items:\n"
                       "        if item.price > 0:\n            total += item.price * item.count\n    return total\n",
        "src/copy.py": "def basket_total(things):\n    total = 0\n    for thing in things:\n"
                       "        if thing.price > 0:\n            total += thing.price * thing.count\n"
                       "    return total\n",
    })
    (root / "sai-cfg.yml").write_text(f"ollama:\n  url: {server.url}\n  backoff_s: 0.01\n", encoding="utf-8")
    return root


def test_an_index_is_searched_with_the_embedder_and_model_it_was_built_with(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(_project(tmp_path / "p", ollama_server))
    assert main(["--silent", "--model", "mxbai-embed-large"]) == 0
    ollama_server.reset_counts()
    assert main(["--silent", "--query-only", "--query", "cart total", "--json"]) == 0  # no --model
    assert [body["model"] for body in ollama_server.bodies] == ["mxbai-embed-large"]
    capsys.readouterr()
    ollama_server.stop()  # duplicates and similar --path read stored vectors: no model at all
    assert main(["--silent", "duplicates", "--min-score", "0.5"]) == 0
    assert main(["--silent", "similar", "--path", "src/cart.py", "--line", "1", "--min-score", "0.5"]) == 0
    assert "basket_total" in capsys.readouterr().out


def test_asking_for_another_model_says_which_flag_to_drop_not_to_rebuild(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(_project(tmp_path / "p", ollama_server))
    assert main(["--silent", "--model", "mxbai-embed-large"]) == 0
    capsys.readouterr()
    assert main(["--model", "nomic-embed-text", "duplicates"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "built with model mxbai-embed-large" in err
    assert "leave out the model asked for (--model, SAI_MODEL)" in err and "--recreate" not in err


def test_recreate_builds_with_the_configs_embedder_not_the_old_index(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(_project(tmp_path / "p", ollama_server))
    assert main(["--silent", "--model", "mxbai-embed-large"]) == 0
    assert main(["--silent", "--recreate", "--json"]) == 0
    capsys.readouterr()
    assert main(["--json", "status"]) == 0
    assert '"model": "nomic-embed-text"' in capsys.readouterr().out


def test_a_config_naming_another_model_than_the_index_s_is_told_which_answers(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = _project(tmp_path / "p", ollama_server)
    monkeypatch.chdir(root)
    assert main(["--silent", "--model", "mxbai-embed-large"]) == 0
    with (root / "sai-cfg.yml").open("a", encoding="utf-8") as config:
        config.write("model: nomic-embed-text\n")
    capsys.readouterr()
    assert main(["--query-only", "--query", "cart total", "--json"]) == 0  # the index's model answers
    note = ("note: the index was built with ollama mxbai-embed-large, which answers; sai-cfg.yml asks for "
            "ollama nomic-embed-text: `sai --recreate` rebuilds the index with that")
    assert note in capsys.readouterr().err.splitlines()
    assert main(["--json", "status"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["model"], status["config_asks"]) == (
        "mxbai-embed-large", {"embedder": "ollama", "model": "nomic-embed-text"})
    assert main(["status"]) == 0
    assert "config_asks: embedder ollama, model nomic-embed-text\n" in capsys.readouterr().out
    assert main(["--silent", "--recreate"]) == 0  # the config's model now: nothing more to say
    capsys.readouterr()
    assert main(["--json", "status"]) == 0
    captured = capsys.readouterr()
    assert "config_asks" not in json.loads(captured.out) and captured.err == ""


def test_a_config_naming_no_model_hears_nothing_of_the_index_s(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(_project(tmp_path / "p", ollama_server))  # its config names no embedder, no model
    assert main(["--silent", "--model", "mxbai-embed-large"]) == 0
    capsys.readouterr()
    assert main(["--json", "status"]) == 0
    captured = capsys.readouterr()
    assert "config_asks" not in json.loads(captured.out) and captured.err == ""


def test_root_finds_the_config_file_inside_it(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = _project(tmp_path / "p", ollama_server)
    (root / "sai-cfg.yml").write_text(f"ollama:\n  url: {ollama_server.url}\ncollection: from_file\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["--root", "p", "--json", "status"]) == 0
    captured = capsys.readouterr()
    assert '"collection": "from_file"' in captured.out and "no sai-cfg.yml found" not in captured.err


def test_the_index_directory_is_ignored_by_git(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    root = _project(tmp_path / "p", ollama_server)
    monkeypatch.chdir(root)
    subprocess.run([git, "init", "-q"], check=True)
    assert main(["--silent"]) == 0
    subprocess.run([git, "add", "-A"], check=True)
    listed = subprocess.run([git, "ls-files"], check=True, capture_output=True, text=True).stdout.split()
    assert listed == ["sai-cfg.yml", "src/cart.py", "src/copy.py"]
    assert (root / ".index" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"


def test_a_directory_the_user_already_had_gets_no_gitignore(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path / "p", ollama_server)
    (root / "sai-cfg.yml").write_text(
        f"ollama:\n  url: {ollama_server.url}\nduckdb:\n  path: src/code.duckdb\n", encoding="utf-8")
    monkeypatch.chdir(root)
    assert main(["--silent"]) == 0
    assert (root / "src" / "code.duckdb").is_file() and not (root / "src" / ".gitignore").exists()


@pytest.mark.parametrize("argv", [
    ["--query", "x", "--query-only", "--limit", "0"], ["--query", "x", "--query-only", "--limit", "-3"],
    ["duplicates", "--top-k", "0"], ["similar", "--code", "x", "--limit", "0"], ["symbol", "f", "--limit", "0"],
])
def test_a_count_below_one_is_refused_naming_its_flag(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    flag, value = argv[-2:]
    assert exit_.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]  # `sai: error:` or `sai symbol: error:`
    assert last.endswith(f" error: argument {flag}: {value} is too small; give 1 or more"), last


def test_the_core_refuses_a_directory_to_refresh_and_a_similarity_past_one(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What sai_refresh and sai_find_similar call: the CLI's checks hold for every caller."""
    root = _project(tmp_path / "p", ollama_server)
    monkeypatch.chdir(root)
    assert main(["--silent"]) == 0
    project = Project(load_config(cwd=root, env={}))
    try:
        with pytest.raises(UsageError, match=r"^path src is a directory; give files$"):
            indexer.refresh(project, ["src"])
        with pytest.raises(UsageError, match=r"^min_score 7 is not a similarity score; give a value in \[-1, 1\]$"):
            find_similar(project, path="src/cart.py", line=1, min_score=7)
        assert indexer.refresh(project, ["src/cart.py"]).refreshed  # a file still refreshes
    finally:
        project.close()


def test_dry_run_json_is_one_object(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_project(tmp_path / "p", ollama_server))
    assert main(["--dry-run", "--json", "--silent"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["would_index"] == ["src/cart.py", "src/copy.py"] and payload["excluded"] == []


def test_search_rows_show_the_order_score_chunk_id_symbol_and_a_stale_file(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path / "p", ollama_server)
    write_tree(root, {f"src/more_{n}.py": f"def price_{n}(items):\n    return len(items) * {n}\n" for n in range(6)})
    monkeypatch.chdir(root)
    assert main(["--silent"]) == 0
    (root / "src" / "cart.py").write_text("def cart_total(items):\n    return 0\n", encoding="utf-8")
    capsys.readouterr()
    query = ["--query-only", "--query", "cart total price", "--limit", "8"]
    assert main(query) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert main([*query, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    shown = [row for row in rows if not row.startswith("      ")]
    assert [row.split("  ")[2:] for row in shown] == [  # after the score: location, chunk_id, symbol
        [f"{h['path']}:{h['start_line']}-{h['end_line']}", h["chunk_id"], h["symbol"] or ""] for h in hits]
    scores = [float(row.split()[0]) for row in shown]
    assert scores == sorted(scores, reverse=True)  # hybrid: the fused score the order follows
    assert [float(r.split()[0]) for r in shown] != [round(h["score"], 4) for h in hits]  # not the cosine
    stale = [rows[i + 1] for i, row in enumerate(rows) if "src/cart.py:" in row]
    assert stale == ["      stale: src/cart.py changed since it was indexed; `sai refresh` it"]


def test_the_summary_names_the_extensions_found_and_chunks_sharing_a_vector(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path / "p", ollama_server)
    write_tree(root, {"web/a.ts": "export function same(x: number) { return x + 1; }\n",
                      "web/b.ts": "export function same(x: number) { return x + 1; }\n"})
    monkeypatch.chdir(root)
    assert main([]) == 0
    assert capsys.readouterr().out == (
        "indexed 4 chunks from 4 py/ts file(s) into 'source_code' (0 file(s) skipped by config)"
        " — 3 chunk(s) embedded, 0 unchanged, 1 identical to another chunk (one vector), 0 removed\n")
    for key in ("src/copy.py", "web/a.ts", "web/b.ts"):
        (root / key).unlink()
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("indexed 1 chunk from 1 py file(s)")


def test_status_without_an_index_says_so_and_what_sai_would_build_with(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(tmp_path / "p", ollama_server)
    monkeypatch.chdir(root)
    assert main(["status"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"no index yet at {root / '.index' / 'code.duckdb'}; `sai` builds one with:"
    assert all(not line.endswith(": ") for line in lines) and "embedder: ollama" in lines


def test_dry_run_prints_no_empty_sample_heading(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_project(tmp_path / "p", ollama_server))
    assert main(["--dry-run", "--silent"]) == 0
    out = capsys.readouterr().out
    assert "sample excluded:" not in out and "sample included:\n  + src/cart.py\n" in out
