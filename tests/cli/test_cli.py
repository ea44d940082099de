"""The `sai` command, through its entry point and as a subprocess, against the Ollama stand-in."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import (
    SOURCES,
    Result,
    assert_one_error_line,
    clean_env,  # noqa: F401 (an autouse fixture)
    sai,
    write_config,
)
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn

from sai.cfg_template import TEMPLATE
from sai.cli.commands import main
from sai.models import IndexProgress
from sai.output.progress import ProgressReporter

ROW = re.compile(r"^  -?\d+\.\d{4}  (\S+):(\d+)-(\d+)  ([0-9a-f]{16})  (.*)$")  # score, location, chunk_id, symbol
SUMMARY = re.compile(
    r"^indexed (\d+) chunks? from (\d+) (\S+) file\(s\) into '(\w+)' \((\d+) file\(s\) skipped "
    r"by config\) — (\d+) chunk\(s\) embedded, (\d+) unchanged(?:, \d+ identical to another chunk "
    r"\(one vector\))?, (\d+) removed$"
)


@pytest.fixture
def project(tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small project (3 indexable files, 1 generated) with a config; the cwd is its root."""
    root = tmp_path / "proj"
    write_tree(root, SOURCES)
    write_config(root, ollama_server)
    monkeypatch.chdir(root)
    return root


@pytest.fixture(scope="module")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `project` tree indexed once per module (opening DuckDB is slow; copies are cheap)."""
    root = tmp_path_factory.mktemp("built") / "proj"
    write_tree(root, SOURCES)
    with OllamaStandIn() as server:
        config = write_config(root, server)
        assert main(["--silent", "--config", str(config)]) == 0
    return root


@pytest.fixture
def indexed(
    built_project: Path, tmp_path: Path, ollama_server: OllamaStandIn,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> Path:
    """A copy of the indexed project (mtimes kept, so nothing is re-embedded), served by
    this test's stand-in; the cwd is its root."""
    root = tmp_path / "proj"
    shutil.copytree(built_project, root)
    write_config(root, ollama_server)
    monkeypatch.chdir(root)
    capsys.readouterr()
    return root



