"""Unknown options named as such, with the close one suggested.

argparse reads `sai --qurey x` as the unknown `--qurey` and a subcommand `x`, and blames the
value (`invalid choice: 'x'`); the options are checked before it parses, against every option
of `sai` and its commands.
"""

from __future__ import annotations

import argparse
import difflib


def check_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Exit with a usage error (2) naming the first `--option` no parser knows."""
    known = sorted(_options(parser))
    for arg in argv:
        if arg == "--":
            return
        if not arg.startswith("--") or arg == "--":
            continue
        name = arg.split("=", 1)[0]
        if any(option.startswith(name) for option in known):  # argparse takes unique prefixes
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else "; see sai --help"
        parser.error(f"unknown option {name}{hint}")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    for action in parser._actions:  # argparse keeps no public list of a parser's options
        found.update(option for option in action.option_strings if option.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _options(sub)
    return found


def count(text: str) -> int:
    """An argparse type: a whole number of at least 1 (`--limit 0` is refused, not read as 1)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small; give 1 or more")
    return value
