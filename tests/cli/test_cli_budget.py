"""`--max-tokens` through the `sai` entry point: every answer that returns code fits its budget,
in text and in JSON, and says what it left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runs import Result, clean_env, sai  # noqa: F401 (clean_env: an autouse fixture)
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn

from sai.cli.commands import main

HANDLERS = "".join(f"def handler_{i}(request):\n    return request.get('field_{i}')\n\n\n" for i in range(40))
PARSER = "def parse_pairs(text):\n    return dict(line.split('=') for line in text.splitlines())\n"
REPORT = "def long_report(rows):\n" + "".join(f"    total_{i} = sum(row[{i}] for row in rows)\n" for i in range(80))
COMMANDS = (
    ("--query", "handler request field", "--query-only", "--mode", "lexical", "--limit", "40", "--chunks"),
    ("similar", "--path", "src/handlers.py", "--line", "1", "--min-score", "0", "--limit", "40"),
    ("read", "--path", "src/handlers.py", "--start-line", "41", "--neighbours", "5"),
    ("read", "--path", "src/report.py", "--start-line", "1"),
    ("symbol", "handler", "--limit", "40"),
    ("duplicates",),
)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("budget") / "proj"
    copies = {f"src/copies/parse_{i}.py": PARSER for i in range(30)}  # one cluster of 30
    write_tree(root, {"src/handlers.py": HANDLERS, "src/report.py": REPORT, **copies})
    with OllamaStandIn() as server:
        (root / "sai-cfg.yml").write_text(f"ollama:\n  url: {server.url}\n  backoff_s: 0.01\next: [py]\n",
                                          encoding="utf-8")
        assert main(["--silent", "--config", str(root / "sai-cfg.yml")]) == 0
    return root


def _run(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> Result:
    # --query-only, read, symbol, duplicates and similar by location need no embedder
    return sai(capsys, *args, "--silent", "--config", str(root / "sai-cfg.yml"))


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0].strip("-") + str(i) for i, c in enumerate(COMMANDS)])
def test_text_and_json_answers_fit_their_budget_and_end_with_what_was_left_out(
    capsys: pytest.CaptureFixture[str], indexed: Path, command: tuple[str, ...]
) -> None:
    cut_somewhere = False
    for max_tokens in (60, 250):
        text = _run(capsys, indexed, *command, "--max-tokens", str(max_tokens))
        line = _run(capsys, indexed, *command, "--max-tokens", str(max_tokens), "--json")
        assert text.code == line.code == 0, (text.err, line.err)
        answer = json.loads(line.out)
        if "truncated" not in answer:
            continue
        cut_somewhere = True
        over = answer["truncated"].get("over_budget", False)
        assert len(line.out) - 1 <= max_tokens * 4 or over
        assert "--max-tokens" in answer["truncated"]["hint"]
        if len(text.out) > max_tokens * 4:  # only when even one row is too much
            assert "too small for even one" in text.out
    assert cut_somewhere


def test_a_cut_search_prints_the_rows_that_fit_and_an_omission_line(
    capsys: pytest.CaptureFixture[str], indexed: Path
) -> None:
    out = _run(capsys, indexed, *COMMANDS[0], "--max-tokens", "100").out
    lines = out.rstrip("\n").split("\n")
    shown = int(lines[0].split()[1])
    assert lines[0] == f"top {shown} for: handler request field" and len(lines) == shown + 3
    assert lines[-1] == f"… {40 - shown} more hits omitted to fit --max-tokens 100; raise --max-tokens"
    assert len(out) <= 400


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_budget_that_is_not_a_positive_integer_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], indexed: Path, value: str
) -> None:
    result = _run(capsys, indexed, "symbol", "handler", "--max-tokens", value)
    assert result.code == 2 and "argument --max-tokens" in result.err and not result.out
