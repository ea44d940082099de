"""The corpus of benchmarks/quality.py: files chosen from a source dir, docstrings taken out.

Queries are the first sentences of Python docstrings and of JSDoc blocks right above a function;
the indexed copy has every docstring and JSDoc block blanked, lines kept (see quality.py).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sai.chunking.parsers import parser_for
from sai.chunking.treesitter import TreeSitterChunker
from sai.settings import ALWAYS_PRUNED
from sai.text.lexical import tokens

PY_PRUNED = {"test", "tests", "idlelib", "site-packages", "__pycache__", "lib2to3", "turtledemo",
             "ensurepip", "pydoc_data", "config-3.11-x86_64-linux-gnu"}
JS_PRUNED = {"esm", "libesm", "mjs", "test", "tests", "__tests__", "__generated__", ".bin"}
JS_EXTS = (".js", ".cjs", ".mjs")
MAX_FILE_BYTES = 200_000
TEST_DIRS = {"test", "tests", "__tests__"}
TEST_SHARE = 4  # tests of the chosen modules add up to max_lines / TEST_SHARE lines
GENERIC_NAMES = {"__init__", "__main__", "index", "main", "util", "utils", "common", "base"}
DOC_MARK = re.compile(rb'^\s*(/\*\*\s|"""|\'\'\')', re.MULTILINE)
JS_FUNCTION_VALUES = {"arrow_function", "function", "function_expression"}
JS_DECLARATIONS = {"function_declaration", "generator_function_declaration", "method_definition",
                   "lexical_declaration", "variable_declaration", "field_definition"}


@dataclass(frozen=True)
class Function:
    """A function of the indexed copy: its key, name, span and `def` / declaration line."""

    key: str
    name: str
    def_line: int
    start: int
    end: int


@dataclass(frozen=True)
class Target:
    function: Function
    language: str
    query: str


@dataclass
class Corpus:
    texts: dict[str, str] = field(default_factory=dict)  # key -> blanked text
    languages: dict[str, str] = field(default_factory=dict)  # key -> language
    tests: set[str] = field(default_factory=set)  # keys of test files (distractors)
    functions: list[Function] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    unreachable: Counter = field(default_factory=Counter)

    def restrict(self, keys: set[str]) -> None:
        """Keep only these files: those SAI's walker indexes (it skips generated files)."""
        self.texts = {k: t for k, t in self.texts.items() if k in keys}
        self.functions = [fn for fn in self.functions if fn.key in keys]
        self.targets = [t for t in self.targets if t.function.key in keys]

    def count(self, language: str, *, tests: bool) -> tuple[int, int]:
        """(files, lines) of one language: its test files, or all its files."""
        keys = [k for k in self.texts if self.languages[k] == language and (not tests or k in self.tests)]
        return len(keys), sum(self.texts[k].count("\n") + 1 for k in keys)


# -- choosing files -----------------------------------------------------------------------------

def split_files(root: Path, exts: tuple[str, ...], pruned: set[str], split: str,
                max_lines: int) -> list[tuple[Path, str]]:
    """(file, key) pairs of the split, taken in SHA-1 order of the key up to max_lines lines."""
    found = sorted(((path, _key(path.relative_to(root))) for path in _walk(root, exts, pruned)),
                   key=lambda pk: pk[1])
    if split != "all":
        found = found[split == "heldout"::2]
    contents = {key: path.read_bytes() for path, key in found}
    # files with documentation first (JSDoc is rare: most JS files would give no query)
    found.sort(key=lambda pk: (not DOC_MARK.search(contents[pk[1]]),
                               hashlib.sha1(pk[1].encode()).hexdigest()))
    chosen, lines, seen = [], 0, set()
    for path, key in found:
        data = contents[key]
        digest = hashlib.sha1(data).hexdigest()
        if len(data) > MAX_FILE_BYTES or digest in seen or lines >= max_lines:
            continue
        seen.add(digest)
        chosen.append((path, key))
        lines += data.count(b"\n")
    return sorted(chosen, key=lambda pk: pk[1])


def test_files(root: Path, exts: tuple[str, ...], pruned: set[str],
               chosen: list[tuple[Path, str]], max_lines: int) -> list[tuple[Path, str]]:
    """Test files named after a chosen module or package (`test_email/`, `turtle.test.js`)."""
    names = {part for path, key in chosen for part in (path.stem, *Path(key).parent.parts)}
    names -= GENERIC_NAMES
    found = []
    for path in _walk(root, exts, pruned - TEST_DIRS):
        rel = path.relative_to(root)
        subjects = {re.sub(r"^test_|[._-](test|spec)$", "", part) for part in (*rel.parts[:-1], path.stem)}
        if TEST_DIRS & set(rel.parts[:-1]) and subjects & names:
            found.append((path, _key(rel)))
    found.sort(key=lambda pk: hashlib.sha1(pk[1].encode()).hexdigest())
    taken, lines = [], 0
    for path, key in found:
        size = path.stat().st_size
        count = path.read_bytes().count(b"\n") if size <= MAX_FILE_BYTES else 0
        if count and lines + count <= max_lines:
            taken.append((path, key))
            lines += count
    return sorted(taken, key=lambda pk: pk[1])


