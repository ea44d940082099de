"""Searches restricted to a language added with the per-grammar wheels, through the CLI entry
point and through the MCP server over stdio, on a small mixed tree indexed with the defaults
(the Ollama stand-in embeds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal
from fixtures_tree import write_tree
from mcp_sessions import Session, index_project, mcp_session, standin_env
from ollama_standin import OllamaStandIn

from sai.cli.commands import main
from sai.source.languages import DEFAULT_EXTS

SWIFT = """import Foundation

struct RetryPolicy {
    let attempts: Int

    func shouldRetry(after failures: Int) -> Bool {
        return failures < attempts
    }
}

extension RetryPolicy {
    func retryDelay(for attempt: Int) -> Double {
        return Double(attempt) * 0.5
    }
}
"""
ELIXIR = """defmodule Shop.Cart do
  def retry_checkout(cart, attempts) do
    {:ok, cart, attempts}
  end
end
"""
PYTHON = "def retry_request(attempts):\n    return attempts - 1\n"
# `.h` holds C and C++: the C++ header's classes and namespaces are units, as in a `.hpp` file
CPP_HEADER = """#include <string>

namespace shop {

class RetryBudget {
  public:
    int remaining(int spent) const { return limit_ - spent; }

  private:
    int limit_ = 3;
};

}  // namespace shop
"""
C_HEADER = "struct retry_state {\n    int spent;\n};\n\nint retry_left(struct retry_state *s);\n"
README = "# Shop\n\nA shop.\n\n## Retry settings\n\nHow many attempts a checkout gets.\n"
TREE = {"Sources/Retry.swift": SWIFT, "lib/cart.ex": ELIXIR, "app/retry.py": PYTHON, "README.md": README,
        "schema.json": "{}\n", "include/retry_budget.h": CPP_HEADER, "include/retry_state.h": C_HEADER}


@pytest.fixture(scope="module")
def mixed_tree(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    # Markdown is out of the default set: the config names it beside the defaults
    ext = ", ".join((*DEFAULT_EXTS, "md"))
    write_tree(root, {**TREE, ".gitignore": ".index/\n",
                      "sai-cfg.yml": f"root: .\next: [{ext}]\nollama:\n  backoff_s: 0.01\n"})
    return index_project(root, standin)


@pytest.fixture(scope="module")
def mixed_session(portal: BlockingPortal, mixed_tree: Path, standin: OllamaStandIn) -> Iterator[Session]:
    with mcp_session(portal, mixed_tree, standin_env(standin)) as opened:
        yield opened


def cli_json(capsys: pytest.CaptureFixture[str], root: Path, standin: OllamaStandIn, *args: str) -> dict:
    config = str(root / "sai-cfg.yml")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OLLAMA_HOST", standin.url)
        code = main(["--config", config, *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_the_cli_searches_one_new_language_by_name_or_extension(
    mixed_tree: Path, standin: OllamaStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    for language in ("swift", "SWIFT"):
        payload = cli_json(capsys, mixed_tree, standin, "--query-only", "--query", "retry attempts",
                           "--language", language, "--json")
        hits = payload["hits"]
        assert hits and {h["path"] for h in hits} == {"Sources/Retry.swift"}
        shown = {h["symbol"] for h in hits} | {c["symbol"] for h in hits for c in h.get("chunks", ())}
        assert {"RetryPolicy.shouldRetry", "RetryPolicy.retryDelay"} <= shown
    elixir = cli_json(capsys, mixed_tree, standin, "--query-only", "--query", "retry", "--language", "ex", "--json")
    assert {h["path"] for h in elixir["hits"]} == {"lib/cart.ex"}


def test_status_counts_the_new_languages_and_the_dry_run_names_what_has_none(
    mixed_tree: Path, standin: OllamaStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    languages = cli_json(capsys, mixed_tree, standin, "status", "--json")["languages"]
    assert {"swift", "elixir", "python", "markdown", "cpp", "c"} <= set(languages)
    dry = cli_json(capsys, mixed_tree, standin, "--dry-run", "--json")
    assert {"path": "schema.json", "reason": "no-language"} in dry["excluded"]


def test_the_mcp_server_searches_and_finds_symbols_in_one_new_language(mixed_session: Session) -> None:
    hits = mixed_session.call("sai_search_code", query="retry delay for an attempt", language="swift")["hits"]
    assert hits and all(h["path"] == "Sources/Retry.swift" for h in hits)
    found = mixed_session.call("sai_find_symbol", name="retry_checkout", language="elixir")["definitions"]
    assert [(d["symbol"], d["kind"], d["path"]) for d in found] == [
        ("Shop.Cart.retry_checkout", "function", "lib/cart.ex"),
    ]
    sections = mixed_session.call("sai_search_code", query="retry settings", language="markdown")["hits"]
    assert sections and sections[0]["symbol"] == "Shop.Retry settings"


def test_a_cpp_header_is_cpp_and_a_c_header_c(mixed_session: Session) -> None:
    found = mixed_session.call("sai_find_symbol", name="RetryBudget", language="cpp")["definitions"]
    assert (found[0]["symbol"], found[0]["kind"], found[0]["path"]) == ("shop.RetryBudget", "class",
                                                                        "include/retry_budget.h")
    assert {d["language"] for d in found} == {"cpp"}
    assert mixed_session.call("sai_find_symbol", name="RetryBudget", language="c")["definitions"] == []
    state = mixed_session.call("sai_find_symbol", name="retry_state", language="c")["definitions"]
    assert [(d["kind"], d["path"]) for d in state] == [("struct", "include/retry_state.h")]