def sai_process(cwd: Path, *args: str) -> Result:
    env = {k: v for k, v in os.environ.items() if k != "OLLAMA_HOST" and not k.startswith("SAI_")}
    done = subprocess.run(
        [sys.executable, "-m", "sai", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def status_of(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    result = sai(capsys, "status", "--json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)



# --- index and query --------------------------------------------------------------------------


def test_index_prints_one_summary_line_on_stdout_and_progress_on_stderr(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = sai(capsys)
    assert first.code == 0
    assert first.out == (
        "indexed 3 chunks from 3 py file(s) into 'demo' (1 file(s) skipped by config)"
        " — 3 chunk(s) embedded, 0 unchanged, 0 removed\n"
    )
    assert "indexing: 3/3 files" in first.err
    assert "indexed" not in first.err and "top " not in first.err

    again = sai(capsys)
    assert again.out == first.out.replace(
        "3 chunk(s) embedded, 0 unchanged", "0 chunk(s) embedded, 3 unchanged"
    )


def test_summary_counts_embedded_unchanged_and_removed_chunks(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (indexed / "src" / "util.py").unlink()
    (indexed / "src" / "auth.py").write_text("def hash_password(pw):\n    return pw\n")
    (indexed / "src" / "new.py").write_text("def brand_new():\n    pass\n")
    result = sai(capsys)
    assert result.code == 0, result.err
    match = SUMMARY.match(result.out.rstrip("\n"))
    assert match is not None, result.out
    # chunks, files, ext, collection, skipped, embedded, unchanged, removed
    assert match.groups() == ("3", "3", "py", "demo", "1", "2", "1", "2")
    assert status_of(capsys)["chunk_count"] == 3


def test_query_prints_header_blank_line_and_one_row_per_hit(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "--query", "hash a password", "--limit", "2", "--query-only")
    assert result.code == 0 and result.err == ""
    lines = result.out.splitlines()
    assert lines[:2] == ["top 2 for: hash a password", ""]
    rows = [ROW.match(line) for line in lines[2:]]
    assert len(rows) == 2 and all(rows)
    assert rows[0].groups()[:3] == ("src/auth.py", "1", "2")
    scores = [float(line.split()[0]) for line in lines[2:]]
    assert scores == sorted(scores, reverse=True)

    everything = sai(capsys, "--query", "hash a password", "--limit", "50", "--query-only")
    everything = everything.out.splitlines()
    assert everything[0] == "top 3 for: hash a password"
    assert len(everything) == 2 + 3 and all(ROW.match(line) for line in everything[2:])


def test_query_json_prints_one_object_with_the_hit_shape(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "--query", "connect to the database", "--json", "--query-only")
    assert result.code == 0
    assert result.out.count("\n") == 1
    hits = json.loads(result.out)["hits"]
    assert len(hits) == 3
    for hit in hits:
        assert {"path", "start_line", "end_line", "symbol", "score", "snippet"} <= set(hit)
        assert hit["score"] == round(hit["score"], 4)
        assert hit["symbol"] is None  # the lines chunker names no symbol
        assert hit["snippet"] == SOURCES[hit["path"]].rstrip("\n")
    assert hits[0]["path"] == "src/db.py"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_query_only_embeds_only_the_query_and_indexes_nothing(
    indexed: Path, ollama_server: OllamaStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    (indexed / "src" / "new.py").write_text("def brand_new():\n    pass\n")
    ollama_server.reset_counts()
    result = sai(capsys, "--query", "format a date", "--query-only")
    assert result.code == 0
    assert result.out.startswith("top 3 for: format a date\n\n")
    assert "indexed" not in result.out + result.err and "indexing" not in result.err
    assert ollama_server.requests == 1
    assert ollama_server.received_inputs == ["search_query: format a date"]
    assert status_of(capsys)["file_count"] == 3


def test_query_only_without_query_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_error_line(sai(capsys, "--query-only"), "--query-only needs --query", code=2)


def test_index_json_reports_the_counts(
    indexed: Path, ollama_server: OllamaStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "--json")
    assert result.out.count("\n") == 1
    payload = json.loads(result.out)
    assert payload["collection"] == "demo"
    assert payload["indexed"] == {
        "chunks": 3, "files": 3, "skipped": 1, "embedded": 0, "unchanged": 3, "removed": 0,
    }
    assert ollama_server.requests == 0  # an up-to-date tree needs no embedding


# --- progress and --silent ---------------------------------------------------------------------


def test_silent_prints_nothing_on_stderr_on_success(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (indexed / "src" / "new.py").write_text("def brand_new():\n    pass\n")
    run = sai(capsys, "--silent")
    assert run.code == 0 and run.err == ""
    assert SUMMARY.match(run.out.rstrip("\n")).group(6) == "1"  # one chunk embedded
    queried = sai(capsys, "--silent", "--query", "hash")
    assert queried.code == 0 and queried.err == ""
    assert queried.out.startswith("top 4 for: hash\n")


def test_query_after_index_keeps_the_summary_off_stdout(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "--query", "hash")
    assert result.out.startswith("top 3 for: hash\n\n")
    assert "indexed" not in result.out
    assert SUMMARY.match(result.err.splitlines()[-1])


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_off_a_terminal_prints_sparse_plain_lines() -> None:
    stream = io.StringIO()
    with ProgressReporter(stream) as progress:
        for done in range(1, 101):
            progress.update(IndexProgress("reading", files_done=done, files_total=100))
        for done in range(0, 101, 10):
            progress.update(IndexProgress("embedding", chunks_embedded=done, chunks_to_embed=100))
    assert stream.getvalue() == (
        "indexing: 1/100 files\nindexing: 100/100 files\n"
        "indexing: 100/100 files, 0/100 chunks embedded\nindexing: 100/100 files, 100/100 chunks embedded\n"
    )


def test_progress_disabled_or_without_work_prints_nothing() -> None:
    for stream, enabled, total in ((TerminalStream(), False, 3), (io.StringIO(), True, 0)):
        with ProgressReporter(stream, enabled=enabled) as progress:
            progress.update(IndexProgress("reading", files_done=total, files_total=total))
        assert stream.getvalue() == ""


# --- options around subcommands, status ------------------------------------------------------


def test_options_work_before_and_after_a_subcommand(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(tmp_path / "proj", ollama_server)
    monkeypatch.chdir(tmp_path)  # no config here: only --config finds it
    before = sai(capsys, "--config", "proj/sai-cfg.yml", "status")
    after = sai(capsys, "status", "--config", "proj/sai-cfg.yml")
    assert before.code == after.code == 0
    assert before.out == after.out and "collection: demo\n" in before.out
    assert before.err == after.err == ""
    as_json = sai(capsys, "--json", "status", "--config", "proj/sai-cfg.yml",
                  "--model", "all-minilm")
    assert json.loads(as_json.out)["model"] == "all-minilm"
    flags_after = sai(capsys, "status", "--collection", "other", "--json", "--config",
                      "proj/sai-cfg.yml")
    assert json.loads(flags_after.out)["collection"] == "other"


def test_status_prints_key_value_lines_and_json(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = status_of(capsys)
    assert {k: payload[k] for k in ("backend", "collection", "model", "vector_dim",
                                     "chunk_count", "chunker")} == {
        "backend": "duckdb", "collection": "demo", "model": "nomic-embed-text",
        "vector_dim": 768, "chunk_count": 3, "chunker": "lines",
    }
    text = sai(capsys, "status")
    assert text.code == 0
    pairs = [re.fullmatch(r"(\w+): (.*)", line) for line in text.out.splitlines()]
    assert all(pairs), text.out
    shown = {m.group(1): m.group(2) for m in pairs}
    assert list(shown)[:6] == ["backend", "collection", "model", "vector_dim", "chunk_count",
                               "chunker"]
    for key, value in payload.items():
        if isinstance(value, dict):
            assert shown[key] == ", ".join(f"{k} {n}" for k, n in value.items())
        elif isinstance(value, list):
            assert shown[key] == ", ".join(value)
        else:
            assert shown[key] == ("" if value is None else str(value))
    assert payload["languages"] == {"python": 3} and shown["languages"] == "python 3"


def test_status_before_any_index_shows_what_would_be_built(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = status_of(capsys)
    assert payload["chunk_count"] == 0 and payload["vector_dim"] is None
    assert payload["model"] == "nomic-embed-text" and payload["collection"] == "demo"
    assert not (project / ".index").exists()


# --- init ---------------------------------------------------------------------------------------


def test_init_writes_the_template_and_refuses_to_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    written = sai(capsys, "init", "--yes")
    assert written.code == 0 and written.out == "wrote sai-cfg.yml\n"
    assert (tmp_path / "sai-cfg.yml").read_text(encoding="utf-8") == TEMPLATE

    (tmp_path / "sai-cfg.yml").write_text("collection: mine\n")
    refused = sai(capsys, "init", "--yes")
    assert_one_error_line(refused, "sai-cfg.yml already exists; pass --force to overwrite it")
    assert (tmp_path / "sai-cfg.yml").read_text() == "collection: mine\n"

    forced = sai(capsys, "init", "--yes", "--force")
    assert forced.code == 0
    assert (tmp_path / "sai-cfg.yml").read_text(encoding="utf-8") == TEMPLATE


def test_init_output_writes_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    result = sai(capsys, "init", "--yes", "--output", "conf/custom.yml")
    assert result.code == 0 and result.out == "wrote conf/custom.yml\n"
    assert (tmp_path / "conf" / "custom.yml").read_text(encoding="utf-8") == TEMPLATE
    assert not (tmp_path / "sai-cfg.yml").exists()
    missing_dir = sai(capsys, "init", "--yes", "--output", "nowhere/x.yml")
    assert_one_error_line(missing_dir, "cannot write nowhere/x.yml")


# --- flush ----------------------------------------------------------------------------------------


def test_flush_deletes_the_collection(indexed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert status_of(capsys)["chunk_count"] == 3
    flushed = sai(capsys, "flush")
    assert flushed.code == 0 and flushed.out == "deleted collection 'demo'\n"
    assert status_of(capsys)["chunk_count"] == 0
    assert sai(capsys, "flush").out == "no collection 'demo' to delete\n"
    query = sai(capsys, "--query", "hash", "--query-only")
    assert_one_error_line(query, "no collection 'demo'")


# --- dry run -------------------------------------------------------------------------------------


def test_dry_run_reports_exactly_and_writes_nothing(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "tree"
    files: dict[str, str | bytes] = {
        ".gitignore": "ignored.py\n",
        "ignored.py": "x = 1\n",
        "bin.py": b"x = 1\x00\x01\x02\n",
        "gen.py": "# Code generated by protoc. DO NOT EDIT.\nx = 1\n",
        "skip_me.py": "x = 1\n",
        "notes.txt": "not python\n",
        "vendor/v.py": "x = 1\n",
        "node_modules/n.py": "x = 1\n",
    }
    files.update({f"big{i:02d}.py": "x = 1\n" * 50 for i in range(13)})
    files.update({f"src/m{i:02d}.py": f"def f{i}():\n    return {i}\n" for i in range(17)})
    write_tree(root, files)
    write_config(root, ollama_server,
                 "max_file_bytes: 200\nexclude: ['skip_*.py']\nexclude_dirs: [vendor]\n")
    monkeypatch.chdir(root)

    result = sai(capsys, "--dry-run")
    assert result.code == 0
    expected = [
        f"DRY RUN — root '{root.resolve()}', ext py",
        "collection 'demo', model 'nomic-embed-text'",
        "strip_comments: false   skip_generated_marker: true",
        "pruned dirs: .git, .index, .next, .turbo, .venv, __pycache__, build, coverage, dist, "
        "node_modules, target, vendor, venv",
        "",
        "WOULD INDEX: 17 file(s)   EXCLUDED: 18 file(s)",
        "  excluded by binary: 1",
        "  excluded by generated-marker: 1",
        "  excluded by gitignore: 1",
        "  excluded by glob: 1",
        "  excluded by no-language: 1",  # notes.txt: text SAI has no units for (its own sai-cfg.yml is not named)
        "  excluded by too-large: 13",
        "sample excluded:",
        *[f"  - big{i:02d}.py  [too-large]" for i in range(13)],
        "  - bin.py  [binary]",
        "  - gen.py  [generated-marker]",
        "sample included:",
        *[f"  + src/m{i:02d}.py" for i in range(15)],
    ]
    assert result.out.splitlines() == expected
    assert result.out.endswith("\n")
    assert not (root / ".index").exists()
    assert ollama_server.requests == 0


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ("chunker: lines\n  bad: 1\n", "is not valid YAML at line 2"),
        ("modle: x\n", "unknown key 'modle'; allowed keys: backend, chunker"),
        ("embedder: openai\n", "unknown embedder 'openai'; choose one of: ollama, local"),
        ("root: ./nope\n", "nope is not a directory; fix `root` ("),
    ],
)
def test_bad_config_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    config: str, fragment: str,
) -> None:
    (tmp_path / "sai-cfg.yml").write_text(config)
    monkeypatch.chdir(tmp_path)
    line = assert_one_error_line(sai(capsys), fragment)
    if "nope" not in fragment:
        assert str(tmp_path / "sai-cfg.yml") in line
    assert not (tmp_path / ".index").exists()


def test_missing_config_file_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    result = sai(capsys, "status", "--config", "missing.yml")
    assert_one_error_line(result, "config file missing.yml not found")


def test_similar_with_code_and_path_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "similar", "--code", "x = 1", "--path", "src/auth.py", "--line", "1")
    assert_one_error_line(result, "give either --code or --path with --line, not both", code=2)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--path", "src/auth.py"), "path and line go together; give both"),
        (("--line", "3"), "path and line go together; give both"),
        ((), "give code, or path and line of an indexed chunk"),
    ],
)
def test_similar_with_an_incomplete_target_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str
) -> None:
    assert_one_error_line(sai(capsys, "similar", *args), fragment, code=2)


def test_similar_at_a_line_outside_every_chunk_names_the_location(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "similar", "--path", "src/auth.py", "--line", "9999")
    line = assert_one_error_line(result, "no indexed chunk at src/auth.py:9999")
    assert line == "error: no indexed chunk at src/auth.py:9999"
    found = sai(capsys, "similar", "--path", "src/auth.py", "--line", "2", "--min-score", "-1")
    assert found.code == 0 and found.out.startswith("2 similar (min_score -1):\n")
    assert "src/auth.py" not in found.out  # the chunk itself is excluded


def test_query_only_on_a_missing_index_says_to_run_sai(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = sai(capsys, "--query", "hash", "--query-only")
    line = assert_one_error_line(result, "no index at ")
    assert "run `sai`" in line
    assert not (project / ".index").exists()


def test_argparse_usage_errors_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = sai(capsys, "similar", "--path", "a.py", "--line", "nine")
    assert result.code == 2 and "invalid int value: 'nine'" in result.err
    result = sai(capsys, "--embedder", "openai")
    assert result.code == 2 and "invalid choice: 'openai'" in result.err


# --- as a real process ---------------------------------------------------------------------------


def test_process_indexes_then_queries_with_results_only_on_stdout(
    project: Path, ollama_server: OllamaStandIn
) -> None:
    result = sai_process(project, "--query", "hash a password", "--limit", "2")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[:2] == ["top 2 for: hash a password", ""]
    assert len(lines) == 4 and all(ROW.match(line) for line in lines[2:])
    assert ROW.match(lines[2]).groups()[:3] == ("src/auth.py", "1", "2")
    assert "indexing: " in result.err and SUMMARY.match(result.err.splitlines()[-1])
    assert ollama_server.requests == 2  # the documents (one batch), then the query

    silent = sai_process(project, "--silent", "--json", "--query", "connect database")
    assert silent.code == 0 and silent.err == ""
    assert json.loads(silent.out)["hits"][0]["path"] == "src/db.py"


def test_process_reports_unreachable_ollama_in_one_line(
    project: Path, ollama_server: OllamaStandIn
) -> None:
    url = ollama_server.url
    ollama_server.stop()
    result = sai_process(project, "--silent")
    line = assert_one_error_line(result, f"cannot reach Ollama at {url}")
    assert line.endswith("is `ollama serve` running?")


def test_query_when_ollama_went_down_is_one_error_line(
    indexed: Path, ollama_server: OllamaStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    ollama_server.stop()
    result = sai(capsys, "--query", "hash", "--query-only")
    assert_one_error_line(
        result, f"cannot reach Ollama at {ollama_server.url} — is `ollama serve` running?"
    )


@pytest.mark.parametrize(
    ("args", "config", "fragment"),
    [
        (("status",), "ext: [py\n", "is not valid YAML at line 2"),
        (("status", "--config", "missing.yml"), None, "config file missing.yml not found"),
        (("similar", "--code", "x", "--path", "a.py"), "collection: c\n",
         "give either --code or --path with --line, not both"),
    ],
)
def test_process_errors_are_one_line_without_traceback(
    tmp_path: Path, args: tuple[str, ...], config: str | None, fragment: str
) -> None:
    if config is not None:
        (tmp_path / "sai-cfg.yml").write_text(config)
    result = sai_process(tmp_path, *args)
    expected_code = 2 if args[0] == "similar" else 1
    assert_one_error_line(result, fragment, code=expected_code)


# --- bad input: one line, the right exit code ------------------------------------------------


@pytest.mark.parametrize("score", ["7", "-1.5", "nan", "inf"])
def test_similar_min_score_outside_a_cosine_range_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str], score: str
) -> None:
    result = sai(capsys, "similar", "--code", "x = 1", "--min-score", score)
    assert_one_error_line(result, f"--min-score {float(score)} is not a similarity score", code=2)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--min-score", "7"), "min_score 7.0 is not a duplicate score; give a value in [-1, 1]"),
        (("--min-score", "2"), "min_score 2.0 is not a duplicate score; give a value in [-1, 1]"),
        (("--min-score", "nan"), "min_score nan is not a duplicate score; give a value in [-1, 1]"),
    ],
)
def test_duplicates_with_bad_numbers_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str
) -> None:
    line = assert_one_error_line(sai(capsys, "duplicates", *args), fragment, code=2)
    assert line == f"error: {fragment}"


@pytest.mark.parametrize("flag", ["--top-k", "--max-clusters", "--min-cluster-size"])
def test_duplicates_with_a_count_below_one_names_the_flag(
    project: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    result = sai(capsys, "duplicates", flag, "0")
    assert result.code == 2
    assert result.err.splitlines()[-1] == f"sai duplicates: error: argument {flag}: 0 is too small; give 1 or more"


@pytest.mark.parametrize("args", [("--query", ""), ("--query", "  "), ("--query", "", "--query-only")])
def test_an_empty_query_says_so_before_indexing(
    project: Path, ollama_server: OllamaStandIn, capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
) -> None:
    line = assert_one_error_line(sai(capsys, *args), "", code=2)
    assert line == "error: --query is empty; give a few words describing the code you want"
    assert ollama_server.requests == 0 and not (project / ".index").exists()


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (("--query", "find \udcff\udcfe", "--embedder", "local"), "the query"),
        (("--query", "\udcff", "--query-only"), "the query"),
        (("similar", "--code", "x = '\udce9'", "--embedder", "local"), "the --code snippet"),
    ],
)
def test_a_query_or_snippet_that_is_not_utf8_is_refused_before_any_embedder(
    project: Path, ollama_server: OllamaStandIn, capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...], what: str,
) -> None:
    fragment = f"error: {what} is not valid UTF-8 text (it holds the bytes \\x"
    line = assert_one_error_line(sai(capsys, *args), fragment, code=2)
    assert line.endswith("); pass it in UTF-8")
    assert ollama_server.requests == 0 and not (project / ".index").exists()


def test_process_refuses_a_query_of_raw_bytes_in_one_line(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAI_", "OLLAMA_"))}
    done = subprocess.run(
        [sys.executable, "-m", "sai", "--embedder", "local", "--query", b"\xff\xfe"],
        cwd=project, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == (b"error: the query is not valid UTF-8 text (it holds the bytes "
                           b"\\xff\\xfe); pass it in UTF-8\n")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--root", "src/auth.py", "status"), "src/auth.py is not a directory; fix `root` (command line)"),
        (("--root", "loop", "status"), "cannot be resolved (a symlink loop); fix `root`"),
        (("--root", "a\x00b", "status"), "/proj/a\\x00b' contains a NUL byte; fix `root`"),
    ],
)
def test_a_bad_root_is_one_error_line(
    project: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str
) -> None:
    (project / "loop").symlink_to("loop")
    assert_one_error_line(sai(capsys, *args), fragment)


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists a directory whatever its mode")
def test_an_unreadable_root_is_one_error_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "locked").mkdir(mode=0)
    assert_one_error_line(sai(capsys, "--root", "locked", "status"), "cannot be read (Permission denied)")