def _key(relative: Path) -> str:
    """The copy's key: directory names SAI always prunes (node_modules, dist) get a trailing _."""
    return "/".join(p + "_" if p in ALWAYS_PRUNED else p for p in relative.parts)


def _walk(root: Path, exts: tuple[str, ...], pruned: set[str]) -> Iterator[Path]:
    """Source files under root; node_modules is entered at the top only (no nested copies)."""
    for dirpath, dirnames, filenames in os.walk(root):
        nested = Path(dirpath) != root and "node_modules" in Path(dirpath).relative_to(root).parts
        dirnames[:] = sorted(d for d in dirnames if d not in pruned
                             and not (d == "node_modules" and (nested or Path(dirpath) != root)))
        for name in sorted(filenames):
            if name.endswith(exts) and ".min." not in name:
                yield Path(dirpath) / name


# -- queries: first sentences -------------------------------------------------------------------

_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def first_sentence(text: str) -> str:
    """The first sentence of a description's first paragraph, whitespace folded, no final period."""
    paragraph = " ".join(re.split(r"\n\s*\n", text.strip())[0].split())
    for match in re.finditer(r"[.!?](?=\s|$)", paragraph):
        if not paragraph[: match.end()].lower().endswith(_ABBREVIATIONS):
            return paragraph[: match.start()].strip()
    return paragraph.strip()


def usable_query(sentence: str, name: str) -> bool:
    words = sentence.split()
    if len(words) < 4 or ">>>" in sentence or sentence.startswith(f"{name}("):
        return False
    return bool(set(tokens(sentence)) - set(tokens(name)) - {"the", "a", "an", "return", "returns"})


def jsdoc_description(comment: str) -> str:
    """The free text of a JSDoc block before its first tag, `{@link X}` written as X."""
    kept = []
    for line in comment[3:-2].splitlines():
        line = re.sub(r"^\s*\*? ?", "", line)
        if line.lstrip().startswith("@"):
            tag, _, rest = line.strip().partition(" ")
            if tag in ("@description", "@summary") and not "".join(kept).strip():
                kept.append(rest)
                continue
            break
        kept.append(line)
    text = "\n".join(kept)
    return re.sub(r"\{@link(?:code|plain)?\s+([^}|\s]+)[^}]*\}", r"\1", text)


# -- Python -------------------------------------------------------------------------------------

def python_file(key: str, text: str) -> tuple[str, list[Function], list[tuple[Function, str]]]:
    """Blanked text, every function, and (function, docstring) pairs of one Python file."""
    tree = ast.parse(text)
    lines = text.split("\n")
    functions, documented = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            fn = Function(key, node.name, node.lineno, start, node.end_lineno or node.lineno)
            functions.append(fn)
            doc = _docstring(node, lines)
            if doc is not None and len(node.body) > 1:
                documented.append((fn, ast.get_docstring(node) or ""))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = _docstring(node, lines)
            if doc is not None:
                _blank(lines, doc.lineno, doc.end_lineno or doc.lineno, keep=len(node.body) == 1)
    blanked = "\n".join(lines)
    ast.parse(blanked)  # blanking must leave valid code
    return blanked, functions, documented


def _docstring(node: ast.AST, lines: list[str]) -> ast.Expr | None:
    """The docstring statement when it stands on lines of its own."""
    body = getattr(node, "body", [])
    if not body or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Constant):
        return None
    doc = body[0]
    if not isinstance(doc.value.value, str):
        return None
    head = lines[doc.lineno - 1].encode()[: doc.col_offset]
    tail = lines[(doc.end_lineno or doc.lineno) - 1].encode()[doc.end_col_offset or 0:]
    alone = not head.strip() and (not tail.strip() or tail.strip().startswith(b"#"))
    return doc if alone else None


def _blank(lines: list[str], first: int, last: int, *, keep: bool) -> None:
    """Empty lines first..last (1-based); `keep` leaves `...` so a docstring-only body stays valid."""
    indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
    for number in range(first, last + 1):
        lines[number - 1] = ""
    if keep:
        lines[first - 1] = indent + "..."


# -- JavaScript ---------------------------------------------------------------------------------

