"""Globs as the original tool's Rust `globset` reads them (its defaults), matched in linear time.

Syntax: `*` is any run of characters and `?` any one character, `/` included; `**` as a whole
path segment spans directories (`a/**/b` matches `a/b` and `a/x/y/b`, `**/x` matches `x` at any
depth, `dir/**` everything under `dir`), elsewhere it is `*`; `{a,b}` alternatives (nested ones
too; an empty alternative is dropped); `[ab]`, `[a-z]`, `[!a]` and `[^a]` classes, in which `]`
first and `-` first or last are literal; `\\` escapes the next character. An unclosed `[` or
`{`, a `}` with no `{`, a range running backwards or a trailing `\\` is a GlobError carrying
globset's reason. On top of globset, `compile_glob` keeps SAI's conveniences: a leading `/` is
ignored, a trailing `/` means everything under that directory, and a pattern without `/` also
matches the key's last segment (the file name).

Why a parser here and not a library: wcmatch, the maintained glob library, reads `**` as "zero
or more directories" only in its path mode, where `*` stops at `/` (its fnmatch mode lets `*`
cross `/` but has no `**`), and like every pure-Python matcher it compiles to `re`, which
backtracks: on `re`, the regex of `**?` x 11 + `**X` did not answer one 100-character key in two
minutes. So the parser follows globset's token rules, and a regex that could backtrack badly (a
brace group, or more than two stars, whose cost grows as a power of the key's length) runs on
RE2 (google-re2), an automaton like the Rust regex crate behind globset: linear in the key. A
simpler regex is bounded by the square of the key's length and stays on `re`, which is about ten
times cheaper per call; both engines read the same regex and give the same answers.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable

import re2

from sai.errors import GlobError

UNCLOSED_CLASS = "unclosed character class; missing ']'"
UNOPENED_GROUP = "unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)"
UNCLOSED_GROUP = "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
DANGLING_ESCAPE = "dangling '\\'"
TOO_LARGE = "too large to match; use a shorter glob"

_STAR = ".*"
_PREFIX = "(?:/?|.*/)"  # a leading `**/`: nothing, or any directories
_SUFFIX = "/.*"  # a trailing `/**`: anything below
_MIDDLE = "(?:/|/.*/)"  # `/**/`: one separator, or any directories between two
_RECURSIVE = (_PREFIX, _SUFFIX)
_PUNCTUATION = frozenset(string.punctuation) - {"/"}
_RE_MAX_STARS = 2


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.dot_nl = True
    options.log_errors = False  # a failed compile is reported as a GlobError, not on stderr
    return options


_RE2_OPTIONS = _re2_options()


def escape(char: str) -> str:
    """A character as a regex literal both engines read, in or outside a class."""
    return "\\" + char if char in _PUNCTUATION else char


class _Parser:
    """globset's parser (crates/globset/src/glob.rs), writing the regex as it reads the glob."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.pos = 0
        self.branches: list[list[str]] = [[]]  # the last one receives the tokens being read
        self.groups: list[int] = []  # where each open `{` group's branches start
        self.grouped = False

    def parse(self) -> str:
        while self.pos < len(self.glob):
            char = self.glob[self.pos]
            self.pos += 1
            if char == "?":
                self._push(".")
            elif char == "*":
                self._star()
            elif char == "[":
                self._class()
            elif char == "{":
                self.groups.append(len(self.branches))
                self.branches.append([])
            elif char == "}":
                self._close_group()
            elif char == "," and self.groups:
                self.branches.append([])
            elif char == "\\":
                self._escaped()
            else:
                self._push(escape(char))
        if self.groups:
            raise GlobError(self.glob, UNCLOSED_GROUP)
        tokens = self.branches[0]
        return _STAR if tokens == [_PREFIX] else "".join(tokens)

    def _peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def _push(self, token: str) -> None:
        tokens = self.branches[-1]
        if not (token == _STAR and tokens and tokens[-1] == _STAR):  # `.*.*` is `.*`
            tokens.append(token)

    def _escaped(self) -> None:
        char = self._peek()
        if char is None:
            raise GlobError(self.glob, DANGLING_ESCAPE)
        self.pos += 1
        self._push(escape(char))

    def _close_group(self) -> None:
        if not self.groups:
            raise GlobError(self.glob, UNOPENED_GROUP)
        start = self.groups.pop()
        parts = [part for part in ("".join(branch) for branch in self.branches[start:]) if part]
        del self.branches[start:]
        self.grouped = True
        if parts:
            self._push(f"(?:{'|'.join(parts)})")

    def _star(self) -> None:
        prev = self.glob[self.pos - 2] if self.pos >= 2 else None
        if self._peek() != "*":
            return self._push(_STAR)
        self.pos += 1
        if not self.branches[-1]:  # `**` opening the glob or an alternative
            if self._peek() not in (None, "/"):
                return self._push(_STAR)
            self.pos += self._peek() == "/"
            return self._push(_PREFIX)
        if prev != "/" and (len(self.branches) <= 1 or prev not in (",", "{")):
            return self._push(_STAR)
        following = self._peek()
        if following == "/":
            self.pos += 1
        elif following is not None and not (following in ",}" and len(self.branches) >= 2):
            return self._push(_STAR)
        last = self.branches[-1].pop()  # the `/` before `**`, which the token includes
        suffix = following != "/"
        self._push(last if last in _RECURSIVE else _SUFFIX if suffix else _MIDDLE)

    def _class(self) -> None:
        negated = self._peek() in ("!", "^")
        self.pos += negated
        ranges: list[list[str]] = []
        first, in_range = True, False
        while True:
            if self.pos >= len(self.glob):
                raise GlobError(self.glob, UNCLOSED_CLASS)
            char = self.glob[self.pos]
            self.pos += 1
            if char == "]" and not first:
                break
            if char == "-" and not first and not in_range:
                in_range = True
            elif in_range:
                self._extend(ranges[-1], char)
                in_range = False
            else:
                ranges.append([char, char])
            first = False
        if in_range:
            ranges.append(["-", "-"])
        body = "".join(escape(a) if a == b else f"{escape(a)}-{escape(b)}" for a, b in ranges)
        self._push(f"[{'^' if negated else ''}{body}]")

    def _extend(self, last: list[str], end: str) -> None:
        if end < last[0]:
            raise GlobError(self.glob, f"invalid range; '{last[0]}' > '{end}'")
        last[1] = end


