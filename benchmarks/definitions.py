"""Does a bare name find its definition? A proxy for the `symbol` category of repos_quality.py,
for repositories that may be read (it refuses the untouched sets: their names and files stay unread).

universal-ctags, which shares nothing with SAI's chunker, lists each repository's definitions in
the files SAI indexed (repos_quality.py's index of the repository, built there when missing). A
name defined exactly once, of a kind a person looks up (KINDS; not inside a function; 4
characters or more), is queried bare in hybrid mode; it is found at the first of the top 10
hits in the definition's file whose lines hold its first line. Up to `--per-repo` names a
repository (a fixed sample). Prints, per repository and per kind: names, found first (hit@1)
and MRR@10; `--misses` prints each miss with its first hit.

    python benchmarks/definitions.py --repos held-out,langs-tuning [--per-repo 60] [--misses]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import repos_quality as rq

# ctags kinds (across its parsers) of what a person types a name to find
KINDS = frozenset({"function", "method", "class", "struct", "union", "enum", "typedef", "macro", "interface",
                   "trait", "protocol", "module", "type", "alias", "singletonMethod", "object", "implementation",
                   "record", "constructor", "macroFunction", "func", "funcType", "typeclass", "instance"})
LOCAL_SCOPES = frozenset({"function", "method", "func", "singletonMethod", "constructor"})
MIN_NAME = 4
NAME = re.compile(r"[A-Za-z_][\w:-]*")  # not ctags' `operator >` or a shell assignment it took for a function


def definitions(tree: Path, root: Path, indexed: set[str]) -> list[dict]:
    """ctags' definitions of KINDS under root, in files SAI indexed, not local to a function."""
    out = subprocess.run(["ctags", "--output-format=json", "--fields=+nKZ", "-R", "-f", "-", str(root)],
                         capture_output=True, text=True, cwd=tree).stdout
    found = []
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") not in KINDS or tag.get("scopeKind") in LOCAL_SCOPES:
            continue
        path = Path(tag["path"]).resolve().relative_to(root.resolve()).as_posix()
        if path in indexed:
            found.append({"name": tag["name"], "path": path, "line": tag["line"], "kind": tag["kind"]})
    return found


def unique_names(defs: list[dict]) -> list[dict]:
    by_name = defaultdict(list)
    for d in defs:
        by_name[d["name"]].append(d)
    return [ds[0] for name, ds in sorted(by_name.items())
            if len(ds) == 1 and len(name) >= MIN_NAME and NAME.fullmatch(name) and not name.startswith("__anon")]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repos", type=rq.parse_repos, default=[])
    p.add_argument("--per-repo", type=int, default=60)
    p.add_argument("--cache", type=Path, default=rq.DEFAULT_CACHE)
    p.add_argument("--misses", action="store_true", help="print each miss and the first hit")
    args = p.parse_args()
    if not args.repos:  # `make bench` runs every benchmark without arguments
        print("to measure, give --repos (names of semble's repos.json, or `tuning`, `held-out`, `langs-tuning`)")
        return 0
    unread = sorted(set(args.repos) & set(rq.LANGS_UNTOUCHED + rq.UNTOUCHED))
    if unread:
        p.error(f"the untouched sets are never read: {', '.join(unread)}")
    return rq.reporting_missing(measure, args)


def measure(args: argparse.Namespace) -> int:
    from sai.query.search import search

    cache = args.cache.resolve()
    specs, subs = rq.load_repos(cache), rq.load_substitutes(cache)
    kinds: dict[str, list[int | None]] = defaultdict(list)
    every: list[int | None] = []
    print(f"{'repository':20} {'names':>5} {'hit@1':>6} {'MRR@10':>7}")
    for name in args.repos:
        with rq.indexed(cache, name, specs, subs) as (root, project):
            with project.store.read() as reader:
                indexed = set(reader.files())
            names = unique_names(definitions(cache / "checkouts" / name, root, indexed))
            random.Random(7).shuffle(names)
            ranks = []
            for d in sorted(names[: args.per_repo], key=lambda d: d["name"]):
                hits = search(project, d["name"], limit=rq.TOP, mode="hybrid")
                rank = rq.target_rank([(h.path, h.start_line, h.end_line) for h in hits],
                                      rq.Target(d["path"], d["line"], d["line"]))
                ranks.append(rank)
                kinds[d["kind"]].append(rank)
                if args.misses and rank != 1:
                    top = f"{hits[0].path}:{hits[0].start_line} {hits[0].symbol}" if hits else "nothing"
                    print(f"  miss {d['kind']} {d['name']} {d['path']}:{d['line']} rank {rank}; first {top}")
        every += ranks
        print(f"{name:20} {len(ranks):5} {hit1(ranks):6.3f} {mrr(ranks):7.3f}", flush=True)
    print(f"\n{'kind':20} {'names':>5} {'hit@1':>6} {'MRR@10':>7}")
    for kind, ranks in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        print(f"{kind:20} {len(ranks):5} {hit1(ranks):6.3f} {mrr(ranks):7.3f}")
    print(f"{'all':20} {len(every):5} {hit1(every):6.3f} {mrr(every):7.3f}")
    return 0


def hit1(ranks: list[int | None]) -> float:
    return sum(r == 1 for r in ranks) / len(ranks) if ranks else 0.0


def mrr(ranks: list[int | None]) -> float:
    return sum(1 / r for r in ranks if r) / len(ranks) if ranks else 0.0


if __name__ == "__main__":
    sys.exit(main())