def js_file(key: str, text: str) -> tuple[str, list[Function], list[tuple[Function, str]]]:
    """Blanked text, every function, and (function, JSDoc description) pairs of one JS file."""
    root = parser_for("javascript").parse(text.encode("utf-8")).root_node
    lines = text.split("\n")
    functions, documented = [], []
    for node in _nodes(root):
        if node.type in JS_DECLARATIONS:
            fn = _js_function(key, node)
            if fn is not None:
                functions.append(fn)
        elif node.type == "comment" and node.text.startswith(b"/**") and len(node.text) > 4:
            after = node.next_named_sibling
            fn = _js_function(key, after) if after is not None else None
            if fn is not None and after.start_point[0] == node.end_point[0] + 1:
                documented.append((fn, jsdoc_description(node.text.decode("utf-8", "replace"))))
            first, last = node.start_point, node.end_point
            head = lines[first[0]].encode()[: first[1]]
            tail = lines[last[0]].encode()[last[1]:]
            if not head.strip() and not tail.strip():
                _blank(lines, first[0] + 1, last[0] + 1, keep=False)
    return "\n".join(lines), functions, documented


def _nodes(root) -> Iterator:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.named_children))


def _js_function(key: str, node) -> Function | None:
    """The function a declaration node defines (through `export`), or None."""
    span = node
    if node.type == "export_statement":
        node = node.child_by_field_name("declaration")
        if node is None:
            return None
    elif node.parent is not None and node.parent.type == "export_statement":
        span = node.parent
    name = _js_name(node)
    if not name:
        return None
    return Function(key, name, node.start_point[0] + 1, span.start_point[0] + 1,
                    span.end_point[0] + 1)


def _js_name(node) -> str | None:
    if node.type in ("function_declaration", "generator_function_declaration", "method_definition"):
        name = node.child_by_field_name("name")
    elif node.type in ("lexical_declaration", "variable_declaration"):
        declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        value = declarator.child_by_field_name("value") if declarator is not None else None
        name = declarator.child_by_field_name("name") if value is not None else None
        name = name if value is not None and value.type in JS_FUNCTION_VALUES else None
    elif node.type == "field_definition":
        value = node.child_by_field_name("value")
        name = node.child_by_field_name("property") if value is not None else None
        name = name if value is not None and value.type in JS_FUNCTION_VALUES else None
    else:
        return None
    return name.text.decode("utf-8", "replace") if name is not None else None


# -- building the corpus ------------------------------------------------------------------------

Source = tuple[str, str, list[tuple[Path, str]], list[tuple[Path, str]]]


def build_corpus(sources: list[Source]) -> Corpus:
    """(language, prefix, files, test files) -> blanked texts, functions and queries (no tests')."""
    corpus, chunker = Corpus(), TreeSitterChunker()
    reader = {"python": python_file, "javascript": js_file}
    candidates: list[Target] = []
    for language, prefix, chosen, tests in sources:
        distractors = set(tests)
        for path, rel in chosen + tests:
            key = f"{prefix}/{rel}"
            try:
                blanked, functions, documented = reader[language](key, path.read_text("utf-8"))
            except (UnicodeDecodeError, SyntaxError, ValueError):
                continue
            corpus.texts[key], corpus.languages[key] = blanked, language
            corpus.functions += functions
            if (path, rel) in distractors:
                corpus.tests.add(key)
                continue
            chunks = chunker.chunk(key, blanked, language)
            for fn, doc in documented:
                query = first_sentence(doc)
                if not usable_query(query, fn.name):
                    continue
                if any(is_correct(c.path, c.start_line, c.end_line, fn) for c in chunks):
                    candidates.append(Target(fn, language, query))
                else:
                    corpus.unreachable[language] += 1
    shared = Counter(t.query.lower() for t in candidates)
    corpus.targets = [t for t in candidates if shared[t.query.lower()] == 1]
    return corpus


def is_correct(path: str, start: int, end: int, fn: Function) -> bool:
    """The function's own chunk (its first window): not an enclosing class or module chunk."""
    return path == fn.key and fn.start <= start <= fn.def_line <= end


def write_tree(root: Path, corpus: Corpus) -> None:
    """The blanked copy under root, rewriting only what changed (so mtimes stay put)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "sai-cfg.yml").write_text("embedder: local\n", encoding="utf-8")
    for sub in ("py", "js"):
        for path in sorted((root / sub).rglob("*")) if (root / sub).exists() else []:
            if path.is_file() and path.relative_to(root).as_posix() not in corpus.texts:
                path.unlink()
    for key, text in corpus.texts.items():
        path = root / key
        if not path.is_file() or path.read_text("utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def default_js_dir() -> Path | None:
    """The npm bundled with Node: `$(npm root -g)/npm`, else next to the `npm` on PATH."""
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, check=True)
        candidate = Path(root.stdout.strip()) / "npm"
    except (OSError, subprocess.CalledProcessError):
        npm = shutil.which("npm")
        candidate = Path(npm).resolve().parent.parent / "lib/node_modules/npm" if npm else Path("/-")
    return candidate if candidate.is_dir() else None
