"""Unexpanded C-family macros, blanked before a parse so the code around them parses as written.

The parsers see source before the preprocessor, so a macro standing for part of a declaration
misleads them: `NLOHMANN_JSON_NAMESPACE_BEGIN` on its own line before `namespace detail {` makes
the whole namespace a "function" named `namespace`, `FMT_EXPORT struct X {` a function `struct`,
`class FMT_API format_error {` a function `format_error`. Where the languages' syntax leaves an
upper-case identifier no role but a macro's, it is blanked (spaces of the same length, so every
line and column holds; the chunks keep the source as written):

- a line holding only such an identifier, or one call of it (`JSON_HEDLEY_NON_NULL(1)`, its
  arguments perhaps continued over lines), between declarations: the line of code before ends one
  (`;`, `{`, `}`, `public:`; directives and their continued lines aside, for one can stand inside
  an expression) and the next starts one (a declaration keyword, a directive, another such line;
  after a call, a constructor's name too). A lone identifier is no declaration or statement (it
  lacks its `;`); a `NULL` closing an argument list or the last enumerator follows a `,` and is
  kept, and so is a type on its own line before a function's name (`VALUE` before `rb_call(…)`),
  for a name is no declaration keyword;
- a line holding only such an identifier and a `:` (`JSON_PRIVATE_UNLESS_TESTED:`): in a class an
  access label's macro, in a function a label, the statement after it parsing alone;
- such identifiers at the start of a line, or after its specifiers (`static DOCTEST_CONSTEXPR
  bool`), before a declaration keyword (`FMT_EXPORT template`): a declaration does not start with
  a name and then a keyword (`const` aside: `T const x`); or before a type and a function's name
  (`CLI11_NODISCARD std::size_t count() const`, `FMT_CONSTEXPR basic_string_view(…)` aside: one
  name, a type of its own): a declaration has one type;
- such an identifier, or a call of it, between `class`/`struct`/`union` and the name when a base
  list or body follows (`class FMT_API format_error : …`, `class GTEST_API_ [[nodiscard]] X {`):
  a class key is followed by one name only (and attributes);
- such an identifier, or a call of it, after a parameter list (and `const`, `&`) before the body,
  a `;`, `->`, `override`, `final` or `noexcept` (`T &&forward(T &t) DOCTEST_NOEXCEPT {`): only
  those keywords stand there; lines starting with a statement keyword (`if (x) FAIL;`) keep theirs.

Apart from macros, the comments inside a `#define` continued over lines are blanked (the lines'
closing backslashes kept): the C and C++ grammars end the definition at its first comment and
parse its remaining lines as code, which cost doctest.h, whose warning macros carry comments, the
units of its first thousand lines.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Container

from sai.chunking.base import C_COMMENT, strip_c_comments

_MACRO = r"[A-Z][A-Z0-9_]+"
_KEYWORDS = ("namespace|class|struct|union|enum|template|typedef|extern|static|inline|using|typename"
             "|constexpr|consteval|constinit|virtual|friend|explicit|void|int|char|bool|float|double|auto")
_LONE_MACRO = re.compile(rf"(?m)^[ \t]*{_MACRO}(?P<call>\([^();{{}}]*\))?[ \t]*\r?$")  # a call may span lines
_LABEL_MACRO = re.compile(rf"[ \t]*{_MACRO}[ \t]*:[ \t]*")
_ENDS_DECLARATION = re.compile(r".*(?:[;{}]|\b(?:public|protected|private)\s*:)")
_STARTS_DECLARATION = re.compile(rf"\s*(?:#|@|}}|(?:{_KEYWORDS}|const|unsigned|signed|long|short)\b)")
_STARTS_FUNCTION = re.compile(r"\s*~?[A-Za-z_]\w*\s*\(")  # a constructor, a function of a macro's type
_TYPE_THEN_NAME = (r"(?:const[ \t]+)?[A-Za-z_][\w:]*(?:<[^()\n;]*>)?"  # a type, then a function's or variable's name
                   r"(?:[ \t]+[*&]*|[ \t]*[*&]+[ \t]*)~?[A-Za-z_]\w*[ \t]*[(=;{\[]")
_SPECIFIERS = r"(?:(?:static|inline|virtual|explicit|friend|constexpr|extern)[ \t]+)*"
_LEADING_MACROS = re.compile(rf"(?m)^[ \t]*{_SPECIFIERS}(?P<macro>(?:{_MACRO}[ \t]+)+)"
                             rf"(?=(?:{_KEYWORDS})\b|{_TYPE_THEN_NAME})")
_HAS_INCLUDE = re.compile(r"(\b\w*has_include\w*[ \t]*\([ \t]*)<([^<>()\n]*)>")  # in a directive: a header's name
_CONTROL = re.compile(r"\s*(?:(?:if|while|for|switch|return|else|do|case|catch)\b|#)")
# a function's name and parameter list (or the `)` closing one begun above) with no `=` before it
# (a cast, `x = (int) MAX;`, is an expression), then the macro before the body, `;` or a specifier
_AFTER_PARAMETERS = re.compile(rf"^(?:[^=;()]*\b[A-Za-z_]\w*[ \t]*\((?:[^()]|\([^()]*\))*|[ \t]*)\)[ \t]*"
                               rf"(?:const[ \t]*)?(?P<macro>{_MACRO}(?:\([^()\n]*\))?)"
                               r"(?=[ \t]*(?:[{;]|->|override\b|final\b|noexcept\b|\r?$))")
_CLASS_HEAD_MACRO = re.compile(rf"\b(?:class|struct|union)\s+(?P<macro>{_MACRO}(?:\([^()\n]*\))?)\s+"
                               r"(?=(?:\[\[[^\]\n]*\]\]\s*)*[A-Za-z_]\w*\s*(?:final\b|:(?!:)|\{))")
_CONTINUED_DEFINE = re.compile(r"(?m)^[ \t]*#[ \t]*define\b(?:[^\n]*\\\r?\n)+[^\n]*")
_COMMENT_CHARACTER = re.compile(r"[^\n\\]|\\(?!\r?\n|\Z)")  # a line's closing `\` stays


def blank_macros(source: str) -> tuple[str, frozenset[int]]:
    """The source with macros where the syntax admits none blanked (see the module's docstring),
    and the 1-based numbers of the lines blanked whole (an attribute line belongs to the unit below)."""
    source = _CONTINUED_DEFINE.sub(_blank_define_comments, source)
    source = _CLASS_HEAD_MACRO.sub(_blank_macro_group, _LEADING_MACROS.sub(_blank_macro_group, source))
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if ")" in line and not _CONTROL.match(line):
            lines[i] = _AFTER_PARAMETERS.sub(_blank_macro_group, line)
        if "has_include" in line and line.lstrip().startswith("#"):
            lines[i] = _HAS_INCLUDE.sub(r'\1"\2"', lines[i])
    stripped = strip_c_comments("\n".join(lines))
    code = stripped.split("\n")  # the same lines, comments blanked
    for i, line in enumerate(code):
        if _LABEL_MACRO.fullmatch(line.rstrip("\r")):
            _blank_line(lines, code, i)
    starts = list(itertools.accumulate((len(line) + 1 for line in code), initial=0))
    lone: dict[int, tuple[int, bool]] = {}  # first line -> (last line, a call)
    for m in _LONE_MACRO.finditer(stripped):
        first = bisect.bisect_right(starts, m.start()) - 1
        lone[first] = (first + m.group(0).strip("\n").count("\n"), bool(m.group("call")))
    directives = _directive_lines(code)
    blanked = set()
    for first, (last, call) in sorted(lone.items()):
        if first not in directives and _after_declaration(code, first, directives) \
                and _before_declaration(code, last, lone, call=call):
            for i in range(first, last + 1):
                _blank_line(lines, code, i)
                blanked.add(i + 1)
    return "\n".join(lines), frozenset(blanked)


def _blank_line(lines: list[str], code: list[str], index: int) -> None:
    width = len(lines[index].rstrip("\r"))
    lines[index] = code[index] = " " * width + lines[index][width:]


def _directive_lines(code: list[str]) -> set[int]:
    """The indexes of the lines of preprocessor directives, their continued lines included."""
    found, continued = set(), False
    for i, line in enumerate(code):
        line = line.rstrip("\r")
        if continued or line.lstrip().startswith("#"):
            found.add(i)
            continued = line.endswith("\\")
        else:
            continued = False
    return found


def _after_declaration(code: list[str], index: int, directives: set[int]) -> bool:
    """Whether the last line of code before `index` (directives and blank lines aside) ends a
    declaration, or there is none."""
    for i in range(index - 1, -1, -1):
        stripped = code[i].strip()
        if stripped and i not in directives:
            return bool(_ENDS_DECLARATION.fullmatch(stripped))
    return True


def _before_declaration(code: list[str], index: int, lone: Container[int], *, call: bool) -> bool:
    """Whether the next line of code after `index` starts a declaration (or there is none)."""
    for following in range(index + 1, len(code)):
        line = code[following]
        if line.strip():
            starts = _STARTS_DECLARATION.match(line) or (call and _STARTS_FUNCTION.match(line))
            return following in lone or bool(starts)
    return True


def _blank_define_comments(match: re.Match[str]) -> str:
    """A continued `#define` with its comments turned to spaces, their lines' closing `\\` kept."""
    return C_COMMENT.sub(lambda m: m.group(0) if m.group("string") else _COMMENT_CHARACTER.sub(" ", m.group(0)),
                         match.group(0))


def _blank_macro_group(match: re.Match[str]) -> str:
    """The match with its `macro` group turned to spaces."""
    start, end = match.start("macro") - match.start(), match.end("macro") - match.start()
    whole = match.group(0)
    return whole[:start] + " " * (end - start) + whole[end:]