@pytest.mark.parametrize(
    ("args", "fragment", "code"),
    [
        (("refresh", "loop"), "error: path loop is a symlink loop; give a real file", 1),
        (("sync", "--file", "loop"), "error: path loop is a symlink loop; give a real file", 1),
        (("similar", "--path", "loop", "--line", "1"), "error: path loop is a symlink loop", 1),
        (("refresh", "src/a\x00.py"), "error: path src/a\\x00.py contains a NUL byte", 2),
        (("refresh", "src"), "error: path src is a directory; give files", 2),
        (("sync", "--file", "src/"), "error: path src/ is a directory; give files", 2),
        (("duplicates", "--file", "."), "error: path . is the project root itself", 2),
    ],
)
def test_bad_paths_for_refresh_sync_and_similar_are_one_error_line(
    indexed: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], fragment: str,
    code: int,
) -> None:
    (indexed / "loop").symlink_to("loop")
    assert_one_error_line(sai(capsys, *args), fragment, code=code)
    assert status_of(capsys)["chunk_count"] == 3  # nothing was removed


def test_config_and_output_paths_with_a_nul_byte_are_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    result = sai(capsys, "init", "--yes", "--output", "a\x00.yml")
    assert_one_error_line(result, "error: --output a\\x00.yml contains a NUL byte", code=2)
    result = sai(capsys, "status", "--config", "a\x00.yml")
    assert_one_error_line(result, "error: config file 'a\\x00.yml' cannot be resolved")
    assert list(tmp_path.iterdir()) == []


