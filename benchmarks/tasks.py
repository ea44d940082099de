"""Real tasks: past commits of public repositories replayed, their subjects asked, scored by the files they changed.

Each task is a commit: its tree is indexed as it was at the commit's parent, the commit's subject
is the query, and the answer is scored by the source files the commit changed. SAI's answer is
measured beside two file-ranking baselines in the same run.

Selection (benchmarks/_tasks_select.py applies it; nothing is picked by hand): walking the
newest 3,000 first-parent commits from each repository's pinned head (REPOS), a commit is a
task when
- it is not a merge and its author is no bot ([bot], dependabot, renovate, github-actions);
- its subject, a trailing pull-request reference "(#123)" left out (the query is asked without
  it), has 4-15 words, holds no version number, does not start with a chore's conventional type
  (chore, ci, docs, build, style, test, release, deps) and holds none of the words release,
  bump, version, merge, typo, format, lint, ci, docs, document, readme, deps, dependency,
  dependabot, renovate, changelog, revert, wip, copyright, license, cleanup, whitespace (and
  their inflections);
- it changes 1-4 source files, every one modified or deleted (none added: a task's files must be
  there at the parent; renames count as a delete and an add). A source file has an extension of
  SAI's default set (`sai.source.languages`, documents out) and is neither a test (a directory
  test(s), spec(s), __tests__, testdata, testing, fixtures, e2e, integration, regress, ...; a name
  test_*.py, *_test.go|py|rb|c|rs, *_spec.rb, *.test|spec.[cm][jt]s(x), *Test(s).java), nor
  documentation (under docs, doc, examples, website, benchmarks, ...), nor a build script
  (*.gradle, setup.py, Rakefile, build.rs, ...). Tests and documents changed alongside do not
  count and are not targets; they are indexed like any file.
The newest 30 such commits form the repository's tasks, replayed oldest first.

Split: by repository, fixed before any run. `tuning` (6 repositories, 6 languages) may be looked
into (--verbose prints each task); `untouched` (3 repositories: a second Python one, JavaScript,
Java) is measured only: aggregate figures, no per-repository or per-task lines, --verbose refused.
Every set's figures are also split by whether the subject names a changed file (its basename, or
its stem of 3+ characters, as a whole word).

Metrics, means over the set's tasks: hit@5 (a changed source file among the files of the first
5 entries), MRR (1/rank of the first entry in a changed file, over the answer's entries), recall@10
(share of the changed source files among the files of the first 10), and the answer's size:
characters of the JSON the MCP tool sai_search_code returns, built by the server's own code with
its default token budget, and tokens at 4 characters each. SAI's entries are the hits that answer
holds (the budget may leave some out; a hit's folded copies in other files count at its rank: the
answer lists them with it).
Methods:
- `sai`: `sai.search`, hybrid, 10 hits (the independent check's answer; the MCP tool's default is 8);
- `sai-chunk`: the same one hit per chunk (group_by "chunk": a file's chunks take places of their own);
- `bm25`: Okapi BM25 (k1 1.2, b 0.75) over whole files, terms by SAI's own lexical tokens
  (`sai.text.lexical.tokens`: identifiers whole and split, lower case; the path's included)
  on both sides, the query's distinct terms less a fixed stopword list;
- `grep`: files by how many distinct query terms they hold, ties by the terms' total occurrences.
Both baselines rank the files SAI indexed at that parent, read from the work tree there.

Replay and cache (--cache, default $SAI_BENCH_CACHE/tasks, $SAI_BENCH_CACHE defaulting to
/tmp/sai-bench):

    CACHE/checkouts/<repo>/                 a clone (of the `fetch` snapshot) moved to each parent
    CACHE/index/<repo>/<key>/work/          the index moved along the parents, oldest first:
                                            `sai.index` (embedder local, default model) is
                                            incremental, so the cost is one full index plus deltas
    CACHE/index/<repo>/<key>/at/<parent>/   a copy of that index at each task's parent (cp
                                            --reflink=auto: a full copy on ext4)

<key> names the model and a digest of the index's schema version and `Project.chunking_signature()`
(chunker and its version, lexemes and shape versions, chunk size): when any of them changes the
index is built again, as `--reindex` forces. A run whose copies exist embeds nothing: it checks
the tree out at each parent (for the baselines and the hits' stale flags) and asks the copy, so a
ranking change is measured again in minutes. Run it against any worktree's SAI with the shared cache:

    cd WORKTREE && PYTHONPATH=$PWD nice python benchmarks/tasks.py --set tuning [--repos scrapy,caddy]
        [--max-tasks N] [--verbose] [--cache DIR] [--reindex] [--json FILE]
    python benchmarks/tasks.py --self-test     (also what a run without --set or --repos does)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _tasks_score import Corpus, Scores, bm25_files, file_terms, grep_files, query_terms, score
from _tasks_select import Task, git, query_of, select

TASKS_PER_REPO = 30
DEFAULT_CACHE = Path(os.environ.get("SAI_BENCH_CACHE", "/tmp/sai-bench")) / "tasks"
METHODS = ("sai", "sai-chunk", "bm25", "grep")
TOP = 10


@dataclass(frozen=True)
class Repo:
    name: str
    slug: str  # github owner/name
    language: str
    head: str  # the pinned head the selection walks back from
    first: str  # the oldest task's commit: the tasks lie in first..head (recorded from the first selection)


REPOS = (
    Repo("scrapy", "scrapy/scrapy", "python", "11079cb1c85b9e75a39a7269943c69d1a975d485",
         "95fe7acc86f83643bfa98d5a0da97b8457a61774"),
    Repo("caddy", "caddyserver/caddy", "go", "0cf03d32f7d99cf160d5375e8a40fbe3d910d515",
         "945d199724f17f313c7fbc90eceba70fe37f47e6"),
    Repo("hono", "honojs/hono", "typescript", "28a9c128912de19f3fb28b00ae289c9b93f6f392",
         "402eb3abe561914f41ee0f8e37f1d7f211f1ee51"),
    Repo("ripgrep", "BurntSushi/ripgrep", "rust", "3fce3b5bb0236da2df6d99672afb8a719642eca7",
         "b3dc4b09988b4fe7d8ff69ad576623d57f7c3b75"),
    Repo("puma", "puma/puma", "ruby", "ff2e2126ee2f0f97e21c57ce1967afde1b6f05a1",
         "1183dc98693e8c5bd9ae0c03eda395e27304c869"),
    Repo("tmux", "tmux/tmux", "c", "c1f947a3c5bc72a40c32dead736f84c4628791ec",
         "990c724bd8ad28d8c2475b0e599c9d6ebf81ef68"),
    Repo("poetry", "python-poetry/poetry", "python", "f46702336862f30050d5c641d5ed6f7568ded793",
         "b760721672011534ca3607d17e3bf61a4dc6ed90"),
    Repo("mocha", "mochajs/mocha", "javascript", "e6b9ee773481fd739ae24caeb42f32ac0b010f95",
         "295c168628c2583245fb67d371b640309ba243ba"),
    Repo("google-java-format", "google/google-java-format", "java", "ecba4fb24fd064a64d2918c5fdb45546d08e3063",
         "b0ef30ae3634bd7016159a62645397597d0b2fde"),
)
BY_NAME = {r.name: r for r in REPOS}
SETS = {"tuning": ("scrapy", "caddy", "hono", "ripgrep", "puma", "tmux"),
        "untouched": ("poetry", "mocha", "google-java-format")}
UNTOUCHED = frozenset(SETS["untouched"])


class MissingData(Exception):
    """What is missing from the cache and the line that gets it."""


# ---------------------------------------------------------------- checkouts and index copies

def checkout(cache: Path, repo: Repo) -> Path:
    tree = cache / "checkouts" / repo.name
    if not (tree / ".git").exists():
        raise MissingData(f"no clone of {repo.name} at {tree}; get it with: git clone "
                          f"https://github.com/{repo.slug} {tree}")
    try:
        git(tree, "cat-file", "-e", repo.head + "^{commit}")
    except subprocess.CalledProcessError:
        raise MissingData(f"{tree} lacks the pinned head {repo.head}; fetch a newer snapshot of {repo.slug}") from None
    return tree


def move_to(tree: Path, commit: str) -> None:
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", "--force", "--detach", commit], check=True)
    subprocess.run(["git", "-C", str(tree), "clean", "-q", "-fdx"], check=True)


def index_key() -> str:
    from sai.config import load_config
    from sai.models import SCHEMA_VERSION
    from sai.project import Project
    from sai.settings import DEFAULT_MODELS

    config = load_config(flags={"embedder": "local"}, env={}, cwd=Path("/"))
    probe = Project.__new__(Project)
    probe.config = config  # chunking_signature reads the config alone
    digest = hashlib.sha256(f"{SCHEMA_VERSION}|{probe.chunking_signature()}".encode()).hexdigest()[:10]
    model = DEFAULT_MODELS["local"].replace("/", "_")
    return f"local-{model}-{digest}"


def open_project(tree: Path, index_dir: Path, embedder: Any) -> Any:
    from sai.config import load_config
    from sai.project import Project

    index_dir.mkdir(parents=True, exist_ok=True)
    flags = {"root": str(tree), "duckdb.path": str(index_dir / "code.duckdb"), "embedder": "local"}
    return Project(load_config(flags=flags, env={}, cwd=index_dir), embedder=embedder)


def copy_index(work: Path, at: Path) -> None:
    tmp = at.with_name(at.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--reflink=auto", str(work), str(tmp)], check=True)
    tmp.rename(at)


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# ---------------------------------------------------------------- one task

@dataclass
class Outcome:
    task: Task
    targets: tuple[str, ...]  # the changed source files SAI indexed at the parent
    scores: dict[str, Scores]
    chars: dict[str, int]
    top: dict[str, list[str]]


@dataclass
class RepoRun:
    repo: Repo
    outcomes: list[Outcome] = field(default_factory=list)
    dropped: int = 0  # tasks none of whose changed source files SAI indexed
    embedded: int = 0
    chunks: int = 0
    index_seconds: float = 0.0
    query_seconds: float = 0.0
    copy_bytes: int = 0


def answer(hits: list[Any]) -> tuple[list[tuple[str, ...]], int]:
    """The MCP tool's answer to these hits, by the server's own code (its default token budget):
    the files of the hits it holds, best first (a hit's own, then those of the copies folded into
    it, which the answer lists with it), and its length in characters."""
    from sai.mcp.calls import answer_budget, tool_result
    from sai.output.budget import DEFAULT_TOKENS
    from sai.output.payloads import fitted_hits_json

    payload = fitted_hits_json(hits, budget=answer_budget(DEFAULT_TOKENS["search"]))
    text = getattr(tool_result(payload).content[0], "text", "")
    return [(h["path"], *(c["path"] for c in h.get("copies", ()))) for h in json.loads(text)["hits"]], len(text)


class FileTerms:
    """Whole-file term counts of the indexed files, kept by content hash across a repository's tasks."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, str], Any] = {}

    def corpus(self, tree: Path, files: dict[str, Any]) -> Corpus:
        terms = {}
        for key, row in files.items():
            cached = self.cache.get((key, row.file_hash))
            if cached is None:
                text = (tree / key).read_text(encoding="utf-8", errors="replace")
                cached = self.cache[(key, row.file_hash)] = file_terms(key, text)
            terms[key] = cached
        return Corpus.of(terms)