def translate(glob: str) -> str:
    """The regex (without anchors) matching exactly what `glob` matches; GlobError if invalid."""
    return _Parser(glob).parse()


def backtracks(source: str) -> bool:
    """Whether `re` could take more than (key length) ** 2 steps on this regex made from a glob.

    More than two unbounded repeats: every `*` and `+` counts, an escaped one too (erring on
    the linear side costs only speed).
    """
    return source.count("*") + source.count("+") > _RE_MAX_STARS


def fullmatcher(source: str, *, linear: bool) -> Callable[[str], object]:
    """`fullmatch` of a regex: RE2's when `linear`, else `re`'s; both read `.` as any character.

    Raises re.error or re2.error for a regex the engine refuses.
    """
    if linear:
        return re2.compile(source, _RE2_OPTIONS).fullmatch
    return re.compile(source, re.DOTALL).fullmatch


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A predicate on keys for a glob with SAI's conveniences; raises GlobError if invalid."""
    body = pattern.lstrip("/")
    if pattern.endswith("/"):
        body += "**"
    try:
        parser = _Parser(body)
        regex = parser.parse()
        fullmatch = fullmatcher(regex, linear=parser.grouped or backtracks(regex))
    except GlobError as exc:
        raise GlobError(pattern, exc.reason) from None
    except re2.error as exc:
        raise GlobError(pattern, TOO_LARGE) from exc
    if "/" in pattern:
        return lambda key: fullmatch(key) is not None
    return lambda key: fullmatch(key) is not None or fullmatch(key.rpartition("/")[2]) is not None


def check_glob(pattern: str | None) -> None:
    """Raise GlobError if `pattern` is not a valid glob (None or '' means no glob).

    Config validation calls it; a question's `path_glob` is compiled by the core before the
    index is read (sai/query/hits.py, sai/duplicates/clusters.py), so a bad one fails first.
    """
    if pattern:
        compile_glob(pattern)