def test_a_closed_stdout_ends_quietly(project: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before sai writes: `sai --json status | head -c 0`
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SAI_", "OLLAMA_"))}
    try:
        done = subprocess.run([sys.executable, "-m", "sai", "--json", "status"], cwd=project,
                              env=env, stdout=write_end, stderr=subprocess.PIPE, timeout=60,
                              stdin=subprocess.DEVNULL)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")


def test_control_characters_in_paths_symbols_and_errors_are_shown_escaped(
    indexed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = "src/\x1b[2Jevil.py"
    (indexed / evil).write_text("def wipe\x7f():\n    return 'screen'\n")
    refreshed = sai(capsys, "refresh", evil)
    assert refreshed.code == 0, refreshed.err
    assert refreshed.out.startswith("  + src/\\x1b[2Jevil.py (1 chunks)\n")
    found = sai(capsys, "--query", "wipe \x1b[31m", "--query-only", "--mode", "lexical")
    assert found.code == 0, found.err
    assert "top 1 for: wipe \\x1b[31m\n" in found.out and "  src/\\x1b[2Jevil.py:1-2" in found.out
    assert "\x1b" not in found.out and "\x7f" not in found.out
    as_json = sai(capsys, "--query", "wipe", "--query-only", "--mode", "lexical", "--json")
    assert json.loads(as_json.out)["hits"][0]["path"] == evil  # JSON escapes on its own
    result = sai(capsys, "similar", "--path", "src/\x1b]0;x\x07.py", "--line", "1")
    assert_one_error_line(result, "error: no indexed chunk at src/\\x1b]0;x\\x07.py:1")


# --- paths: relative to the cwd or to the root --------------------------------------------------


def test_refresh_reads_a_path_against_the_cwd_or_as_a_key(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(indexed / "src")
    monkeypatch.setenv("SAI_CONFIG", str(indexed / "sai-cfg.yml"))
    result = sai(capsys, "refresh", "src/auth.py", "db.py", str(indexed / "src" / "util.py"))
    assert result.code == 0, result.err
    assert result.out == (
        "  + src/auth.py (1 chunks)\n  + src/db.py (1 chunks)\n  + src/util.py (1 chunks)\n"
        "sync: 3 file(s) re-indexed (3 chunks), 0 file(s) removed\n"
    )
    (indexed / "src" / "db.py").unlink()
    removed = sai(capsys, "refresh", "src/db.py")
    assert removed.out == "  - src/db.py (missing)\nsync: 0 file(s) re-indexed (0 chunks), 1 file(s) removed\n"


def test_a_path_neither_on_disk_nor_indexed_is_not_found_not_removed(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(indexed / "src")
    monkeypatch.setenv("SAI_CONFIG", str(indexed / "sai-cfg.yml"))
    result = sai(capsys, "refresh", "auth.py", "nothere.py")
    assert result.code == 0, result.err
    assert result.out == (
        "  + src/auth.py (1 chunks)\n  ? src/nothere.py (not found)\n"
        "sync: 1 file(s) re-indexed (1 chunks), 0 file(s) removed, 1 not found\n"
    )
    as_json = sai(capsys, "sync", "--json", "--file", "typo.py")
    assert json.loads(as_json.out) == {"refreshed": [], "removed": [], "not_found": ["src/typo.py"]}
    indexed_json = sai(capsys, "refresh", "--json", "auth.py")
    assert "not_found" not in json.loads(indexed_json.out)
    assert status_of(capsys)["file_count"] == 3


def test_paths_are_keys_when_sai_runs_outside_the_root(
    indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    config = str(indexed / "sai-cfg.yml")
    result = sai(capsys, "refresh", "--config", config, "src/util.py")
    assert result.out.startswith("  + src/util.py (1 chunks)\n"), result.err
    similar = sai(capsys, "similar", "--config", config, "--path", "src/auth.py", "--line", "1",
                  "--min-score", "-1", "--json")
    assert similar.code == 0, similar.err
    assert {h["path"] for h in json.loads(similar.out)["hits"]} == {"src/db.py", "src/util.py"}
    seeded = sai(capsys, "duplicates", "--config", config, "--file", "src/auth.py", "--json")
    assert seeded.code == 0 and json.loads(seeded.out)["seeded"] is True
    outside = sai(capsys, "refresh", "--config", config, "../elsewhere.py")
    assert_one_error_line(outside, "path ../elsewhere.py is outside the project root")


# --- search grouped by file ----------------------------------------------------------------------

SHAPES = "".join(f"def shape_area_{i}(width, height):\n    return width * height * {i}\n\n\n" for i in range(6))
FILES_TREE = {"src/shapes.py": SHAPES, "src/auth.py": SOURCES["src/auth.py"], "src/db.py": SOURCES["src/db.py"]}
GROUPED_ROW = re.compile(r"^      lines: \d+-\d+ shape_area_\d(, \d+-\d+ shape_area_\d)+$")


@pytest.fixture
def ast_project(tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three files, one of them six functions long, indexed with the AST chunker."""
    root = tmp_path / "shapes"
    write_tree(root, FILES_TREE)
    (root / "sai-cfg.yml").write_text(f"ollama:\n  url: {ollama_server.url}\n  timeout_s: 5\n"
                                      "chunker: ast\next: [py]\ncollection: demo\n", encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def test_files_lists_each_file_once_with_its_best_chunks_lines(
    ast_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = sai(capsys, "--silent", "--json", "--query", "shape area width height", "--limit", "8", "--chunks")
    paths = [h["path"] for h in json.loads(plain.out)["hits"]]
    assert paths.count("src/shapes.py") > 1  # with --chunks, one file holds several hits
    for flags in (("--files",), ()):  # --files is the default
        grouped = sai(capsys, "--json", "--query", "shape area width height", "--limit", "8", *flags, "--query-only")
        assert grouped.code == 0, grouped.err
        hits = json.loads(grouped.out)["hits"]
        assert sorted(h["path"] for h in hits) == sorted(set(paths)) and len(hits) == 3
        shapes = next(h for h in hits if h["path"] == "src/shapes.py")
        lines = [(c["start_line"], c["end_line"]) for c in shapes["chunks"]]
        assert (shapes["start_line"], shapes["end_line"]) not in lines  # the hit's own lines are its own
        assert 1 <= len(lines) <= 4 and len(set(lines)) == len(lines)
        assert all(c["symbol"].startswith("shape_area_") and len(c["chunk_id"]) == 16 for c in shapes["chunks"])
        assert [h["rank"] for h in hits] == [1, 2, 3]

    text = sai(capsys, "--query", "shape area width height", "--files", "--query-only")
    rows = text.out.splitlines()
    assert rows[0] == "top 3 for: shape area width height"
    assert sum(bool(ROW.match(r)) for r in rows) == 3 and any(GROUPED_ROW.match(r) for r in rows)


def test_files_without_query_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_error_line(sai(capsys, "--files"), "--files needs --query", code=2)
    assert_one_error_line(sai(capsys, "--chunks"), "--chunks needs --query", code=2)


def test_files_as_a_process(ast_project: Path) -> None:
    result = sai_process(ast_project, "--silent", "--json", "--query", "shape area", "--files")
    assert result.code == 0, result.err
    hits = json.loads(result.out)["hits"]
    assert len({h["path"] for h in hits}) == len(hits)
    shapes = next(h for h in hits if h["path"] == "src/shapes.py")  # the file several chunks answer
    assert shapes["chunks"] and all(c["start_line"] != shapes["start_line"] for c in shapes["chunks"])
