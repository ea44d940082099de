"""Doc-comment retrieval in Rust, C++ and Go: does a function's doc comment find the function?

The figures of issue 43 ("find why Rust and C++ lose"), measured on repositories of our own choice
(never those of the held-out check, nor semble's benchmark repos):

- Repositories: REPOS below, each at a fixed commit, cloned from GitHub (or from
  `--mirror`/<owner>+<name>/repo, a local bare copy) into `--cache`/src (default
  /tmp/sai-bench/doc-comments), never inside the SAI tree.
- Queries: every function definition (a body; Rust `fn`, C/C++ function definitions, template
  ones included, Go functions and methods) with a comment right above it (Rust `///` or `/** */`,
  C++ `///`, `/** */` or the `//` lines right above, Go `//` lines), attributes and `template<>`
  between them allowed, gives the first sentence of that comment, without its final period.
  Dropped as in benchmarks/quality.py: fewer than 4 words, texts shared by two functions, and
  functions SAI's AST chunker makes no chunk of (counted as "unreachable").
- The indexed copy (`--cache`/tree-<repo>) has every doc-style comment (`///`, `//!`, `/**`,
  `/*!`) and every comment standing at file, namespace, impl, trait or class level blanked,
  lines kept; comments inside bodies stay. It is indexed by `sai.indexing.indexer.index`
  (`embedder: local`, all-MiniLM-L6-v2, vectors cached by text under --cache).
- A hit is correct as in benchmarks/quality.py (`shows`): same path, it starts inside the
  function's span and holds its definition line, or hybrid search folded such a chunk into it.
  `hybrid~` is hybrid scored loosely: any hit whose lines cover the definition line.
- `bm25/40` is plain BM25 (k1 1.2, b 0.75) over 40-line windows of the blanked files (stride 40),
  tokenised by `sai.text.lexical.tokens`; a window is correct when it holds the definition line.
- NDCG@10 with one relevant item is 1/log2(1 + rank); MRR@10 is 1/rank; 0 beyond rank 10.
- The diagnosis under the table: the chunks (kinds, line counts, giants of >= GIANT lines), the
  target's own chunk (its kind, whether a container or a giant), the ranks per mode, and what
  the first hit is when it is not the target.

    .venv/bin/python benchmarks/doc_comments.py [--repos bytes,leveldb,golang-lru] [--cache DIR]
        [--mirror DIR]
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _quality_corpus import Function, first_sentence, is_correct
from quality import CachedEmbedder, FunctionBM25, shows

from sai.chunking.parsers import parse
from sai.chunking.treesitter import TreeSitterChunker
from sai.config import load_config
from sai.indexing.indexer import index
from sai.models import Chunk
from sai.project import Project
from sai.query import search
from sai.source.languages import language_of
from sai.text.lexical import tokens

TOP = 10
WINDOW = 40
GIANT = 100  # lines: a chunk this long is "giant"
MODES = ("hybrid", "lexical", "semantic")
METHODS = (*MODES, "hybrid~", "bm25/40")


@dataclass(frozen=True)
class Repo:
    name: str
    github: str
    commit: str
    exts: tuple[str, ...]
    pruned: frozenset[str] = frozenset()


REPOS = (
    Repo("bytes", "tokio-rs/bytes", "d5c8ad3227afe459c09f1d0d85455abf00f0381a", (".rs",)),
    Repo("leveldb", "google/leveldb", "78a352f47ed6c1e9d750545e9b242289185b87e1", (".cc", ".h"),
         frozenset({"third_party"})),
    Repo("golang-lru", "hashicorp/golang-lru", "5dd697da12cfd1af9605fbf9968cac4104eb1788", (".go",)),
)
DEFINITIONS = {"rust": {"function_item"}, "cpp": {"function_definition"}, "c": {"function_definition"},
               "go": {"function_declaration", "method_declaration"}}
LEADING = {"attribute_item", "template_declaration"}  # between a doc comment and its function
COMMENTS = {"comment", "line_comment", "block_comment"}
LEVELS = {"source_file", "translation_unit", "declaration_list", "field_declaration_list"}
DOC_STYLE = re.compile(rb"^(///|//!|/\*\*|/\*!)")


@dataclass(frozen=True)
class Target:
    function: Function
    query: str
    test: bool


@dataclass
class Tree:
    """The blanked copy of one repository: texts by key, languages, functions and queries."""

    texts: dict[str, str]
    languages: dict[str, str]
    targets: list[Target]
    unreachable: int
    chunks: list[Chunk]


# -- the corpus ---------------------------------------------------------------------------------

def checkout(mirror: Path | None, cache: Path, repo: Repo) -> Path:
    src = cache / "src" / repo.github.replace("/", "+")
    if not src.is_dir():
        origin = (str(mirror / repo.github.replace("/", "+") / "repo") if mirror is not None
                  else f"https://github.com/{repo.github}.git")
        subprocess.run(["git", "clone", "-q", origin, str(src)], check=True)
    subprocess.run(["git", "-C", str(src), "checkout", "-q", repo.commit], check=True)
    return src


def source_files(src: Path, repo: Repo) -> list[Path]:
    pruned = {".git", "target", *repo.pruned}
    return sorted(p for p in src.rglob("*") if p.is_file() and p.suffix in repo.exts
                  and not pruned & set(p.relative_to(src).parts))


def comment_text(raw: str) -> str:
    """A comment's words: markers, leading `*`, doxygen `@brief` and Markdown headers gone."""
    lines = []
    for line in raw.splitlines():
        line = re.sub(r"^\s*(/{2,}!?|/\*+!?|\*+/?)\s?", "", line)
        line = re.sub(r"\*+/\s*$", "", line)
        line = re.sub(r"^\s*[@\\]brief\s+", "", line)
        if re.match(r"^\s*[@\\]\w", line) or line.lstrip().startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines)


