"""Answer quality on real repositories: SAI on the semble code-search benchmark, beside semble.

MinishLab's semble (github.com/MinishLab/semble, `benchmarks/`) pins 63 public repositories
(`repos.json`: url, revision, benchmark_root) and annotates about 20 queries for each
(`annotations/<repo>.json`: query, `relevant` and `secondary` targets, each a path with an
optional line span, category `semantic`, `architecture` or `symbol`). This harness runs those
queries through SAI and scores them with semble's metric, reproduced here (not imported):

- a target is found at the first of the top 10 chunks whose file is the target's file and, when
  the target has a line span, whose lines overlap it; relevant and secondary targets weigh 1 (a
  hit's lines are those it shows: its own, each chunk hybrid search folds into it as a range of
  its own, and the near-identical copies in other files it lists);
- NDCG@10 = DCG of a 0/1 relevance list over ranks 1..10 (a rank holding several found targets
  counts once) divided by the DCG of min(10, number of targets) ones; 0 with no targets;
- a repository's figure is the mean over its queries; a category's figure is the mean of the
  per-repository category means; the overall figure is the mean of the per-repository means.

Paths are compared as semble did when it published its results (semble-hybrid-0332378809c5,
2026-04-21, absolute paths): SAI's project-relative path is prefixed with benchmark_root, so
it is relative to the checkout like the annotations, and matched by semble's suffix rule.

Beside NDCG@10 it prints, per mode, the share of queries whose first hit lies in a target file
and the mean number of distinct files in the top 10. Semble's published per-repository figures
(their results JSON) are shown only where the same queries ran (no --max-queries cut; per
category when --categories keeps whole categories).

Data is read at run time from a cache directory (--cache, default $SAI_BENCH_CACHE/repos-quality,
$SAI_BENCH_CACHE defaulting to /tmp/sai-bench), never from this repository:

    CACHE/semble/benchmarks/repos.json, annotations/<repo>.json, results/<published>.json
    CACHE/checkouts/<repo>/          a git work tree at the pinned revision
    CACHE/substitutes.json           optional: {"<repo>": {"revision": R, "why": W, "index_root": D}}
                                     for a repository whose pinned revision cannot be had: the
                                     checkout is at R instead, D (relative to the checkout, default
                                     benchmark_root) is indexed, and every report line says so
    CACHE/index/<repo>/<embedder>-<model>/code.duckdb   SAI's index (incremental: a rerun
                                                        embeds nothing)

Any repository of repos.json can be named, or a named set: `tuning`, the 18 SAI's ranking was
tuned on; `held-out`, 12 first measured after that tuning and looked into since (their misses
shaped later rules); for the languages added with the per-grammar wheels, `langs-tuning`, the seven
tuned on (one per language), and `langs-untouched`, seven others in the same languages; and
`untouched`, 14 repositories in 14 languages chosen by language and size alone (see UNTOUCHED).
The two untouched sets are measured only, never looked into (no reading their files, queries or
per-query results: --verbose refuses them), marked `[untouched]`. Each run prints its means and
those of every named set it covers, per category beside semble's, with the number of
repositories where hybrid is below semble.
`--ext md,swift,...` indexes those extensions instead of the defaults (its own cached index).

    python benchmarks/repos_quality.py --repos model2vec,aiohttp [--modes hybrid,semantic,lexical]
        [--categories semantic,architecture,symbol] [--max-queries N] [--embedder local|ollama]
        [--model M] [--cache DIR] [--published FILE] [--verbose]
    python benchmarks/repos_quality.py --self-test   (also what a run without --repos does)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _repos_report import CATEGORIES, print_overall, print_repo, repo_figures

from sai.models import EMBEDDERS, MODES

TUNING = ("aiohttp", "fastapi", "pydantic", "starlette", "model2vec", "commons-lang",
          "jackson-databind", "laravel-framework", "rails", "tokio", "messagepack-csharp",
          "newtonsoft-json", "ktor", "kotlinx-coroutines", "nlohmann-json", "curl", "redis", "vitest")
LANGS_TUNING = ("alamofire", "cats", "ecto", "lazy.nvim", "aeson", "zls", "bats-core")
LANGS_UNTOUCHED = ("vapor", "http4s", "plug", "telescope.nvim", "xmonad", "zig-clap", "nvm")
HELD_OUT = ("requests", "flask", "click", "httpx", "express", "axios", "gin", "cobra", "gson", "axum",
            "monolog", "sinatra")
# per language of repos.json, its smallest repository (semble's chunk count) in no set above, if it
# has under 1,500 chunks: chosen by language and size alone, before any run; measured only
UNTOUCHED = ("redux", "chi", "guzzle", "rack", "trpc", "serde", "dapper", "exposed", "circe", "snapkit",
             "fmtlib", "libuv", "phoenix", "bash-it")
NAMED_SETS = {"tuning": TUNING, "held-out": HELD_OUT, "langs-tuning": LANGS_TUNING,
              "langs-untouched": LANGS_UNTOUCHED, "untouched": UNTOUCHED}
TUNED_ON = TUNING + HELD_OUT + LANGS_TUNING  # whose misses may be read while tuning
TOP = 10
SEMBLE_COMMIT = "b8543c3"  # michalfedyna/semble snapshot holding MinishLab's benchmarks/ of 2026-04-29
PUBLISHED = "semble-hybrid-0332378809c5.json"
DEFAULT_CACHE = Path(os.environ.get("SAI_BENCH_CACHE", "/tmp/sai-bench")) / "repos-quality"


# ---------------------------------------------------------------- the metric (pure functions)

@dataclass(frozen=True)
class Target:
    path: str
    start_line: int | None = None
    end_line: int | None = None


@dataclass(frozen=True)
class Query:
    repo: str
    text: str
    category: str
    targets: tuple[Target, ...]  # relevant, then secondary: each weighs 1


def same_file(hit_path: str, target_path: str) -> bool:
    """Semble's path rule: equal, or either path ends with '/' + the other."""
    a, b = hit_path.replace("\\", "/"), target_path.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def covers(hit: tuple[str, int, int], target: Target) -> bool:
    """The hit (path, start, end) is in the target's file and overlaps its span, if it has one."""
    path, start, end = hit
    if not same_file(path, target.path):
        return False
    if target.start_line is None or target.end_line is None:
        return True
    return not (end < target.start_line or start > target.end_line)


