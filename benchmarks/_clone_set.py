"""A semantic-clone set of our own: same-task solutions by different authors, and rewrites made by program.

What semantic_clones.py indexes and scores (never the held-out clone benchmarks):

- **Collected pairs**: LeetCode problems solved in Java by three authors who never saw each other's
  code (SOURCES, each a fixed commit of a public repository; `--mirror`/<owner>+<name>/repo, a
  local copy made by the search tool's fetch, else cloned from GitHub). A problem is kept when at
  least two authors solve it with a `class Solution` (design problems, whose class is the answer's
  own name, are left out). Every file loses its comments and its `package` line: the authors'
  tags (`#Hash_Table #Two_Pointers`) would find the partner by prose.
- **Rewrites**: for each problem, one author's file rewritten by program: every method renamed
  with a meaningless name (calls follow), every name a method owns (parameters, locals) renamed
  the same way, the first `for (init; cond; step)` loop without `continue` turned into a `while`
  loop, and the first pair of adjacent independent declarations swapped (benchmarks/_clones.py).
  The rewrite shares no name of its own with its original: only types, members, keywords and
  literals.
- **Conditions**: `written` (the files as their authors named them: partners share the problem's
  method name, `twoSum`) and `common` (every `Solution` method the problem declares renamed `solve`
  in every file, calls included: a name shared by every unrelated chunk of the set, as `main`,
  `run` or `actionPerformed` are in real code).
- **Split**: by a hash of the problem's slug, half for tuning and half measured only.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from _clones import functions_of, independent_pair, name_mapping, rename_edits
from tree_sitter import Node

from sai.chunking.parsers import parser_for

COMMON_NAME = "solve"


@dataclass(frozen=True)
class Source:
    """One author's solutions: a repository at a commit, and how a path names its problem."""

    github: str
    commit: str
    author: str
    pattern: str  # a regex whose group `slug` (spaces or underscores for dashes) is the problem

    def slug(self, path: str) -> str | None:
        found = re.fullmatch(self.pattern, path)
        if found is None:
            return None
        words = re.sub(r"[^a-z0-9]+", "-", found.group("slug").lower()).strip("-")
        return words or None


SOURCES = (
    Source("varunu28/LeetCode-Java-Solutions", "ea28d2879262a4610de2c5587c1d2fa430e5c1ff", "varunu28",
           r"(?:Easy|Medium|Hard)/(?P<slug>[^/]+)\.java"),
    Source("charles-wangkai/leetcode", "1fab9c3404c0ed5f02f67bd96123f3223d45ba81", "wangkai",
           r"(?P<slug>[^/]+)/Solution\.java"),
    Source("javadev/LeetCode-in-Java", "9bd2f37ab3505b7231018aa05bc867c749c2a032", "javadev",
           r"src/main/java/g\d+_\d+/s\d+_(?P<slug>[^/]+)/Solution\.java"),
)
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*[\s\S]*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')


@dataclass(frozen=True)
class Solution:
    """One file of the set: a problem's solution by an author (or a rewrite, author `rewrite`)."""

    slug: str
    author: str
    text: str

    @property
    def key(self) -> str:
        return f"{self.author}/{self.slug}.java"


def split_of(slug: str) -> str:
    """`tuning` or `measured`, by a hash of the problem's slug."""
    return "tuning" if hashlib.sha1(slug.encode()).digest()[0] % 2 == 0 else "measured"


def checkout(source: Source, mirror: Path | None, cache: Path) -> Path:
    """A work tree of the source at its commit under cache/src."""
    src = cache / "src" / source.github.replace("/", "+")
    if not (src / ".git").exists():
        origin = (str(mirror / source.github.replace("/", "+") / "repo") if mirror is not None
                  else f"https://github.com/{source.github}.git")
        subprocess.run(["git", "clone", "-q", "--no-checkout", origin, str(src)], check=True)
    subprocess.run(["git", "-C", str(src), "checkout", "-q", "-f", source.commit], check=True)
    return src


def collect(mirror: Path | None, cache: Path, *, problems: int) -> list[Solution]:
    """The collected solutions of up to `problems` problems solved by two authors or more."""
    by_slug: dict[str, dict[str, str]] = {}
    for source in SOURCES:
        root = checkout(source, mirror, cache)
        for path in sorted(p.relative_to(root).as_posix() for p in root.rglob("*.java")):
            slug = source.slug(path)
            if slug is None:
                continue
            text = clean((root / path).read_text(encoding="utf-8", errors="replace"))
            if re.search(r"\bclass\s+Solution\b", text) and solution_methods(text):
                by_slug.setdefault(slug, {})[source.author] = text
    shared = sorted((s for s, found in by_slug.items() if len(found) >= 2),
                    key=lambda s: hashlib.sha1(s.encode()).hexdigest())[:problems]
    return [Solution(slug, author, text) for slug in sorted(shared) for author, text in sorted(by_slug[slug].items())]


