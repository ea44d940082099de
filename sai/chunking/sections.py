"""Documents cut by headings, and single-file components read through their script blocks.

Markdown and reStructuredText have no units of code: their units are *sections*, each from its
heading to the next heading of the same or a higher level, named by its heading path
(`Configuration.Cache`; a '.' inside a title becomes a space, since '.' separates scopes in
symbols). A section nests the sections under it as a class nests its methods, so each line
belongs to its innermost section and the text before the first heading to the module.

Vue and Svelte components hold their code in `<script>` blocks: the rest of the file (template,
style) is blanked, newlines kept, and what remains parses as JavaScript or TypeScript.
"""

from __future__ import annotations

import re

DOCUMENTS = frozenset({"markdown", "rst"})
COMPONENTS = frozenset({"vue", "svelte"})

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_RST_ADORNMENT = re.compile(r"([=\-`:'\"~^_*+#<>.])\1{2,}[ \t]*$")
_SCRIPT = re.compile(r"(<script\b(?P<attrs>[^>]*)>)(?P<body>.*?)</script\s*>", re.DOTALL | re.IGNORECASE)
_TYPESCRIPT = re.compile(r"""\blang\s*=\s*["']?(?P<lang>tsx|ts|typescript)\b""", re.IGNORECASE)

Span = tuple[int, int, str]  # a section's first and last line (1-based, inclusive) and symbol


def sections(lines: list[str], language: str) -> list[Span]:
    """The sections of a document in pre-order (an enclosing section before those inside it)."""
    headings = _rst_headings(lines) if language == "rst" else _markdown_headings(lines)
    spans: list[Span] = []
    path: list[tuple[int, str]] = []  # (level, title) of the headings enclosing the current one
    for index, (line, level, title) in enumerate(headings):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title.replace(".", " ").strip() or "section"))
        end = next((at - 1 for at, deeper, _ in headings[index + 1:] if deeper <= level), len(lines))
        spans.append((line, end, ".".join(t for _, t in path)))
    return spans


def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line, level, title) of ATX (`## Title`) and setext (underlined) headings outside code fences."""
    found: list[tuple[int, int, str]] = []
    fence = ""
    start = _front_matter_end(lines)
    for number in range(start + 1, len(lines) + 1):
        line = lines[number - 1]
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
        elif atx := _ATX.match(line):
            found.append((number, len(atx.group(1)), atx.group(2) or ""))
        elif (number > start + 1 and (setext := _SETEXT.match(line)) and lines[number - 2].strip()
              and not (found and found[-1][0] == number - 1) and not _FENCE.match(lines[number - 2])):
            found.append((number - 1, 1 if setext.group(1)[0] == "=" else 2, lines[number - 2].strip()))
    return found


def _front_matter_end(lines: list[str]) -> int:
    """The line closing a YAML front matter block (`---` … `---` at the top), or 0."""
    if not lines or lines[0].strip() != "---":
        return 0
    return next((n for n in range(2, len(lines) + 1) if lines[n - 1].strip() in ("---", "...")), 0)


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line, level, title) of reStructuredText titles: a line underlined (and maybe overlined)
    by a row of one punctuation character at least as long; levels go by first appearance."""
    found: list[tuple[int, int, str]] = []
    styles: list[tuple[str, bool]] = []
    number = 1
    while number < len(lines):
        title, under = lines[number - 1], lines[number]
        over = number >= 2 and _is_adornment(lines[number - 2], title)
        if title.strip() and (over or not title.startswith(" ")) and _is_adornment(under, title) \
                and not _RST_ADORNMENT.match(title):
            style = (under.strip()[0], over)
            if style not in styles:
                styles.append(style)
            found.append((number - 1 if over else number, styles.index(style) + 1, title.strip()))
            number += 2
            continue
        number += 1
    return found


def _is_adornment(line: str, title: str) -> bool:
    return bool(_RST_ADORNMENT.match(line)) and len(line.rstrip()) >= len(title.rstrip())


def script_view(text: str) -> tuple[str, str] | None:
    """A component's text with all but its `<script>` blocks blanked (every newline kept), and
    the grammar to parse it with; None when it has no script block."""
    blocks = list(_SCRIPT.finditer(text))
    if not blocks:
        return None
    kept = [" " if ch != "\n" else ch for ch in text]
    grammar = "javascript"
    for block in blocks:
        start, end = block.span("body")
        kept[start:end] = text[start:end]
        typed = _TYPESCRIPT.search(block.group("attrs"))
        if typed:
            grammar = "tsx" if typed.group("lang").lower() == "tsx" else "typescript"
    return "".join(kept), grammar
