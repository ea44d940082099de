"""The closed choices declared in sai/models.py reach every place that lists them."""

from __future__ import annotations

import argparse

from pydantic import TypeAdapter

from sai.chunking import CHUNKER_CLASSES, make_chunker
from sai.cli.commands import build_parser
from sai.embedders import EMBEDDER_FACTORIES
from sai.mcp import schemas as mcp_schemas
from sai.models import BACKENDS, CHUNKERS, EMBEDDERS, METRICS, MODES, PREFIX_STYLES
from sai.settings import SCHEMA


def _cli_choices(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """option -> choices for `sai` and every subcommand."""
    found: dict[str, tuple[str, ...]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _cli_choices(sub)
        elif action.choices is not None:
            found |= {opt: tuple(action.choices) for opt in action.option_strings}
    return found


def _enum(annotated: object) -> list[str]:
    schema = TypeAdapter(annotated).json_schema()
    options = schema.get("anyOf", [schema])
    return next(option["enum"] for option in options if "enum" in option)


def test_cli_choices_are_the_declared_choices() -> None:
    choices = _cli_choices(build_parser())
    assert choices["--mode"] == MODES
    assert choices["--metric"] == METRICS
    assert choices["--chunker"] == CHUNKERS
    assert choices["--embedder"] == EMBEDDERS


def test_mcp_enums_are_the_declared_choices() -> None:
    assert _enum(mcp_schemas.Mode) == list(MODES)
    assert _enum(mcp_schemas.Metric) == list(METRICS)
    assert _enum(mcp_schemas.Backend) == list(BACKENDS)
    assert _enum(mcp_schemas.EmbedderName) == [*EMBEDDERS, *mcp_schemas.EMBEDDER_ALIASES]


def test_config_validates_against_the_declared_choices() -> None:
    assert SCHEMA["backend"].choices == BACKENDS
    assert SCHEMA["embedder"].choices == EMBEDDERS
    assert SCHEMA["chunker"].choices == CHUNKERS
    assert SCHEMA["similarity.duplicate_metric"].choices == METRICS
    assert SCHEMA["prefix_style"].choices == ("auto", *PREFIX_STYLES)


def test_every_declared_chunker_and_embedder_has_an_implementation() -> None:
    assert tuple(CHUNKER_CLASSES) == CHUNKERS
    assert tuple(EMBEDDER_FACTORIES) == EMBEDDERS
    for name in CHUNKERS:  # each builds, and says its name
        assert make_chunker(name, max_chunk_chars=500).name == name
