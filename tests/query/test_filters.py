"""Filtered questions search the filtered subset, and no answer goes missing after refreshes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from fixtures_tree import many_functions, open_project, run_cli, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.errors import UsageError
from sai.indexing import indexer
from sai.query import search
from sai.query.similar import find_similar

TS_FILES = {
    "web/cart.ts": ("export class Cart {\n  computeTotal(items: Item[]): number {\n"
                    "    return items.reduce((sum, item) => sum + item.price, 0);\n  }\n}\n"),
    "web/format.ts": ("export function formatValue(value: number): string {\n"
                      "  return value.toFixed(2);\n}\n"),
}
QUERIES = ("value times number", "gen_7", "compute the total price of items", "format a value")


def _tree() -> dict[str, str]:
    return {**many_functions(300, per_file=10), **TS_FILES}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_tree(tmp_path_factory.mktemp("full"), _tree())
    with OllamaStandIn() as server:
        write_config(root, server.url)
        project = open_project(root)
        indexer.index(project)
        project.close()
    return root


def _subset(tmp_path: Path, server: OllamaStandIn, keys: list[str]) -> Path:
    tree = _tree()
    root = write_tree(tmp_path / "subset", {k: tree[k] for k in keys})
    write_config(root, server.url)
    project = open_project(root)
    indexer.index(project)
    project.close()
    return root


def _answers(root: Path, query: str, mode: str, group_by: str = "chunk", **filters: str
             ) -> list[tuple[str, int, float]]:
    project = open_project(root)
    try:
        hits = search.search(project, query, limit=8, mode=mode, group_by=group_by, **filters)
    finally:
        project.close()
    return [(h.path, h.start_line, round(h.score, 4)) for h in hits]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "lexical"])
def test_a_glob_on_one_small_file_searches_that_file(
    indexed: Path, tmp_path: Path, ollama_server: OllamaStandIn, mode: str
) -> None:
    write_config(indexed, ollama_server.url)
    alone = _subset(tmp_path, ollama_server, ["gen/mod_017.py"])
    for query in QUERIES:
        filtered = _answers(indexed, query, mode, path_glob="gen/mod_017.py")
        assert len(filtered) == 8 or mode == "lexical"
        assert filtered == _answers(alone, query, mode)
        by_file = _answers(indexed, query, mode, group_by="file", path_glob="gen/mod_017.py")
        assert by_file == _answers(alone, query, mode, group_by="file")
        assert [p for p, _, _ in by_file] == ["gen/mod_017.py"] * len(by_file) and len(by_file) <= 1


@pytest.mark.parametrize("language", ["typescript", "ts", "TypeScript"])
def test_a_rare_language_is_searched_among_its_own_chunks(
    indexed: Path, tmp_path: Path, ollama_server: OllamaStandIn, language: str
) -> None:
    write_config(indexed, ollama_server.url)
    alone = _subset(tmp_path, ollama_server, list(TS_FILES))
    for mode in ("hybrid", "semantic", "lexical"):
        filtered = _answers(indexed, "compute the total price of items", mode, language=language)
        assert filtered and {path for path, _, _ in filtered} <= set(TS_FILES)
        assert filtered == _answers(alone, "compute the total price of items", mode)


def test_an_unknown_language_is_a_usage_error_listing_the_names(indexed: Path, ollama_server: OllamaStandIn) -> None:
    write_config(indexed, ollama_server.url)
    project = open_project(indexed)
    with pytest.raises(UsageError, match="unknown language 'cobol'.*typescript"):
        search.search(project, "x", language="cobol")
    project.close()


def test_similar_with_a_filter_searches_the_subset(indexed: Path, ollama_server: OllamaStandIn) -> None:
    write_config(indexed, ollama_server.url)
    project = open_project(indexed)
    hits = find_similar(project, path="gen/mod_000.py", line=1, limit=5, min_score=-1.0,
                               path_glob="gen/mod_02*.py")
    project.close()
    assert len(hits) == 5 and all(h.path.startswith("gen/mod_02") for h in hits)


def test_cli_search_takes_language_and_path_glob(
    indexed: Path, ollama_server: OllamaStandIn, capsys, monkeypatch
) -> None:
    write_config(indexed, ollama_server.url)
    monkeypatch.chdir(indexed)
    code, out, _ = run_cli(capsys, "--query-only", "--query", "total", "--language", "ts", "--json")
    assert code == 0
    import json

    assert {h["path"] for h in json.loads(out)["hits"]} <= set(TS_FILES)
    code, out, _ = run_cli(capsys, "--query-only", "--query", "value", "--path-glob", "gen/mod_003.py", "--json")
    assert code == 0 and {h["path"] for h in json.loads(out)["hits"]} == {"gen/mod_003.py"}


@pytest.mark.parametrize("refreshes", [6, pytest.param(50, marks=pytest.mark.slow)])
def test_after_many_refreshes_searches_stay_exact(
    indexed: Path, tmp_path: Path, ollama_server: OllamaStandIn, refreshes: int
) -> None:
    root = Path(shutil.copytree(indexed, tmp_path / "copy"))
    write_config(root, ollama_server.url)
    project = open_project(root)
    targets = [f"gen/mod_00{n}.py" for n in range(3)]
    for n in range(refreshes):
        target = root / targets[n % 3]
        target.write_text(target.read_text() + f"\n\ndef added_{n}(value):\n    return value * {n}\n")
        indexer.refresh(project, [targets[n % 3]])
    with project.store.read() as reader:
        rows, matrix, _ = reader.all_chunks()
    recalls = []
    for query in QUERIES:
        vector = project.embedder.embed_query(query)
        cosines = matrix @ vector
        tenth = float(np.sort(cosines)[-10])
        # the exact top 10, ties at the tenth cosine included: search breaks ties by place, the
        # matrix by row id, and ids follow the order the chunking pool returned files in
        exact = {rows[i].id for i in np.flatnonzero(cosines >= tenth - 1e-6)}
        hits = search.search(project, query, limit=10, mode="semantic", group_by="chunk")
        with project.store.read() as reader:
            found = [reader.chunks_of_file(h.path, line=h.start_line)[0].id for h in hits]
        recalls.append(len(set(found) & exact) / 10)
    similar = find_similar(project, path="gen/mod_001.py", line=1, limit=5, min_score=-1.0)
    project.close()
    assert recalls == [1.0] * len(QUERIES)
    assert len(similar) == 5


def test_a_language_every_current_chunk_is_in_restricts_nothing_after_refreshes(
    tmp_path: Path, ollama_server: OllamaStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After refreshes the vector table holds dead rows; a scope that keeps every live one is the
    whole index: the lexical search runs unrestricted (no subset's statistics to build)."""
    from sai.store.duckdb.postings import LexicalTable

    root = write_tree(tmp_path / "py", many_functions(60, per_file=10))
    write_config(root, ollama_server.url)
    project = open_project(root)
    try:
        indexer.index(project)
        for n in range(3):
            target = root / "gen" / f"mod_00{n}.py"
            target.write_text(target.read_text() + f"\n\ndef added_{n}(value):\n    return value - {n}\n")
            indexer.refresh(project, [f"gen/mod_00{n}.py"])
        everything = search.search(project, "value times", limit=8, mode="lexical")
        monkeypatch.setattr(LexicalTable, "mask_of", lambda self, ids: pytest.fail("the scope restricted the search"))
        scoped = search.search(project, "value times", limit=8, mode="lexical", language="python")
    finally:
        project.close()
    assert [(h.path, h.start_line, h.score) for h in scoped] == [(h.path, h.start_line, h.score) for h in everything]
