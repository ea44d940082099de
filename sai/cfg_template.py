"""The commented sai-cfg.yml that `sai init` writes (the same text as the repo's sai-cfg.yml),
rendered from the settings table (sai/settings.py SETTINGS): every key at its default, or
commented out with an example when its default is resolved at load time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sai.settings import SETTINGS, Setting

HEADER = """\
# sai-cfg.yml — configuration of SAI (semantic code search). Every key is optional: the values
# below are the defaults. Precedence: command-line flag > environment > this file > default.
# Reference: docs/configuration.md
"""
COMMENT_COLUMN = 27  # where a top-level key's comment starts (two more inside a section)
LINE_WIDTH = 120  # a longer comment wraps onto lines aligned at its column


def yaml_value(value: Any) -> str:
    """A default as the template writes it: `true`, `30` (not 30.0), `[]`, `[py, js]`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)


def _lines(setting: Setting, indent: str) -> Iterator[str]:
    name = setting.key.split(".")[-1]
    if setting.default is None:
        entry = f"{indent}# {name}: {setting.example}"
    else:
        entry = f"{indent}{name}: {yaml_value(setting.default)}"
    if not setting.comment:
        yield entry
        return
    column = max(COMMENT_COLUMN + len(indent), len(entry) + 2)
    words, line = setting.comment.split(), entry.ljust(column) + "#"
    for word in words:
        if len(line) + 1 + len(word) > LINE_WIDTH and not line.endswith("#"):
            yield line
            line = " " * column + "#"
        line += " " + word
    yield line


def render() -> str:
    """The template text: top-level keys, then one block per section (`duckdb:`, ...)."""
    out = [HEADER]
    top = [s for s in SETTINGS if "." not in s.key]
    out += [line for s in top for line in _lines(s, "")]
    sections: dict[str, list[Setting]] = {}
    for setting in SETTINGS:
        if "." in setting.key:
            sections.setdefault(setting.key.split(".")[0], []).append(setting)
    for name, members in sections.items():
        out += ["", f"{name}:"] + [line for s in members for line in _lines(s, "  ")]
    return "\n".join(out) + "\n"


TEMPLATE = render()