def ask(project: Any, tree: Path, task: Task, terms: FileTerms) -> Outcome | None:
    import sai

    with project.store.read() as reader:
        files = reader.files()
    targets = tuple(t for t in task.targets if t in files)
    if not targets:
        return None
    query = query_of(task.subject)
    listed, chars = answer(sai.search(project, query, limit=TOP, mode="hybrid"))
    chunked, chunked_chars = answer(sai.search(project, query, limit=TOP, mode="hybrid", group_by="chunk"))
    corpus = terms.corpus(tree, files)
    words = query_terms(query)
    ranked = {"sai": listed, "sai-chunk": chunked, "bm25": bm25_files(corpus, words), "grep": grep_files(corpus, words)}
    return Outcome(task, targets, {m: score(r, targets) for m, r in ranked.items()},
                   {"sai": chars, "sai-chunk": chunked_chars}, ranked)


# ---------------------------------------------------------------- one repository

def run_repo(cache: Path, repo: Repo, key: str, embedder: Any, args: argparse.Namespace) -> RepoRun:
    import sai

    tree = checkout(cache, repo)
    tasks = select(repo.name, tree, repo.head, TASKS_PER_REPO)
    if tasks and tasks[0].sha != repo.first:
        print(f"warning: {repo.name}'s oldest task is {tasks[0].sha[:12]}, not the recorded {repo.first[:12]}: "
              "the selection rule changed, so the figures compare with no earlier run")
    if args.max_tasks:
        tasks = tasks[-args.max_tasks:]  # the newest N: their copies are shared with full runs
    base = cache / "index" / repo.name / key
    if args.reindex:
        shutil.rmtree(base, ignore_errors=True)
    work, terms, out = base / "work", FileTerms(), RepoRun(repo)
    missing = sum(not (base / "at" / t.parent[:12]).exists() for t in tasks)
    print(f"{repo.name}: {len(tasks)} tasks, {missing} parents to index", file=sys.stderr, flush=True)
    for task in tasks:
        at = base / "at" / task.parent[:12]
        move_to(tree, task.parent)
        if not at.exists():
            started = time.perf_counter()
            project = open_project(tree, work, embedder)
            try:
                report = sai.index(project)
            finally:
                project.close()
            out.embedded += report.embedded
            out.index_seconds += time.perf_counter() - started
            copy_index(work, at)
        started = time.perf_counter()
        project = open_project(tree, at, embedder)
        try:
            outcome = ask(project, tree, task, terms)
            with project.store.read() as reader:
                out.chunks = reader.chunk_count()
        finally:
            project.close()
        out.query_seconds += time.perf_counter() - started
        out.copy_bytes += dir_bytes(at)
        if outcome is None:
            out.dropped += 1
            continue
        out.outcomes.append(outcome)
        if args.verbose:
            print_task(outcome)
    return out


