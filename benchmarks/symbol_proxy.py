"""Do the names a library is known by find their definition? A proxy of repos_quality.py's
`symbol` category on repositories outside semble's benchmark, in the languages where SAI's
untouched set loses (C++, Bash, Go), so that rules for it are chosen on code that may be read.

semble's symbol queries are the names a library is known by (`ObjectMapper`, `basic_json`,
`Engine`), most used across its files and often defined more than once (overloads,
specialisations, a partial type, a forward declaration). Here universal-ctags, which shares
nothing with SAI's chunker, lists each tree's definitions in the files SAI indexed; the names
(4 characters or more, not local to a function) are ranked by how many indexed files use them,
and the first `--per-repo` are queried bare in hybrid mode. A name is found at the first of the
top 10 hits whose file holds one of its definitions (`def`), and, where one of those files is
named after the name (`formatter.h` for `formatter`), at the first hit in such a file (`named`).
Prints, per repository: names, hit@1 and MRR@10 of both; `--misses` prints each miss with its
first three hits.

The trees are `fetch` snapshots cloned into CACHE/proxy/<name> (the commit is printed); their
indexes live beside repos_quality.py's, in CACHE/index/proxy-<name>.

    python benchmarks/symbol_proxy.py --repos all|Catch2,mux,... [--per-repo 20] [--misses]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import repos_quality as rq
from definitions import KINDS, MIN_NAME, NAME, definitions, hit1, mrr

# name -> (directory of CACHE/proxy, the directory indexed, relative to it)
PROXIES: dict[str, tuple[str, str]] = {
    "Catch2": ("Catch2", "src/catch2"),  # C++
    "CLI11": ("CLI11", "include/CLI"),  # (not GSL: its headers have no extension, so SAI indexes none)
    "range-v3": ("range-v3", "include"),
    "googletest": ("googletest", "googletest"),
    "doctest": ("doctest", "doctest"),
    "oh-my-bash": ("oh-my-bash", "."),  # Bash
    "rbenv": ("rbenv", "."),
    "mux": ("mux", "."),  # Go
    "echo": ("echo", "."),
}
_WORD = re.compile(r"[A-Za-z_][\w-]*")


def prominent(tree: Path, root: Path, indexed: set[str], count: int) -> list[tuple[str, set[str]]]:
    """The `count` names defined in the tree that most indexed files use, with their files."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for d in definitions(tree, root, indexed):
        if d["kind"] in KINDS and len(d["name"]) >= MIN_NAME and NAME.fullmatch(d["name"]) \
                and not d["name"].startswith("__anon"):
            by_name[d["name"]].add(d["path"])
    users: dict[str, int] = defaultdict(int)
    for key in indexed:
        try:
            words = set(_WORD.findall((root / key).read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
        for word in words & by_name.keys():
            users[word] += 1
    ranked = sorted(by_name, key=lambda n: (-users[n], n))
    return [(n, by_name[n]) for n in ranked[:count]]


def named_after(path: str, name: str) -> bool:
    stem = path.rsplit("/", 1)[-1].split(".")[0]
    return stem.lower().replace("_", "").replace("-", "") == name.lower().replace("_", "").replace("-", "")


def first(hits: list, wanted) -> int | None:  # noqa: ANN001
    return next((rank for rank, h in enumerate(hits, start=1) if wanted(h.path)), None)


def measure(args: argparse.Namespace) -> int:
    from sai.query.search import search

    cache = args.cache.resolve()
    totals: dict[str, list[int | None]] = defaultdict(list)
    heads = ("repository", "commit", "names", "def@1", "MRR", "named", "named@1", "MRR")
    print(" ".join(f"{h:{w}}" for h, w in zip(heads, ("14", "10", ">5", ">6", ">6", ">5", ">7", ">6"), strict=True)))
    for name in args.repos:
        directory, where = PROXIES[name]
        tree = cache / "proxy" / directory
        if not (tree / ".git").exists():
            raise rq.MissingData(f"no tree at {tree}; clone the `fetch` snapshot of {name} there")
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short=10", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        repo = rq.Repo(f"proxy-{name}", "", commit, None)
        project = rq.open_project(cache, repo, tree / where, "local", None)
        try:
            rq.index_repo(project)
            with project.store.read() as reader:
                indexed = set(reader.files())
            defs, named = [], []
            for symbol, paths in prominent(tree, tree / where, indexed, args.per_repo):
                hits = search(project, symbol, limit=rq.TOP, mode="hybrid")
                defs.append(first(hits, paths.__contains__))
                if any(named_after(p, symbol) for p in paths):
                    named.append(first(hits, lambda p, s=symbol, ps=paths: p in ps and named_after(p, s)))
                    miss = named[-1] != 1
                else:
                    miss = defs[-1] != 1
                if args.misses and miss:
                    top = "; ".join(f"{h.path}:{h.start_line} {h.symbol}" for h in hits[:3]) or "nothing"
                    print(f"  miss {symbol} (defined in {', '.join(sorted(paths)[:4])}): {top}")
        finally:
            project.close()
        totals["def"] += defs
        totals["named"] += named
        print(f"{name:14} {commit:10} {len(defs):5} {hit1(defs):6.3f} {mrr(defs):6.3f} {len(named):5} "
              f"{hit1(named):7.3f} {mrr(named):6.3f}", flush=True)
    d, n = totals["def"], totals["named"]
    print(f"{'all':14} {'':10} {len(d):5} {hit1(d):6.3f} {mrr(d):6.3f} {len(n):5} {hit1(n):7.3f} {mrr(n):6.3f}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repos", type=lambda v: list(PROXIES) if v == "all" else [r for r in v.split(",") if r],
                   default=[], help=f"`all` or some of {', '.join(PROXIES)}")
    p.add_argument("--per-repo", type=int, default=20)
    p.add_argument("--cache", type=Path, default=rq.DEFAULT_CACHE)
    p.add_argument("--misses", action="store_true", help="print each miss and the first three hits")
    args = p.parse_args()
    if not args.repos:  # `make bench` runs every benchmark without arguments
        print("to measure, give --repos all (or some of the proxies) with their trees in CACHE/proxy")
        return 0
    unknown = [r for r in args.repos if r not in PROXIES]
    if unknown:
        p.error(f"unknown proxy {', '.join(unknown)}; choose from: {', '.join(PROXIES)}")
    return rq.reporting_missing(measure, args)


if __name__ == "__main__":
    sys.exit(main())
