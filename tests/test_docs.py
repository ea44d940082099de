"""The docs stay true to the code: every CLI option, config key and MCP tool is documented."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sai.cfg_template import yaml_value
from sai.cli.commands import build_parser
from sai.settings import ENV_KEYS, SCHEMA, SETTINGS
from sai.source.files import REASONS

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
TOOLS = (
    "sai_search_code", "sai_find_similar", "sai_find_duplicates", "sai_index_status",
    "sai_refresh", "sai_sync", "sai_prepare_mcp_setup", "sai_read_chunk", "sai_find_symbol",
    "sai_find_references", "sai_find_callers", "sai_find_callees", "sai_impact",
)
GLOSSARY_TERMS = (
    "chunk", "chunk_id", "key", "symbol", "unit", "gap chunk", "collection", "embedding",
    "cosine similarity", "HNSW", "BM25", "RRF", "stale", "seed", "cluster", "min_score", "top_k",
    "prefix style", "token", "sidecar", "generation", "shared copy", "change log", "lease", "compaction",
)


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _mentions(text: str, word: str) -> bool:
    """`word` as a whole token: `--path` is not found inside `--path-glob`."""
    return re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w-])", text) is not None


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_strings() -> set[tuple[str, str]]:
    """(command, option) for every option of `sai` and of each subcommand."""
    parser = build_parser()
    found = {("sai", opt) for action in parser._actions for opt in action.option_strings}
    for name, sub in _subparsers(parser).items():
        found |= {(name, opt) for action in sub._actions for opt in action.option_strings}
    return found


def test_every_cli_option_of_every_command_is_in_cli_md() -> None:
    text = _read("cli.md")
    missing = sorted(f"{cmd} {opt}" for cmd, opt in _option_strings() if not _mentions(text, opt))
    assert not missing, f"options missing from docs/cli.md: {missing}"


def test_every_subcommand_has_a_section_in_cli_md() -> None:
    text = _read("cli.md")
    missing = [name for name in _subparsers(build_parser()) if f"## `sai {name}" not in text]
    assert not missing, f"commands without a section in docs/cli.md: {missing}"


def test_option_walk_sees_subcommand_options() -> None:
    # guards the two tests above against a parser walk that silently finds nothing
    options = _option_strings()
    assert ("duplicates", "--path-glob") in options and ("mcp", "--allow-write") in options


def test_every_exclusion_reason_is_in_cli_md() -> None:
    text = _read("cli.md")
    missing = [reason for reason in REASONS if f"`{reason}`" not in text]
    assert not missing, f"exclusion reasons missing from docs/cli.md: {missing}"


def _documented_settings() -> dict[str, list[str]]:
    """The rows of docs/configuration.md's "Keys" table: key -> its cells (type, default, meaning)."""
    section = _read("configuration.md").split("## Keys", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_.]+)` \|(.*)\|\s*$", section, flags=re.M)
    return {key: [cell.strip() for cell in rest.split(" | ")] for key, rest in rows}


def test_the_configuration_md_keys_table_is_the_settings_table() -> None:
    documented = _documented_settings()
    assert list(documented) == list(SCHEMA), "docs/configuration.md's Keys table differs from config.SETTINGS"


def test_configuration_md_states_each_settings_default_and_choices() -> None:
    documented = _documented_settings()
    for setting in SETTINGS:
        _, default, meaning = documented[setting.key][:3]
        if setting.default is not None:
            assert yaml_value(setting.default) in default.replace("`", ""), f"{setting.key}: default {default}"
        missing = [c for c in setting.choices if f"`{c}`" not in meaning]
        assert not missing, f"{setting.key}: choices {missing} not in docs/configuration.md"


def test_every_environment_variable_is_in_configuration_md() -> None:
    text = _read("configuration.md")
    missing = [var for var in (*ENV_KEYS, "SAI_CONFIG") if f"`{var}`" not in text]
    assert not missing, f"environment variables missing from docs/configuration.md: {missing}"


def test_the_documented_tools_are_the_servers_tools() -> None:
    from sai.mcp.server import TOOL_NAMES

    assert set(TOOL_NAMES) == set(TOOLS)


def test_every_mcp_tool_is_in_mcp_md() -> None:
    if not (DOCS / "mcp.md").is_file():
        pytest.skip("docs/mcp.md is not written yet (another engineer owns it)")
    text = _read("mcp.md")
    missing = [tool for tool in TOOLS if not _mentions(text, tool)]
    assert not missing, f"tools missing from docs/mcp.md: {missing}"