def read_file(key: str, text: str, language: str) -> tuple[str, list[tuple[Function, str]]]:
    """The blanked text and the (function, doc comment) pairs of one file."""
    data = bytearray(text.encode("utf-8"))
    root = parse(language, bytes(data)).root_node
    documented, blanks = [], []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type in COMMENTS:
            alone_above = node.parent is not None and node.parent.type in LEVELS
            if DOC_STYLE.match(node.text) or alone_above:
                blanks.append((node.start_byte, node.end_byte))
        if node.type in DEFINITIONS[language] and node.child_by_field_name("body") is not None:
            found = _doc_above(key, node)
            if found is not None:
                documented.append(found)
    for start, end in blanks:
        data[start:end] = re.sub(rb"[^\n]", b" ", bytes(data[start:end]))
    blanked = "\n".join(line.rstrip() for line in data.decode("utf-8").split("\n"))
    return blanked, documented


def _doc_above(key: str, node) -> tuple[Function, str] | None:
    """The function a definition node is, with the comment block right above it."""
    span = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
    top, above = span, span.prev_named_sibling
    while above is not None and above.type in LEADING and _last_row(above) + 1 >= top.start_point[0]:
        top, above = above, above.prev_named_sibling
    first, parts = top.start_point[0], []
    while above is not None and above.type in COMMENTS and _last_row(above) + 1 == top.start_point[0]:
        parts.insert(0, above.text.decode("utf-8", "replace"))
        top, above = above, above.prev_named_sibling
    name = node.child_by_field_name("name") or node.child_by_field_name("declarator")
    if not parts or name is None:
        return None
    label = re.split(r"[(<]", name.text.decode("utf-8", "replace"))[0].split("::")[-1].strip()
    fn = Function(key, label, node.start_point[0] + 1, first + 1, span.end_point[0] + 1)
    return fn, "\n".join(comment_text(p) for p in parts)


