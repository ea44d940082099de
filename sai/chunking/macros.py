"""Unexpanded C-family macros, blanked before a parse so the code around them parses as written.

The parsers see source before the preprocessor, so a macro standing for part of a declaration
misleads them: `NLOHMANN_JSON_NAMESPACE_BEGIN` on its own line before `namespace detail {` makes
the whole namespace a "function" named `namespace`, `FMT_EXPORT struct X {` a function `struct`,
`class FMT_API format_error {` a function `format_error`. Where the languages' syntax leaves an
upper-case identifier no role but a macro's, it is blanked (spaces of the same length, so every
line and column holds; the chunks keep the source as written):

- a line holding only such an identifier, or one call of it (`JSON_HEDLEY_NON_NULL(1)`), between
  declarations: the line of code before ends one (`;`, `{`, `}`, `public:`; directives aside, for
  one can stand inside an expression) and the next starts one (a declaration keyword, a
  directive, another such line; after a call, a constructor's name too). A lone identifier is no
  declaration or statement (it lacks its `;`); a `NULL` closing an argument list or the last
  enumerator follows a `,` and is kept, and so is a type on its own line before a function's
  name (`VALUE` before `rb_call(…)`), for a name is no declaration keyword;
- a line holding only such an identifier and a `:` (`JSON_PRIVATE_UNLESS_TESTED:`): in a class an
  access label's macro, in a function a label, the statement after it parsing alone;
- such identifiers at the start of a line before a declaration keyword (`FMT_EXPORT template`):
  a declaration does not start with a name and then a keyword (`const` aside: `T const x`); or
  before a type and a function's name (`CLI11_NODISCARD std::size_t count() const`, `FMT_CONSTEXPR
  basic_string_view(…)` aside: one name, a type of its own): a declaration has one type;
- such an identifier, or a call of it, between `class`/`struct`/`union` and the name when a base
  list or body follows (`class FMT_API format_error : …`): a class key is followed by one name only.
"""

from __future__ import annotations

import re

from sai.chunking.base import strip_c_comments

_MACRO = r"[A-Z][A-Z0-9_]+"
_KEYWORDS = ("namespace|class|struct|union|enum|template|typedef|extern|static|inline|using|typename"
             "|constexpr|consteval|constinit|virtual|friend|explicit|void|int|char|bool|float|double|auto")
_LONE_MACRO = re.compile(rf"[ \t]*{_MACRO}(?P<call>\([^()\n]*\))?[ \t]*")
_LABEL_MACRO = re.compile(rf"[ \t]*{_MACRO}[ \t]*:[ \t]*")
_ENDS_DECLARATION = re.compile(r".*(?:[;{}]|\b(?:public|protected|private)\s*:)")
_STARTS_DECLARATION = re.compile(rf"\s*(?:#|@|}}|(?:{_KEYWORDS}|const|unsigned|signed|long|short)\b)")
_STARTS_FUNCTION = re.compile(r"\s*~?[A-Za-z_]\w*\s*\(")  # a constructor, a function of a macro's type
_TYPE_THEN_FUNCTION = (r"(?:const[ \t]+)?[A-Za-z_][\w:]*(?:<[^()\n;]*>)?"  # a type, then a function's name
                       r"(?:[ \t]+[*&]*|[ \t]*[*&]+[ \t]*)~?[A-Za-z_]\w*[ \t]*\(")
_LEADING_MACROS = re.compile(rf"(?m)^[ \t]*(?P<macro>(?:{_MACRO}[ \t]+)+)(?=(?:{_KEYWORDS})\b|{_TYPE_THEN_FUNCTION})")
_CLASS_HEAD_MACRO = re.compile(rf"\b(?:class|struct|union)\s+(?P<macro>{_MACRO}(?:\([^()\n]*\))?)\s+"
                               r"(?=[A-Za-z_]\w*\s*(?:final\b|:(?!:)|\{))")


def blank_macros(source: str) -> tuple[str, frozenset[int]]:
    """The source with macros where the syntax admits none blanked (see the module's docstring),
    and the 1-based numbers of the lines blanked whole (an attribute line belongs to the unit below)."""
    source = _CLASS_HEAD_MACRO.sub(_blank_macro_group, _LEADING_MACROS.sub(_blank_macro_group, source))
    lines = source.split("\n")
    code = strip_c_comments(source).split("\n")  # the same lines, comments blanked
    for i, line in enumerate(code):
        if _LABEL_MACRO.fullmatch(line.rstrip("\r")):
            _blank_line(lines, code, i)
    lone = {i: bool(m.group("call")) for i, line in enumerate(code)
            if (m := _LONE_MACRO.fullmatch(line.rstrip("\r")))}
    blanked = set()
    for i, call in sorted(lone.items()):
        if _after_declaration(code, i) and _before_declaration(code, i, lone, call=call):
            _blank_line(lines, code, i)
            blanked.add(i + 1)
    return "\n".join(lines), frozenset(blanked)


def _blank_line(lines: list[str], code: list[str], index: int) -> None:
    width = len(lines[index].rstrip("\r"))
    lines[index] = code[index] = " " * width + lines[index][width:]


def _after_declaration(code: list[str], index: int) -> bool:
    """Whether the last line of code before `index` (directives and blank lines aside) ends a
    declaration, or there is none."""
    for line in reversed(code[:index]):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return bool(_ENDS_DECLARATION.fullmatch(stripped))
    return True


def _before_declaration(code: list[str], index: int, lone: dict[int, bool], *, call: bool) -> bool:
    """Whether the next line of code after `index` starts a declaration (or there is none)."""
    for following in range(index + 1, len(code)):
        line = code[following]
        if line.strip():
            starts = _STARTS_DECLARATION.match(line) or (call and _STARTS_FUNCTION.match(line))
            return following in lone or bool(starts)
    return True


def _blank_macro_group(match: re.Match[str]) -> str:
    """The match with its `macro` group turned to spaces."""
    start, end = match.start("macro") - match.start(), match.end("macro") - match.start()
    whole = match.group(0)
    return whole[:start] + " " * (end - start) + whole[end:]