# ---------------------------------------------------------------- report

def means(outcomes: list[Outcome], method: str) -> tuple[float, float, float, float]:
    n = max(1, len(outcomes))
    s = [o.scores[method] for o in outcomes]
    chars = sum(o.chars.get(method, 0) for o in outcomes) / n
    return sum(x.hit5 for x in s) / n, sum(x.rr for x in s) / n, sum(x.recall10 for x in s) / n, chars


def print_table(title: str, outcomes: list[Outcome], indent: str = "  ") -> None:
    if not outcomes:
        return
    print(f"{indent}{title}: {len(outcomes)} tasks")
    for m in METHODS:
        hit5, mrr, rec, chars = means(outcomes, m)
        size = f"{chars:8.0f} {chars / 4:7.0f}" if m.startswith("sai") else f"{'-':>8} {'-':>7}"
        print(f"{indent}  {m:<9} {hit5:6.3f} {mrr:6.3f} {rec:7.3f} {size}")


HEADER = f"  {'':<9} {'hit@5':>6} {'MRR':>6} {'rec@10':>7} {'chars':>8} {'tokens':>7}"


def print_repo(run: RepoRun) -> None:
    r = run.repo
    print(f"\n{r.name} ({r.language}, {r.slug}@{r.head[:10]}): {len(run.outcomes)} tasks"
          f"{f' ({run.dropped} dropped: no changed file indexed)' if run.dropped else ''}, {run.chunks} chunks at "
          f"the newest parent; this run embedded {run.embedded} in {run.index_seconds:.0f} s, queries "
          f"{run.query_seconds:.0f} s; index copies {run.copy_bytes / 1e6:.0f} MB")
    print(HEADER)
    print_table("all", run.outcomes, indent="")


