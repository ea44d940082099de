"""Retrieval quality in the CodeSearchNet manner: does a docstring's first sentence find its function?

The corpus is built at run time from code that ships on the machine: Python from the standard
library (`--python-dir`, default: this interpreter's stdlib) and JavaScript with JSDoc from the
npm bundled with Node (`--js-dir`, default: `$(npm root -g)/npm`, its lib/ and its node_modules/).

- Splits: the source files of a dir (tests, vendored and ESM copies left out; node_modules
  entered at the top level only) sorted by path; `--split tune` takes the even-numbered ones,
  `--split heldout` the odd ones, `--split all` every one. Within the split, files with a
  docstring or JSDoc block come first, each group in SHA-1 order of its path, until
  `--max-lines` lines per language (identical files once). Test files named after a chosen
  module or package (`test/test_email/...`, `foo.test.js`) join as distractors, never queried,
  up to a quarter of that: a real tree has tests, and tests name the code they test.
- Queries: each function with a docstring (Python) or a `/** ... */` JSDoc block on the line
  right above it (JavaScript) gives one query: the first sentence of the description, without
  its final period. Dropped: fewer than 4 words, only the function's name, doctest or signature
  lines, texts shared by two functions, functions that are only a docstring, and functions
  SAI's AST chunker does not make a chunk of (counted as "unreachable").
- The indexed copy has every docstring and every JSDoc block blanked (lines kept, so line
  numbers match the originals); it is indexed by `sai.indexing.indexer.index` with the local
  all-MiniLM-L6-v2 model (vectors cached by text under --cache; the index is rebuilt every run
  so changes to sai/text/lexical.py are seen, at almost no embedding cost).
- A hit is correct when its path is the target's, it starts inside the target function's span
  (decorators / `export` included) and it contains the `def` / declaration line:
  span_start <= hit.start_line <= def_line <= hit.end_line. So the function's own chunk counts
  (its first window when split); an enclosing class or module chunk, which starts earlier,
  does not, unless hybrid search folded the function's chunk into it (`shows`: the hit lists it).
- Methods: `semantic`, `lexical`, `hybrid` are `sai.query.search.search(..., limit=10, mode=...)`;
  `bm25/fn` is a plain BM25 (k1 1.2, b 0.75) over one document per function (its whole span,
  tokenised by `sai.text.lexical.tokens`); `bm25+minilm/fn` fuses it with MiniLM cosine over the
  same documents by reciprocal rank (k 60). Also printed: hybrid latency (in-process, model
  loaded, embedding included) and, for 100 names each defined once in the corpus (any case),
  how often the bare name as the query returns its definition first.

    .venv/bin/python benchmarks/quality.py [--split tune|heldout|all] [--max-queries N]
        [--python-dir DIR] [--js-dir DIR] [--max-lines N] [--cache DIR] [--backend duckdb|qdrant]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import sys
import sysconfig
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _quality_corpus import (
    JS_EXTS,
    JS_PRUNED,
    PY_PRUNED,
    TEST_SHARE,
    Corpus,
    Function,
    Source,
    Target,
    build_corpus,
    default_js_dir,
    is_correct,
    split_files,
    test_files,
    write_tree,
)

from sai.config import load_config
from sai.indexing.indexer import index
from sai.models import BACKENDS
from sai.project import Project
from sai.query import search
from sai.source import files
from sai.text.lexical import tokens

METHODS = ("semantic", "lexical", "hybrid", "bm25/fn", "bm25+minilm/fn")
TOP = 10


class CachedEmbedder:
    """The local model behind a vector cache keyed by text (a rebuilt index embeds nothing new)."""

    def __init__(self, cache: Path, model: str = "all-MiniLM-L6-v2") -> None:
        from sai.embedders.local import LocalEmbedder

        self.inner = LocalEmbedder(model=model, cache_dir=cache / "model")
        self.name, self.model, self.prefix_style, self.with_chunks = "local", self.inner.model, "none", False
        self.served = False
        self.path = cache / f"vectors-{self.model}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.is_file():
            saved = np.load(self.path)
            self.vectors = dict(zip(saved["hashes"].tolist(), saved["vectors"], strict=True))
        self.added = self.embedded = 0

    def runs_elsewhere(self) -> bool:
        return False

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self.vectors))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            fresh = self.inner.embed_documents([by_key[k] for k in missing])
            self.vectors.update(zip(missing, fresh, strict=True))
            self.added += len(missing)
            self.embedded += len(missing)
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def save(self) -> None:
        if self.added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            hashes = list(self.vectors)
            np.savez(self.path, hashes=np.array(hashes), vectors=np.stack([self.vectors[h] for h in hashes]))
            self.added = 0


# -- the plain baseline -------------------------------------------------------------------------

class FunctionBM25:
    """Plain BM25 (k1 1.2, b 0.75, Lucene idf) over one document per function."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.tf = [Counter(d) for d in docs]
        self.lengths = np.array([len(d) for d in docs], dtype=float)
        self.k1, self.b, self.avg = k1, b, float(self.lengths.mean()) if docs else 1.0
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, counts in enumerate(self.tf):
            for term in counts:
                self.postings[term].append(i)

    def scores(self, query: list[str]) -> np.ndarray:
        out, n = np.zeros(len(self.tf)), len(self.tf)
        for term in set(query):
            docs = self.postings.get(term, [])
            idf = math.log(1 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            for i in docs:
                tf = self.tf[i][term]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


def function_text(corpus: Corpus, fn: Function) -> str:
    return "\n".join(corpus.texts[fn.key].split("\n")[fn.start - 1 : fn.end])


def _top(scores: np.ndarray, k: int) -> list[int]:
    k = min(k, len(scores))
    idx = np.argpartition(-scores, k - 1)[:k]
    return sorted(idx.tolist(), key=lambda i: (-scores[i], i))


# -- running ------------------------------------------------------------------------------------

def evaluate(project: Project, corpus: Corpus, targets: list[Target],
             embedder: CachedEmbedder) -> tuple[dict, list[float]]:
    """Rank of the first correct hit (None beyond TOP) per method and language; hybrid latencies."""
    docs = corpus.functions
    bm25 = FunctionBM25([tokens(function_text(corpus, fn)) for fn in docs])
    vectors = embedder.embed_documents([function_text(corpus, fn) for fn in docs])
    embedder.save()
    position = {(fn.key, fn.def_line): i for i, fn in enumerate(docs)}
    ranks: dict = defaultdict(list)
    latencies = []
    for done, target in enumerate(targets, start=1):
        for mode in ("semantic", "lexical", "hybrid"):
            start = time.perf_counter()
            hits = search.search(project, target.query, limit=TOP, mode=mode)
            if mode == "hybrid":
                latencies.append(time.perf_counter() - start)
            rank = next((i for i, h in enumerate(hits, start=1) if shows(h, target.function)), None)
            ranks[target.language, mode].append(rank)
        wanted = position[target.function.key, target.function.def_line]
        lexical = _top(bm25.scores(tokens(target.query)), 100)
        semantic = _top(vectors @ embedder.embed_query(target.query), 100)
        fused: Counter = Counter()
        for order in (lexical, semantic):
            for r, i in enumerate(order, start=1):
                fused[i] += 1 / (60 + r)
        fused_order = sorted(fused, key=lambda i: (-fused[i], i))
        for method, order in (("bm25/fn", lexical), ("bm25+minilm/fn", fused_order)):
            ranks[target.language, method].append(_rank_of(order, wanted))
        if done % 100 == 0:
            print(f"  {done}/{len(targets)} queries", file=sys.stderr, flush=True)
    return ranks, latencies


def shows(hit, fn) -> bool:
    """The hit, or a chunk hybrid search folded into it (its member, its next window, a copy in
    another file), is correct."""
    parts = [(hit.path, hit.start_line, hit.end_line),
             *((hit.path, c.start_line, c.end_line) for c in hit.chunks or ()),
             *((c.path, c.start_line, c.end_line) for c in hit.copies or ())]
    return any(is_correct(path, start, end, fn) for path, start, end in parts)


def _rank_of(order: list[int], wanted: int) -> int | None:
    return next((r for r, i in enumerate(order[:TOP], start=1) if i == wanted), None)


def identifier_check(project: Project, corpus: Corpus, count: int = 100) -> dict[str, tuple[int, int]]:
    """Per mode: how many bare function names (unique in the corpus) return their definition first."""
    names = Counter(fn.name.lower() for fn in corpus.functions)  # SAI matches names in any case
    unique = [fn for fn in corpus.functions if names[fn.name.lower()] == 1 and len(fn.name) >= 4
              and re.fullmatch(r"[A-Za-z_$][\w$]*", fn.name) and not fn.name.startswith("__")]
    unique.sort(key=lambda fn: hashlib.sha1(fn.name.encode()).hexdigest())
    chosen = unique[:count]
    out = {}
    for mode in ("semantic", "lexical", "hybrid"):
        first = sum(1 for fn in chosen if (hits := search.search(project, fn.name, limit=1, mode=mode))
                    and shows(hits[0], fn))
        out[mode] = (first, len(chosen))
    return out


def spread(targets: list[Target], count: int | None) -> list[Target]:
    """At most `count` targets per language, evenly spread over (key, line) order."""
    out = []
    for language in ("python", "javascript"):
        mine = sorted((t for t in targets if t.language == language),
                      key=lambda t: (t.function.key, t.function.def_line))
        if count is not None and len(mine) > count:
            step = len(mine) / count
            mine = [mine[int(i * step)] for i in range(count)]
        out += mine
    return out


def metrics(ranks: list[int | None]) -> tuple[float, float, float]:
    n = len(ranks) or 1
    mrr = sum(1 / r for r in ranks if r is not None) / n
    return mrr, sum(r == 1 for r in ranks) / n, sum(r is not None for r in ranks) / n


def print_table(ranks: dict, languages: list[str]) -> None:
    print(f"{'language':<11} {'method':<15} {'n':>5} {'MRR@10':>7} {'R@1':>6} {'R@10':>6}")
    for language in [*languages, "overall"]:
        for method in METHODS:
            found = ([r for lang in languages for r in ranks[lang, method]] if language == "overall"
                     else ranks[language, method])
            mrr, r1, r10 = metrics(found)
            print(f"{language:<11} {method:<15} {len(found):5d} {mrr:7.3f} {r1:6.3f} {r10:6.3f}")



def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-dir", type=Path, default=Path(sysconfig.get_paths()["stdlib"]))
    parser.add_argument("--js-dir", type=Path, default=None, help="default: $(npm root -g)/npm")
    parser.add_argument("--split", choices=("tune", "heldout", "all"), default="tune")
    parser.add_argument("--max-lines", type=int, default=20000, help="per language (20000)")
    parser.add_argument("--max-queries", type=int, default=400, help="per language (400)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sai-quality"))
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="or all-MiniLM-L6-v2-int8 (local embedder)")
    parser.add_argument("--backend", choices=BACKENDS, default="duckdb",
                        help="where the index lives (qdrant: local mode under the tree's .index/)")
    args = parser.parse_args(argv)
    args.js_dir = args.js_dir or default_js_dir()
    return args


