"""What a newcomer meets first: mistyped flags, argument checks, the index directory, the
index's own embedder, the text rows of a search (issue "A newcomer's first hour")."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_tree import write_tree
from ollama_standin import OllamaStandIn

from sai.cli.commands import main


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