def _last_row(node) -> int:
    """The 0-based last line of a node (a Rust `///` comment holds its newline)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point[0] else row


def build_tree(src: Path, repo: Repo) -> Tree:
    texts, languages, candidates, unreachable = {}, {}, [], 0
    chunker, chunks = TreeSitterChunker(), []
    for path in source_files(src, repo):
        key = path.relative_to(src).as_posix()
        try:
            original = path.read_text("utf-8")
        except UnicodeDecodeError:
            continue
        language = language_of(key, original)
        if language not in DEFINITIONS:
            continue
        blanked, documented = read_file(key, original, language)
        texts[key], languages[key] = blanked, language
        mine = chunker.chunk(key, blanked, language)
        chunks += mine
        for fn, doc in documented:
            query = first_sentence(doc)
            if len(query.split()) < 4:
                continue
            if any(is_correct(c.path, c.start_line, c.end_line, fn) for c in mine):
                candidates.append(Target(fn, query, is_test(key)))
            else:
                unreachable += 1
    shared = Counter(t.query.lower() for t in candidates)
    targets = [t for t in candidates if shared[t.query.lower()] == 1]
    return Tree(texts, languages, targets, unreachable, chunks)


def is_test(key: str) -> bool:
    return bool(re.search(r"(^|/)(tests?|benches|benchmarks)/|_test\.|_bench\.", key))


def write_tree(root: Path, tree: Tree) -> None:
    """The blanked copy under root, rewriting only what changed."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "sai-cfg.yml").write_text("embedder: local\n", encoding="utf-8")
    for key, text in tree.texts.items():
        path = root / key
        if not path.is_file() or path.read_text("utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


# -- scoring ------------------------------------------------------------------------------------

def windows(tree: Tree) -> list[tuple[str, int, int, str]]:
    out = []
    for key, text in tree.texts.items():
        lines = text.split("\n")
        for start in range(0, len(lines), WINDOW):
            out.append((key, start + 1, min(start + WINDOW, len(lines)), "\n".join(lines[start:start + WINDOW])))
    return out


def covers(hit, fn: Function) -> bool:
    return hit.path == fn.key and hit.start_line <= fn.def_line <= hit.end_line


def evaluate(project: Project, tree: Tree) -> tuple[dict[str, list[int | None]], list[tuple[Target, dict]]]:
    """Rank of the first correct hit per method (None beyond TOP), and each query's top hits."""
    wins = windows(tree)
    bm25 = FunctionBM25([tokens(f"{k} {text}") for k, _, _, text in wins])
    ranks: dict[str, list[int | None]] = {m: [] for m in METHODS}
    seen = []
    for target in tree.targets:
        fn, top = target.function, {}
        for mode in MODES:
            hits = search.search(project, target.query, limit=TOP, mode=mode)
            top[mode] = hits
            ranks[mode].append(next((i for i, h in enumerate(hits, 1) if shows(h, fn)), None))
        ranks["hybrid~"].append(next((i for i, h in enumerate(top["hybrid"], 1) if covers(h, fn)), None))
        scores = bm25.scores(tokens(target.query))
        order = sorted(range(len(wins)), key=lambda i: (-scores[i], i))[:TOP]
        ranks["bm25/40"].append(next((r for r, i in enumerate(order, 1) if wins[i][0] == fn.key
                                      and wins[i][1] <= fn.def_line <= wins[i][2]), None))
        seen.append((target, top))
    return ranks, seen


def names_function(target: Target) -> bool:
    """The query holds the function's name as a word (`Values returns ...`, Go's habit)."""
    name = target.function.name.lower()
    return bool(name) and name in {w.lower() for w in re.findall(r"\w+", target.query)}


def ndcg(ranks: list[int | None]) -> float:
    return sum(1 / math.log2(1 + r) for r in ranks if r) / (len(ranks) or 1)


def mrr(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r) / (len(ranks) or 1)


# -- diagnosis ----------------------------------------------------------------------------------

def lines_of(c) -> int:
    return c.end_line - c.start_line + 1


def own_chunk(tree: Tree, fn: Function) -> Chunk | None:
    return next((c for c in tree.chunks if is_correct(c.path, c.start_line, c.end_line, fn)), None)


def describe_chunks(tree: Tree) -> None:
    sizes = np.array([lines_of(c) for c in tree.chunks])
    kinds = Counter(c.kind or "gap" for c in tree.chunks)
    print(f"  chunks: {len(tree.chunks)}; kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    print(f"  chunk lines: p50 {np.percentile(sizes, 50):.0f}, p90 {np.percentile(sizes, 90):.0f}, "
          f"max {sizes.max()}; giants (>= {GIANT} lines): {int((sizes >= GIANT).sum())}")
    giants = sorted((c for c in tree.chunks if lines_of(c) >= GIANT), key=lines_of, reverse=True)[:4]
    for c in giants:
        blank = sum(1 for line in c.text.split("\n") if not line.strip())
        print(f"    giant {c.path}:{c.start_line}-{c.end_line} ({lines_of(c)} lines, {blank} blank) "
              f"{c.kind or 'gap'} {c.symbol or ''}")
    own = [own_chunk(tree, t.function) for t in tree.targets]
    own_kinds = Counter(c.kind or "gap" for c in own if c is not None)
    sized = np.array([lines_of(c) for c in own if c is not None])
    print(f"  target's own chunk lines: p50 {np.percentile(sized, 50):.0f}, p90 {np.percentile(sized, 90):.0f}; "
          f"targets whose name another documented target shares: "
          f"{sum(n for n in Counter(t.function.name for t in tree.targets).values() if n > 1)}")
    print("  target's own chunk: " + ", ".join(f"{k} {n}" for k, n in own_kinds.most_common())
          + f"; giant {sum(1 for c in own if c is not None and lines_of(c) >= GIANT)}; "
          f"inside a container chunk {sum(1 for t in tree.targets if container_of(tree, t.function))}; "
          f"in test files {sum(t.test for t in tree.targets)}")


def container_of(tree: Tree, fn: Function) -> Chunk | None:
    return next((c for c in tree.chunks if c.path == fn.key and c.start_line < fn.start
                 and c.end_line >= fn.end and c.kind is not None), None)


def first_hit_kind(tree: Tree, hit, fn: Function) -> str:
    """What the first hit is when it is not the target."""
    if hit.path == fn.key and hit.start_line <= fn.def_line <= hit.end_line:
        return "container of target"
    tags = []
    if (hit.symbol or "").rpartition(".")[2] == fn.name:
        tags.append("same name")
    if Path(hit.path).stem == Path(fn.key).stem and hit.path != fn.key:
        tags.append("its header/source")
    if lines_of(hit) >= GIANT:
        tags.append("giant")
    if is_test(hit.path):
        tags.append("test")
    kind = next((c.kind for c in tree.chunks if c.path == hit.path and c.start_line == hit.start_line
                 and c.end_line == hit.end_line), None)
    tags.append(kind or "gap")
    if hit.path == fn.key:
        tags.append("same file")
    return "/".join(tags)


def describe_ranks(tree: Tree, ranks: dict, seen: list) -> None:
    for mode in MODES:
        buckets = Counter("1" if r == 1 else "2-3" if r and r <= 3 else "4-10" if r else ">10"
                          for r in ranks[mode])
        beaten = Counter(first_hit_kind(tree, top[mode][0], t.function)
                         for (t, top), r in zip(seen, ranks[mode], strict=True) if r != 1 and top[mode])
        print(f"  {mode:<8} rank " + " ".join(f"{b}:{buckets[b]}" for b in ("1", "2-3", "4-10", ">10"))
              + "; first hit when not the target: " + ", ".join(f"{k} {n}" for k, n in beaten.most_common(7)))
    lost = [(t, top) for (t, top), r in zip(seen, ranks["hybrid"], strict=True) if r is None]
    in_lists = Counter(m for t, top in lost for m in ("lexical", "semantic")
                       if any(shows(h, t.function) for h in top[m]))
    print(f"  hybrid misses@10: {len(lost)}; of them in the lexical top 10 {in_lists['lexical']}, "
          f"in the semantic top 10 {in_lists['semantic']}")
    for label, low, high in (("<= 3", 0, 3), ("4-10", 4, 10), ("> 10", 11, 10**9)):
        picked = [r for (t, _), r in zip(seen, ranks["hybrid"], strict=True)
                  if (c := own_chunk(tree, t.function)) is not None and low <= lines_of(c) <= high]
        print(f"  own chunk {label} lines: {len(picked)} targets, hybrid NDCG@10 {ndcg(picked):.3f}")
    slots = Counter()
    for _, top in seen:
        for h in top["hybrid"]:
            slots["giant" if lines_of(h) >= GIANT else "test" if is_test(h.path) else "other"] += 1
        pairs = sum(1 for a in top["hybrid"] for b in top["hybrid"] if a is not b and a.path == b.path
                    and a.start_line <= b.start_line and b.end_line <= a.end_line)
        slots["container+member pairs"] += pairs
    print("  hybrid top-10 slots: " + ", ".join(f"{k} {n}" for k, n in slots.items()))


def describe_terms(tree: Tree, count: int = 3) -> None:
    """A few queries beside their function's own chunk: the terms they share."""
    for target in tree.targets[:: max(1, len(tree.targets) // count)][:count]:
        own = own_chunk(tree, target.function)
        q = set(tokens(target.query))
        chunk = set(tokens(f"{own.path} {own.symbol or ''} {own.text}")) if own else set()
        print(f"    q: {target.query[:70]!r} -> shared {sorted(q & chunk)[:12]}, query-only {sorted(q - chunk)[:8]}")


# -- running ------------------------------------------------------------------------------------

def run_repo(repo: Repo, args: argparse.Namespace, embedder: CachedEmbedder) -> dict[str, list[int | None]]:
    src = checkout(args.mirror, args.cache, repo)
    tree = build_tree(src, repo)
    root = args.cache / f"tree-{repo.name}"
    write_tree(root, tree)
    project = Project(load_config(flags={}, env={}, cwd=root), embedder=embedder)
    try:
        report = index(project, recreate=True)
        embedder.save()
        langs = Counter(tree.languages.values())
        print(f"{repo.github}@{repo.commit[:12]}: {len(tree.texts)} files ({dict(langs)}), "
              f"{sum(t.count(chr(10)) + 1 for t in tree.texts.values())} lines, {report.chunks} chunks indexed; "
              f"{len(tree.targets)} queries ({tree.unreachable} unreachable)")
        ranks, seen = evaluate(project, tree)
        print(f"  {'method':<9} {'n':>4} {'NDCG@10':>8} {'MRR@10':>7} {'R@1':>6} {'R@10':>6}")
        for method in METHODS:
            found = ranks[method]
            n = len(found) or 1
            print(f"  {method:<9} {len(found):4d} {ndcg(found):8.3f} {mrr(found):7.3f} "
                  f"{sum(r == 1 for r in found) / n:6.3f} {sum(r is not None for r in found) / n:6.3f}")
        for label, test in (("non-test", False), ("test", True)):
            picked = [i for i, t in enumerate(tree.targets) if t.test == test]
            print(f"  {label} targets ({len(picked)}): NDCG@10 " + ", ".join(
                f"{m} {ndcg([ranks[m][i] for i in picked]):.3f}" for m in ("hybrid", "lexical", "semantic", "bm25/40")))
        named = [i for i, t in enumerate(tree.targets) if names_function(t)]
        rest = [i for i in range(len(tree.targets)) if i not in set(named)]
        for label, picked in (("naming their function", named), ("not naming it", rest)):
            print(f"  queries {label} ({len(picked)}): NDCG@10 " + ", ".join(
                f"{m} {ndcg([ranks[m][i] for i in picked]):.3f}" for m in ("hybrid", "lexical", "semantic", "bm25/40")))
        describe_chunks(tree)
        describe_ranks(tree, ranks, seen)
        describe_terms(tree)
    finally:
        project.close()
    return ranks


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default=",".join(r.name for r in REPOS))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sai-bench/doc-comments"))
    parser.add_argument("--mirror", type=Path, default=None, help="clone from DIR/<owner>+<name>/repo")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    embedder = CachedEmbedder(args.cache)
    chosen = [r for r in REPOS if r.name in args.repos.split(",")]
    for repo in chosen:
        run_repo(repo, args, embedder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