def prepare(args: argparse.Namespace) -> tuple[list[Source], Corpus, Path]:
    """The split's files, the corpus built from them, and the tree written under --cache."""
    sources = []
    for language, prefix, root, exts, pruned in (
        ("python", "py", args.python_dir, (".py",), PY_PRUNED),
        ("javascript", "js", args.js_dir, JS_EXTS, JS_PRUNED),
    ):
        if root is not None:
            chosen = split_files(root.resolve(), exts, pruned, args.split, args.max_lines)
            tests = test_files(root.resolve(), exts, pruned, chosen, args.max_lines // TEST_SHARE)
            sources.append((language, prefix, chosen, tests))
    corpus = build_corpus(sources)
    tag = repr((str(args.python_dir), str(args.js_dir), args.split, args.max_lines))
    tree = args.cache / f"tree-{args.split}-{hashlib.sha1(tag.encode()).hexdigest()[:10]}"
    write_tree(tree, corpus)
    return sources, corpus, tree


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sources, corpus, root = prepare(args)
    embedder = CachedEmbedder(args.cache, args.model)
    flags = {"backend": args.backend, "qdrant.path": ".index/qdrant"} if args.backend == "qdrant" else {}
    project = Project(load_config(flags=flags, env={}, cwd=root), embedder=embedder)
    corpus.restrict({s.key for s in files.walk(project.config.walk).included})
    targets = spread(corpus.targets, args.max_queries)
    try:
        started = time.perf_counter()
        report = index(project, recreate=True)
        embedder.save()
        built = time.perf_counter() - started
        languages = [lang for lang, *_ in sources if any(t.language == lang for t in targets)]
        for lang, *_ in sources:
            (nfiles, nlines), (ntests, tlines) = corpus.count(lang, tests=False), corpus.count(lang, tests=True)
            print(f"{lang}: {nfiles} files, {nlines} lines, of which {ntests} test files, {tlines} lines "
                  f"(never queried); {sum(t.language == lang for t in corpus.targets)} usable queries "
                  f"({corpus.unreachable[lang]} unreachable), {sum(t.language == lang for t in targets)} used")
        print(f"split {args.split}; tree {root}; index: {report.chunks} chunks, {report.files} files, "
              f"rebuilt in {built:.1f} s ({embedder.embedded} chunks not in the vector cache)")
        print("correct hit: same path and span_start <= hit.start_line <= def_line <= hit.end_line")
        search.search(project, "warm up", limit=TOP, mode="hybrid")
        ranks, latencies = evaluate(project, corpus, targets, embedder)
        print_table(ranks, languages)
        ms = 1000 * np.array(latencies or [float("nan")])
        print(f"hybrid latency: p50 {np.percentile(ms, 50):.1f} ms, p95 {np.percentile(ms, 95):.1f} ms "
              f"({len(ms)} queries, {len(corpus.texts)} files, {report.chunks} chunks)")
        found = identifier_check(project, corpus)
        print("bare function name -> its definition first: " + ", ".join(
            f"{mode} {hit}/{n}" for mode, (hit, n) in found.items()))
    finally:
        project.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
