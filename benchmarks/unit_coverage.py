"""How many of a C or C++ tree's definitions does the chunker make units of? A check of the
parse behind the `symbol` category, on trees that may be read (it refuses the untouched sets).

universal-ctags, which shares nothing with SAI's chunker, lists the functions, classes, structs,
unions and enums of the tree's C and C++ files (not local to a function, not anonymous); a
definition is covered when a unit of its name starts at its line or up to 8 lines above it
(a template line, an attribute line). A lost definition can still be found by the ranking's line
rule, but not as a unit, and a misparse often costs every definition after it in the file. The
files are chunked in the process (no index, no embedder), each with the language SAI gives it
(`languages.language_of`: a C++ `.h` is C++). Prints, per tree and kind, lost / all;
`--lost` prints each lost class, struct, union or enum.

    python benchmarks/unit_coverage.py TREE [TREE ...] [--lost]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import repos_quality as rq

from sai.chunking.treesitter import TreeSitterChunker
from sai.source.languages import language_for, language_of

KINDS = ("function", "class", "struct", "union", "enum")
ABOVE = 8  # lines a unit may start above ctags' line of the name


def ctags_definitions(tree: Path) -> dict[str, list[dict]]:
    out = subprocess.run(["ctags", "--output-format=json", "--fields=+nKZ", "--languages=C,C++", "-R", "-f", "-",
                          str(tree)], capture_output=True, text=True, check=True).stdout
    by_file: dict[str, list[dict]] = defaultdict(list)
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") == "tag" and tag.get("kind") in KINDS and tag.get("scopeKind") != "function" \
                and not tag["name"].startswith("__anon") and language_for(tag["path"]) in ("c", "cpp"):
            by_file[tag["path"]].append(tag)
    return by_file


def coverage(tree: Path) -> tuple[Counter[str], Counter[str], list[str]]:
    chunker, lost, every, named = TreeSitterChunker(), Counter[str](), Counter[str](), []
    for path, tags in sorted(ctags_definitions(tree).items()):
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        starts: dict[str, list[int]] = defaultdict(list)
        for chunk in chunker.chunk(path, text, language_of(path, text)):
            if chunk.kind and chunk.symbol:
                starts[chunk.symbol.rsplit(".", 1)[-1]].append(chunk.start_line)
        for tag in tags:
            every[tag["kind"]] += 1
            if not any(start <= tag["line"] <= start + ABOVE for start in starts.get(tag["name"], [])):
                lost[tag["kind"]] += 1
                if tag["kind"] != "function":
                    named.append(f"{tag['kind']} {Path(path).relative_to(tree)}:{tag['line']} {tag['name']}")
    return lost, every, named


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="*", type=Path)
    p.add_argument("--lost", action="store_true", help="print each lost class, struct, union or enum")
    args = p.parse_args()
    if not args.trees:  # `make bench` runs every benchmark without arguments
        print("to measure, give the trees (C or C++ checkouts that may be read)")
        return 0
    unread = [t for t in args.trees if t.resolve().name in (*rq.UNTOUCHED, *rq.LANGS_UNTOUCHED)]
    if unread:
        p.error(f"the untouched sets are never read: {', '.join(map(str, unread))}")
    print(f"{'tree':24} " + " ".join(f"{k:>13}" for k in KINDS) + f" {'all':>13}")
    for tree in args.trees:
        lost, every, named = coverage(tree.resolve())
        cells = [f"{lost[k]}/{every[k]}" for k in KINDS]
        print(f"{tree.name:24} " + " ".join(f"{c:>13}" for c in cells)
              + f" {sum(lost.values())}/{sum(every.values()):>7}", flush=True)
        for line in named if args.lost else []:
            print("  lost", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