def clean(text: str) -> str:
    """The file without comments, `package` line and runs of blank lines."""
    text = _COMMENT_OR_STRING.sub(lambda m: m.group() if m.group()[0] in "\"'" else "", text)
    text = re.sub(r"^\s*package\s+[\w.]+\s*;\s*$", "", text, flags=re.MULTILINE)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def solution_methods(text: str) -> list[str]:
    """The names of the public methods of the file's `Solution` class, in order."""
    tree = parser_for("java").parse(text.encode())
    for node in _walk(tree.root_node):
        name = node.child_by_field_name("name")
        if node.type == "class_declaration" and name is not None and name.text == b"Solution":
            body = node.child_by_field_name("body")
            methods = [c for c in (body.named_children if body is not None else []) if c.type == "method_declaration"]
            return [m.child_by_field_name("name").text.decode() for m in methods  # type: ignore[union-attr]
                    if b"public" in (m.named_children[0].text or b"") and m.named_children[0].type == "modifiers"]
    return []


def common_named(solution: Solution) -> Solution:
    """The solution with each public `Solution` method renamed `solve` (`solve2`, ...), calls too."""
    text = solution.text
    for number, name in enumerate(dict.fromkeys(solution_methods(text))):
        text = re.sub(rf"\b{re.escape(name)}\b(?=\s*\()", COMMON_NAME + (str(number + 1) if number else ""), text)
    return Solution(solution.slug, solution.author, text)


def rewrite(solution: Solution) -> Solution:
    """The solution rewritten by program (the module doc): no name of its own left. Half the
    problems (by slug) get meaningless names (`k30`), half plausible words of another vocabulary."""
    flavour = "opaque" if hashlib.sha1(f"{solution.slug}/names".encode()).digest()[0] % 2 else "vocabulary"
    text = solution.text
    methods = dict.fromkeys(f.name for f in functions_of(text.encode(), "java") if f.name)
    for number, name in enumerate(methods):
        text = re.sub(rf"\b{re.escape(name)}\b(?=\s*\()", f"m{number}x_", text)
    for _ in range(len(functions_of(text.encode(), "java"))):  # one function per pass: offsets move
        text = _renamed_locals(text, solution.slug, flavour)
    text = re.sub(r"\b([A-Za-z]\w*?)_\b", r"\1", text)  # the marks of names already renamed
    return Solution(solution.slug, "rewrite", _while_loop(text))


def _renamed_locals(text: str, slug: str, flavour: str) -> str:
    """The first function whose owned names are not renamed yet (renamed ones end in `_`), with
    them renamed and one pair of independent declarations swapped."""
    source = text.encode()
    for fid, fn in enumerate(functions_of(source, "java")):
        owned = [n for n in fn.owned if not n.endswith("_")]
        if not owned:
            continue
        fn.owned = owned
        mapping = name_mapping(fn, flavour=flavour, fid=fid + len(slug), thesaurus={}, reserved=frozenset())
        mapping = {old: new + "_" for old, new in mapping.items() if old != fn.name}
        edits = rename_edits(fn, mapping)
        pair = independent_pair(fn)
        if pair is not None:
            a, b = pair
            inner = [e for e in edits if a.start_byte <= e[0] and e[1] <= b.end_byte]
            edits = [e for e in edits if e[1] <= a.start_byte or e[0] >= b.end_byte]
            text_a = _apply(source, a.start_byte, a.end_byte, inner)
            text_b = _apply(source, b.start_byte, b.end_byte, inner)
            edits.append((a.start_byte, b.end_byte, text_b + source[a.end_byte:b.start_byte].decode() + text_a))
        return _apply(source, 0, len(source), sorted(edits))
    return text


def _while_loop(text: str) -> str:
    """The first classic `for` loop of one declaration, a condition and an update, with no
    `continue` in its body, written as a `while` loop in a block of its own."""
    source = text.encode()
    for node in _walk(parser_for("java").parse(source).root_node):
        if node.type != "for_statement":
            continue
        init, cond, update, body = (node.child_by_field_name(f) for f in ("init", "condition", "update", "body"))
        if (None in (init, cond, update, body) or len(node.children_by_field_name("update")) > 1
                or any(n.type == "continue_statement" for n in _walk(body))):
            continue
        assert init is not None and cond is not None and update is not None and body is not None
        inner = body.text.decode()
        inner = inner[1:-1].strip() if body.type == "block" else inner
        rewritten = (f"{{ {init.text.decode().rstrip(';')}; while ({cond.text.decode()}) {{ {inner} "
                     f"{update.text.decode()}; }} }}")
        return (source[:node.start_byte] + rewritten.encode() + source[node.end_byte:]).decode()
    return text


def _apply(source: bytes, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
    out, at = [], start
    for a, b, new in sorted(edits):
        if a < at or a < start or b > end:
            continue
        out += [source[at:a].decode(), new]
        at = b
    out.append(source[at:end].decode())
    return "".join(out)


def _walk(node: Node):  # type: ignore[no-untyped-def]
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))