def print_set(name: str, runs: list[RepoRun]) -> None:
    outcomes = [o for run in runs for o in run.outcomes]
    if not outcomes:
        return
    repos = ", ".join(run.repo.name for run in runs)
    mark = " [untouched: aggregate only]" if name == "untouched" else ""
    print(f"\n== {name}{mark} ({repos}): means over tasks")
    print(HEADER)
    print_table("all", outcomes, indent="")
    print_table("subject names a changed file", [o for o in outcomes if o.task.names_file], indent="")
    print_table("subject names no changed file", [o for o in outcomes if not o.task.names_file], indent="")
    if name == "untouched":
        embedded = sum(r.embedded for r in runs)
        print(f"  replay: embedded {embedded}, index {sum(r.index_seconds for r in runs):.0f} s, queries "
              f"{sum(r.query_seconds for r in runs):.0f} s, copies {sum(r.copy_bytes for r in runs) / 1e6:.0f} MB")


def print_task(o: Outcome) -> None:
    ranks = {m: (round(1 / s.rr) if s.rr else None) for m, s in o.scores.items()}
    print(f"    {o.task.sha[:10]} {'[named] ' if o.task.names_file else ''}{query_of(o.task.subject)!r}")
    print(f"      targets {list(o.targets)}; first rank {ranks}; sai top3 {o.top['sai'][:3]}")