def target_rank(hits: list[tuple[str, int, int]], target: Target,
                copies: list[list[tuple[str, int, int]]] | None = None) -> int | None:
    """1-based rank of the first hit covering the target, itself or one of the parts hybrid search
    folded into it (`copies`: the chunks of its file and the near-identical chunks of other files
    listed with the hit), or None."""
    return next((i for i, hit in enumerate(hits, 1)
                 if covers(hit, target) or any(covers(c, target) for c in (copies[i - 1] if copies else ()))), None)


def dcg(gains: list[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at(ranks: list[int], n_targets: int, k: int = TOP) -> float:
    """NDCG@k of 1-based found ranks against n_targets ideal ones (a rank counts once)."""
    if n_targets == 0:
        return 0.0
    gains = [0] * k
    for rank in ranks:
        if 1 <= rank <= k:
            gains[rank - 1] = 1
    return dcg(gains) / dcg([1] * min(k, n_targets))


def query_ndcg(hits: list[tuple[str, int, int]], targets: tuple[Target, ...], k: int = TOP,
               copies: list[list[tuple[str, int, int]]] | None = None) -> float:
    ranks = [r for t in targets if (r := target_rank(hits[:k], t, copies)) is not None]
    return ndcg_at(ranks, len(targets), k)


def first_hit_in_target_file(hits: list[tuple[str, int, int]], targets: tuple[Target, ...]) -> bool:
    return bool(hits) and any(same_file(hits[0][0], t.path) for t in targets)


def distinct_files(hits: list[tuple[str, int, int]], k: int = TOP) -> int:
    return len({path for path, _, _ in hits[:k]})


def self_test() -> int:
    """The metric on hand-made rankings whose answers were worked out by hand."""
    a, b, c = Target("pkg/a.py"), Target("pkg/b.py", 10, 20), Target("pkg/c.py")
    hits = [("pkg/x.py", 1, 5), ("pkg/b.py", 1, 9), ("pkg/a.py", 1, 50), ("pkg/b.py", 15, 30),
            ("pkg/a.py", 60, 80)]
    checks = [
        # a found at 3, b at 4 (rank 2 ends before line 10), c missing:
        # (1/log2 4 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4) = 0.930677 / 2.130930
        ("three targets, two found", query_ndcg(hits, (a, b, c)), 0.436747),
        # two targets in the one top chunk count once: 1 / (1 + 1/log2 3) = 1 / 1.630930
        ("two targets in one chunk", query_ndcg([("pkg/a.py", 1, 9)], (a, Target("pkg/a.py", 5, 6))), 0.613147),
        ("perfect single", query_ndcg([("pkg/c.py", 1, 2)], (c,)), 1.0),
        # the ideal counts at most 10 targets: 12 targets, all found at 1..10 -> 1.0
        ("more targets than k", ndcg_at(list(range(1, 13)), 12), 1.0),
        ("no targets", query_ndcg(hits, ()), 0.0),
        ("found at 11 is not found", ndcg_at([11], 1), 0.0),
    ]
    bools = [
        ("suffix either way", same_file("x/pkg/a.py", "pkg/a.py") and same_file("pkg/a.py", "x/pkg/a.py")),
        ("no partial name match", not same_file("pkg/ba.py", "a.py")),
        ("first hit in a target file", first_hit_in_target_file(hits[2:], (a, b))),
        ("first hit elsewhere", not first_hit_in_target_file(hits, (a, b))),
        ("distinct files", distinct_files(hits) == 3),
    ]
    failed = [name for name, got, want in checks if abs(got - want) > 1e-6]
    failed += [name for name, ok in bools if not ok]
    for name, got, want in checks:
        print(f"  {name:<28} {got:.6f}  (by hand {want:.6f})")
    print("self-test: " + ("ok" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


# ---------------------------------------------------------------- data from the cache

class MissingData(Exception):
    """What is missing from the cache and the one line that fetches it."""


@dataclass(frozen=True)
class Repo:
    name: str
    url: str
    revision: str
    benchmark_root: str | None


def semble_dir(cache: Path) -> Path:
    return cache / "semble" / "benchmarks"


def load_repos(cache: Path) -> dict[str, Repo]:
    path = semble_dir(cache) / "repos.json"
    if not path.is_file():
        raise MissingData(
            f"{path} is missing; get semble's benchmark data with: git clone https://github.com/michalfedyna/semble "
            f"/tmp/semble && git -C /tmp/semble archive {SEMBLE_COMMIT} benchmarks/repos.json "
            f"benchmarks/annotations benchmarks/results/{PUBLISHED} "
            f"| (mkdir -p {cache / 'semble'} && tar -x -C {cache / 'semble'})"
        )
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {r["name"]: Repo(r["name"], r["url"], r["revision"], r.get("benchmark_root")) for r in raw}


def _target(raw: str | dict) -> Target:
    if isinstance(raw, str):
        return Target(raw)
    start, end = raw.get("start_line"), raw.get("end_line")
    return Target(str(raw["path"]), None if start is None else int(start), None if end is None else int(end))


def infer_category(text: str) -> str:
    """Semble's fallback for an annotation without a category."""
    if " " not in text.strip():
        return "symbol"
    return "architecture" if text.lower().startswith("how ") else "semantic"


def load_queries(cache: Path, repo: str) -> list[Query]:
    path = semble_dir(cache) / "annotations" / f"{repo}.json"
    if not path.is_file():
        raise MissingData(f"{path} is missing; extract benchmarks/annotations from semble as for repos.json")
    out = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        if item.get("repo", repo) != repo:
            continue
        category = item.get("category")
        targets = tuple(_target(t) for t in item.get("relevant", []) + item.get("secondary", []))
        out.append(Query(repo, item["query"], category if isinstance(category, str) else infer_category(item["query"]),
                         targets))
    return out


def load_published(path: Path) -> dict[str, dict]:
    """Semble's per-repository results by name; empty when the file is absent."""
    if not path.is_file():
        return {}
    return {r["repo"]: r for r in json.loads(path.read_text(encoding="utf-8")).get("repos", [])}


@dataclass(frozen=True)
class Substitute:
    """A revision (and directory) used in place of the pinned one, and why."""

    revision: str
    why: str
    index_root: str | None = None


def load_substitutes(cache: Path) -> dict[str, Substitute]:
    path = cache / "substitutes.json"
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {name: Substitute(s["revision"], s.get("why", ""), s.get("index_root")) for name, s in raw.items()}


def checkout(cache: Path, repo: Repo, substitute: Substitute | None = None) -> Path:
    """The benchmark_root of the repository's work tree, checked to be at the pinned revision
    (or at the substitute's revision, its index_root then taking benchmark_root's place)."""
    tree = cache / "checkouts" / repo.name
    revision = substitute.revision if substitute else repo.revision
    get = (f"git clone {repo.url} {tree} && git -C {tree} checkout {revision}"
           f"  (or clone a local copy, e.g. the `fetch` snapshot github:{_slug(repo.url)})")
    if not (tree / ".git").exists():
        raise MissingData(f"no checkout of {repo.name} at {tree}; get it with: {get}")
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    if head != revision:
        wanted = "substitute" if substitute else "pinned"
        raise MissingData(f"{tree} is at {head[:12] or 'no commit'}, not the {wanted} "
                          f"{revision[:12]}; run: git -C {tree} checkout {revision}")
    where = (substitute.index_root if substitute else None) or repo.benchmark_root
    root = tree / where if where else tree
    if not root.is_dir():
        raise MissingData(f"benchmark_root {root} is not a directory in the checkout of {repo.name}")
    return root


def _slug(url: str) -> str:
    m = re.search(r"github\.com/([^/]+/[^/]+?)(?:\.git)?$", url)
    return m.group(1) if m else url


# ---------------------------------------------------------------- running SAI

def open_project(cache: Path, repo: Repo, root: Path, embedder: str, model: str | None, ext: str | None = None):
    from sai.config import load_config
    from sai.project import Project
    from sai.settings import DEFAULT_MODELS

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{embedder}-{model or DEFAULT_MODELS[embedder]}"
                  + (f"-ext-{ext}" if ext else ""))
    index_dir = cache / "index" / repo.name / slug
    index_dir.mkdir(parents=True, exist_ok=True)
    flags = {"root": str(root), "duckdb.path": str(index_dir / "code.duckdb"), "embedder": embedder, "model": model}
    if ext:
        flags["ext"] = ext
    env = {k: v for k, v in os.environ.items() if k == "OLLAMA_HOST"}
    return Project(load_config(flags=flags, env=env, cwd=index_dir))


def index_repo(project) -> tuple[int, int, float]:
    from sai.indexing.indexer import index

    started = time.perf_counter()
    report = index(project)
    return report.chunks, report.embedded, time.perf_counter() - started


@contextmanager
def indexed(cache: Path, name: str, specs: dict[str, Repo], subs: dict[str, Substitute]
            ) -> Iterator[tuple[Path, Any]]:
    """A repository of repos.json at its checkout, indexed with the bundled model: (its indexed
    root, the open project), closed afterwards."""
    repo = specs[name]
    root = checkout(cache, repo, subs.get(name))
    project = open_project(cache, repo, root, "local", None)
    try:
        index_repo(project)
        yield root, project
    finally:
        project.close()


def reporting_missing(measure: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """measure(args), with data missing from the cache said in one line (exit 1)."""
    try:
        return measure(args)
    except MissingData as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


@dataclass
class Outcome:
    query: Query
    mode: str
    ndcg: float
    first_in_target: bool
    files: int
    ranks: list[int | None]
    top: list[tuple[str, int, int]]

    @property
    def category(self) -> str:
        return self.query.category


def run_query(project, repo: Repo, q: Query, mode: str) -> Outcome:
    from sai.query.search import search

    prefix = (repo.benchmark_root.strip("/") + "/") if repo.benchmark_root else ""
    found = search(project, q.text, limit=TOP, mode=mode)
    hits = [(prefix + h.path, h.start_line, h.end_line) for h in found]
    # the other parts a hit shows, each its own range: the chunks folded into it (its file's, which
    # need not be contiguous) and the near-identical copies it lists in other files
    copies = [[*((prefix + h.path, c.start_line, c.end_line) for c in h.chunks or ()),
               *((prefix + c.path, c.start_line, c.end_line) for c in h.copies or ())] for h in found]
    return Outcome(q, mode, query_ndcg(hits, q.targets, copies=copies), first_hit_in_target_file(hits, q.targets),
                   distinct_files(hits), [target_rank(hits, t, copies) for t in q.targets], hits)


# ---------------------------------------------------------------- report

def print_verbose(o: Outcome) -> None:
    print(f"    [{o.mode:<8}|{o.query.category:<12}] ndcg={o.ndcg:.3f} ranks={o.ranks} q={o.query.text!r}")
    print(f"      top3: {[f'{p}:{s}-{e}' for p, s, e in o.top[:3]]}")


# ---------------------------------------------------------------- main

def parse_list(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(bad) or '(none)'}; choose from: {', '.join(allowed)}")
    return items


def parse_repos(value: str) -> list[str]:
    """Repository names; a named set (NAMED_SETS) stands for its repositories. Any other name of
    semble's repos.json is a held-out check (checked against repos.json when the run starts)."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise argparse.ArgumentTypeError("no repository given; name some, or `tuning`")
    return list(dict.fromkeys(n for v in items for n in NAMED_SETS.get(v, (v,))))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repos", type=parse_repos,
                   help="comma-separated names from semble's repos.json, or a named set: `tuning` (the 18 "
                        "tuned on), `held-out`, `langs-tuning`, `langs-untouched`, `untouched`")
    p.add_argument("--ext", default=None, help="comma-separated extensions to index instead of the defaults")
    p.add_argument("--modes", type=lambda v: parse_list(v, MODES, "mode"), default=list(MODES))
    p.add_argument("--categories", type=lambda v: parse_list(v, CATEGORIES, "category"), default=list(CATEGORIES))
    p.add_argument("--max-queries", type=int, default=None, help="first N queries per repo (after --categories)")
    p.add_argument("--embedder", choices=EMBEDDERS, default="local")
    p.add_argument("--model", default=None, help="embedding model (default: the embedder's default)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--published", type=Path, default=None,
                   help=f"semble results JSON (default CACHE/semble/benchmarks/results/{PUBLISHED})")
    p.add_argument("--verbose", action="store_true",
                   help="print each query's ranks and top hits (not for the untouched sets' repositories)")
    p.add_argument("--json", type=Path, default=None,
                   help="also write each repository's figures (per mode: all and per category) to this file")
    p.add_argument("--self-test", action="store_true", help="check the metric on hand-made rankings and exit")
    args = p.parse_args(argv)
    untouched = [n for n in args.repos or () if n in LANGS_UNTOUCHED + UNTOUCHED]
    if args.verbose and untouched:
        p.error(f"--verbose would show the per-query results of untouched repositories: {', '.join(untouched)}")
    if args.max_queries is not None and args.max_queries < 1:
        p.error(f"--max-queries must be at least 1, got {args.max_queries}")
    return args


def run(args: argparse.Namespace) -> int:
    cache = args.cache.resolve()
    specs = load_repos(cache)
    published = load_published(args.published or semble_dir(cache) / "results" / PUBLISHED)
    substitutes = load_substitutes(cache)
    plan = []
    for name in args.repos:  # check every repo's data before the slow part starts
        if name not in specs:
            raise MissingData(f"{name} is not in {semble_dir(cache) / 'repos.json'}; extract a newer semble snapshot")
        queries = [q for q in load_queries(cache, name) if q.category in args.categories]
        plan.append((specs[name], checkout(cache, specs[name], substitutes.get(name)), queries))
    whole = args.max_queries is None and set(args.categories) == set(CATEGORIES)
    cats_whole = set(args.categories) if args.max_queries is None else set()
    print(f"semble benchmark data {SEMBLE_COMMIT}; embedder {args.embedder} {args.model or '(default model)'}; "
          f"top {TOP}; modes {', '.join(args.modes)}; cache {cache}")
    by_repo: dict[str, list[Outcome]] = {}
    for repo, root, queries in plan:
        queries = queries[: args.max_queries] if args.max_queries else queries
        project = open_project(cache, repo, root, args.embedder, args.model, args.ext)
        try:
            chunks, embedded, seconds = index_repo(project)
            semble_chunks = published.get(repo.name, {}).get("chunks", "?")
            sub = substitutes.get(repo.name)
            at = f"{sub.revision[:10]} (not the pinned {repo.revision[:10]}: {sub.why})" if sub else repo.revision[:10]
            held = (" [untouched]" if repo.name in LANGS_UNTOUCHED + UNTOUCHED
                    else "" if repo.name in TUNING + LANGS_TUNING else " [held out]")
            print(f"\n{repo.name}{held}@{at} {root.relative_to(cache / 'checkouts' / repo.name)}: {chunks} chunks "
                  f"(semble {semble_chunks}), {embedded} embedded this run, index {seconds:.1f} s")
            outcomes = []
            for q in queries:
                for mode in args.modes:
                    outcomes.append(run_query(project, repo, q, mode))
                    if args.verbose:
                        print_verbose(outcomes[-1])
        finally:
            project.close()
        by_repo[repo.name] = outcomes
        print_repo(repo.name, outcomes, len(queries), args.modes, published.get(repo.name), whole, cats_whole)
    print_overall(by_repo, args.modes, published, whole, cats_whole, NAMED_SETS)
    if args.json:
        args.json.write_text(json.dumps({n: {m: repo_figures(o, m) for m in args.modes} for n, o in by_repo.items()},
                                        indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.self_test or not args.repos:  # `make bench` runs every benchmark without arguments
        failed = self_test()
        if not args.self_test:
            print(f"to measure, give --repos `tuning` (= {', '.join(TUNING)}) or other names of semble's repos.json")
        return failed
    from sai.errors import SaiError

    try:
        return run(args)
    except MissingData as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except SaiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