def test_every_mcp_tool_is_in_output_schemas_md() -> None:
    text = _read("output-schemas.md")
    missing = [tool for tool in TOOLS if not _mentions(text, tool)]
    assert not missing, f"tools missing from docs/output-schemas.md: {missing}"


def test_every_glossary_term_has_an_entry() -> None:
    text = _read("glossary.md")
    entries = {m.lower() for m in re.findall(r"^\*\*([^*]+)\*\*", text, flags=re.M)}
    missing = [term for term in GLOSSARY_TERMS if term.lower() not in entries]
    assert not missing, f"terms without an entry in docs/glossary.md: {missing}"


def _local_links(path: Path) -> list[Path]:
    """Files a markdown file points at: relative link targets (resolved against the file's
    directory, as a renderer does) and repo paths named in inline code (against the repo root)."""
    text = path.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # code blocks show output, not links
    found = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if not re.match(r"[a-z]+:", target) and not target.startswith("#"):
            found.append(path.parent / target.split("#", 1)[0])
    for span in re.findall(r"`([^`\n]+)`", prose):
        found += [REPO / p for p in re.findall(r"(?<![\w/])(?:docs|benchmarks|mcp-setup)/[\w./-]*\w", span)]
    return found


DOC_FILES = ["README.md", *sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))]


@pytest.mark.parametrize("doc", DOC_FILES)
def test_links_resolve_to_existing_files(doc: str) -> None:
    broken = [str(target) for target in _local_links(REPO / doc) if not target.exists()]
    assert not broken, f"{doc} points at missing files: {broken}"


def _headings(path: Path) -> list[str]:
    prose = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return [h.strip() for h in re.findall(r"^#+ (.+)$", prose, flags=re.M)]


def _anchor(heading: str) -> str:
    """The id a renderer (GitHub's) gives a heading: lower case, punctuation dropped, spaces -."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", [*DOC_FILES, "benchmarks/DECISIONS.md"])
def test_link_anchors_name_a_heading_of_their_file(doc: str) -> None:
    path = REPO / doc
    prose = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+#[^)\s]+)\)", prose):
        name, anchor = target.split("#", 1)
        linked = path.parent / name if name else path
        if linked.suffix == ".md" and anchor not in {_anchor(h) for h in _headings(linked)}:
            broken.append(target)
    assert not broken, f"{doc} links to headings that do not exist: {broken}"


def test_sections_quoted_from_design_and_notebook_exist() -> None:
    """`docs/design.md, "Vector search"` in a comment or a doc names a heading of that file."""
    sources = [*REPO.glob("sai/**/*.py"), *REPO.glob("benchmarks/*.py"), *(REPO / d for d in DOC_FILES)]
    quoted = re.compile(r"docs/(design|notebook)\.md`?,?\s*\(?\"([^\"]+)\"")
    missing = []
    for source in sources:
        for doc, name in quoted.findall(source.read_text(encoding="utf-8")):
            name = re.sub(r"\s*\n\s*#?\s*", " ", name)
            if name not in _headings(DOCS / f"{doc}.md"):
                missing.append(f"{source.relative_to(REPO)}: {doc}.md {name!r}")
    assert not missing, f"quoted sections that are no heading: {missing}"
    assert len(quoted.findall((REPO / "sai/query/definitions.py").read_text(encoding="utf-8"))) == 1


def test_link_check_sees_the_readme_links() -> None:
    targets = {t.resolve() for t in _local_links(REPO / "README.md")}
    assert (DOCS / "cli.md").resolve() in targets


def test_readme_links_every_reference_doc() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in ("cli.md", "configuration.md", "mcp.md", "output-schemas.md", "design.md", "glossary.md"):
        assert f"docs/{name}" in readme, f"README does not point at docs/{name}"


def test_design_md_states_the_ranking_signals_as_declared() -> None:
    """docs/design.md's formula and signal table, and output-schemas.md's formula, are those that
    sai/query/ranking/signals.py's SIGNALS give: a new signal cannot be left out of the docs."""
    from sai.query.ranking import formula
    from sai.query.ranking.signals import table

    design = _read("design.md")
    assert f"    fused = {formula()}\n" in design
    missing = [row for row in table() if row not in design.splitlines()]
    assert not missing, f"docs/design.md lacks these rows of the signal table: {missing}"
    assert f"`{formula()}`" in _read("output-schemas.md")