def figures(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    return {m: dict(zip(("hit5", "mrr", "recall10", "chars"), means(outcomes, m), strict=True))
            | {"tasks": len(outcomes)} for m in METHODS}


# ---------------------------------------------------------------- main

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--set", choices=(*SETS, "all"), default=None, help="the repositories of a set")
    p.add_argument("--repos", default=None, help=f"comma-separated names: {', '.join(BY_NAME)}")
    p.add_argument("--max-tasks", type=int, default=None, help="the newest N tasks per repository")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--reindex", action="store_true", help="build the index copies again")
    p.add_argument("--verbose", action="store_true", help="each task's ranks (tuning repositories only)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures per set (and tuning repo)")
    p.add_argument("--self-test", action="store_true", help="check the metrics on hand-made cases and exit")
    args = p.parse_args(argv)
    names = [n.strip() for n in (args.repos or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        p.error(f"unknown repository {', '.join(unknown)}; choose from: {', '.join(BY_NAME)}")
    if args.set:
        names += [n for n in (BY_NAME if args.set == "all" else SETS[args.set]) if n not in names]
    args.names = names
    untouched = sorted(UNTOUCHED & set(names))
    if args.verbose and untouched:
        p.error(f"--verbose would show the tasks of untouched repositories: {', '.join(untouched)}")
    if args.max_tasks is not None and args.max_tasks < 1:
        p.error(f"--max-tasks must be at least 1, got {args.max_tasks}")
    return args


def run(args: argparse.Namespace) -> int:
    from sai.config import load_config
    from sai.embedders import make_embedder

    cache = args.cache.resolve()
    repos = [BY_NAME[n] for n in args.names]
    for repo in repos:  # every clone checked before the slow part starts
        checkout(cache, repo)
    key = index_key()
    embedder = make_embedder(load_config(flags={"embedder": "local"}, env={}, cwd=cache))
    print(f"real tasks: {TASKS_PER_REPO} per repository{f' (newest {args.max_tasks})' if args.max_tasks else ''}; "
          f"index key {key}; cache {cache}")
    started = time.perf_counter()
    runs = []
    for repo in repos:
        run_ = run_repo(cache, repo, key, embedder, args)
        runs.append(run_)
        if repo.name not in UNTOUCHED:
            print_repo(run_)
    for name, members in SETS.items():
        print_set(name, [r for r in runs if r.repo.name in members])
    total = time.perf_counter() - started
    print(f"\nreplay {total:.0f} s: index {sum(r.index_seconds for r in runs):.0f} s "
          f"({sum(r.embedded for r in runs)} chunks embedded), queries {sum(r.query_seconds for r in runs):.0f} s")
    if args.json:
        out: dict[str, Any] = {name: figures([o for r in runs if r.repo.name in m for o in r.outcomes])
                               for name, m in SETS.items()}
        out["repos"] = {r.repo.name: figures(r.outcomes) for r in runs if r.repo.name not in UNTOUCHED}
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.self_test or not args.names:  # `make bench` runs every benchmark without arguments
        from _tasks_score import self_test

        failed = self_test()
        if not args.self_test:
            print(f"to measure, give --set tuning (= {', '.join(SETS['tuning'])}), --set untouched, --set all, "
                  "or --repos NAMES")
        return failed
    from sai.errors import SaiError

    try:
        return run(args)
    except (MissingData, SaiError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
