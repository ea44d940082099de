"""A first build's first stage sends no text to the model: the chunks are stored, searchable and
counted before any embedding, and the second stage then embeds each distinct text once (the static
table, which embeds in the CPU stage itself, is tested in tests/embedders/test_static.py)."""

from __future__ import annotations

from pathlib import Path

from fixtures_tree import many_functions, write_config, write_tree
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.indexing.indexer import index
from sai.project import Project


def test_a_first_build_stores_every_chunk_before_the_model_sees_a_text_then_embeds_each_once(
        tmp_path: Path, ollama_server: OllamaStandIn) -> None:
    root = write_tree(tmp_path / "p", many_functions(600, per_file=20))
    write_config(root, ollama_server.url)
    project = Project(load_config(flags={}, env={}, cwd=root))
    seen: list[tuple[int, int]] = []
    try:
        report = index(project, on_searchable=lambda pending: seen.append((pending, ollama_server.requests)))
        with project.store.read() as reader:
            complete, waiting = reader.vectors_complete(), reader.pending()
    finally:
        project.close()
    assert seen == [(600, 0)]
    assert report.embedded == ollama_server.inputs_embedded == len(set(ollama_server.received_inputs)) == 600
    assert complete and waiting == []
