"""Planted-clone recall and cluster precision of find_duplicates, per threshold, with MiniLM.

    python benchmarks/duplicates_recall.py [--clones 120] [--thresholds 0.75,0.8,...]
    python benchmarks/duplicates_recall.py --repos all|python,go,... [--clones 30] [--seed 7]

`--repos` plants language-aware clones in a slice of one real repository per language, each
unpacked into SAI_BENCH_REPOS (default <SAI_BENCH_CACHE>/repos): aiohttp, axios, vitest, gin,
tokio, commons-lang (benchmarks/_repos.py says which directories and how copies are planted:
methods inside a class of their own, so they parse as methods, and chunked as the indexer
chunks them, long functions into windows; _clones.py how a copy is made). Six renamings, each
copy renamed its own way (seeded per function and renaming): `renamed` (a thesaurus), `vocabulary`
(plausible names drawn from a word list), `abbreviated` (prefixes, consonant skeletons,
initials), `opaque` (`k20`, `q21`), `textual` (a vocabulary rename applied by search-and-replace:
members, strings and comments that share the names change too, comments kept) and `literals`
(a vocabulary rename, every string's words and every number changed); and two Type-3
near-misses, `edited` and `reordered`, not part of the target. rust (tokio) is held out: it was
only measured, never looked at while choosing the shape and its weights. Vectors are cached per
text, so only new copies are embedded on a re-run. The rest of this docstring describes the
default mode, the stdlib calibration.

A slice of the Python stdlib (email, http, urllib, logging, json, concurrent) is copied into a
scratch tree, and renamed copies of N of its functions are planted in `zz_planted/`, in four
flavours, each copy a top-level function of its own. The N are drawn (fixed seed) from functions
of 6-40 lines that have no textual twin in the slice (token-set Jaccard of their code, docstrings
left out, < 0.5 with every other function), so a planted copy's one true duplicate is its original:
  * `renamed`: every identifier the function owns (its name, its parameters except self/cls, its
    local variables) is renamed consistently through `ast`: each word of the name goes through a
    small thesaurus (`value` -> `val`, `header` -> `hdr`, `parse` -> `decode` ...); a name none of
    whose words is in it gets `_alt`, so every name changes; docstrings and comments are dropped
    (`ast.unparse`), and the first pair of adjacent independent assignments (neither reads or
    writes a name the other writes, no calls) is swapped. This is the calibration target;
  * `abbreviated`: the same, but words missing from the thesaurus are also cut to 4 letters
    (`verifiability` -> `veri`): names a tokenizer no longer recognises;
  * `opaque`: the same, but names become meaningless (`func_7`, `a0`, `v3`): structure only;
  * `edited`: renamed, and one statement deleted (the smallest one that is neither the body's
    only statement nor the function's last): a near-miss clone, to show how far the score
    stretches beyond copies. Not part of the calibration target.
The tree is indexed with `embedder: local` (all-MiniLM-L6-v2; `--embedder ollama --model M` to
calibrate another model) through the real indexer (the index is kept in /tmp/sai-bench/recall,
so a re-run embeds nothing new), then find_duplicates
(top_k from the config, min_cluster_size 2, no cluster limit) runs at each threshold. Last, SAI's
own package is indexed and its clusters counted, the largest three listed (_own_tree.py): what
`make demo` shows first.

Definitions printed with the figures:
  recall     = planted pairs (original, copy) that end up in the same cluster / pairs planted
  cluster precision = among reported clusters holding >= 1 planted copy (of one flavour, or of
               any), the fraction whose members are all the original and copies of one function
  pair precision    = among member pairs inside reported clusters that involve a planted copy,
               the fraction that pair a copy with its own original or its sibling copy
  other clusters    = clusters without any planted copy (the stdlib's own near-duplicates or
               noise; not scored, counted to show how the noise grows as the threshold drops)
"""

from __future__ import annotations

import argparse
import ast
import keyword
import random
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import _own_tree
import _repos
import numpy as np
from _common import CACHE_DIR, STDLIB, log

from sai.config import load_config
from sai.duplicates.clusters import find_duplicates
from sai.duplicates.edges import Shapes
from sai.indexing import indexer
from sai.project import Project
from sai.settings import DEFAULT_MODELS
from sai.text import shape

SLICE = ("email", "http", "urllib", "logging", "json", "concurrent")
PLANTED_DIR = "zz_planted"
FLAVOURS = ("renamed", "abbreviated", "opaque", "edited")
THESAURUS = {
    "value": "val", "values": "vals", "data": "payload", "name": "label", "names": "labels",
    "result": "res", "results": "outcomes", "text": "txt", "line": "row", "lines": "rows",
    "path": "location", "file": "fh", "files": "fhs", "item": "entry", "items": "entries",
    "key": "k", "keys": "ks", "index": "idx", "count": "num", "list": "seq", "args": "params",
    "arg": "param", "msg": "message", "message": "msg", "buf": "buffer", "buffer": "buf",
    "size": "length", "start": "begin", "end": "stop", "get": "fetch", "set": "assign",
    "parse": "decode", "read": "load", "write": "save", "make": "build", "create": "new",
    "check": "verify", "add": "append", "remove": "drop", "find": "lookup", "header": "hdr",
    "headers": "hdrs", "string": "strval", "s": "st", "obj": "thing", "node": "elem",
    "part": "piece", "parts": "pieces", "url": "uri", "host": "server", "port": "portnum",
    "timeout": "deadline", "level": "lvl", "record": "entry", "handler": "callback",
    "new": "fresh", "old": "prev", "req": "request", "request": "req", "response": "resp",
    "resp": "response", "addr": "address", "address": "addr", "params": "options",
    "param": "option", "attr": "attribute", "attrs": "attributes", "val": "value",
    "char": "ch", "chars": "chs", "token": "tok", "tokens": "toks", "pos": "offset",
    "i": "n", "j": "m", "k": "kk", "v": "vv", "x": "xx", "n": "cnt", "fp": "stream",
    "f": "func", "e": "err", "exc": "error", "err": "exc", "ret": "out", "out": "ret",
    "content": "body", "body": "content", "encode": "serialize", "decode": "deserialize",
    "format": "render", "send": "transmit", "close": "shutdown", "open": "acquire",
}
ASSIGNS = (ast.Assign, ast.AnnAssign, ast.AugAssign)
SIMILAR_LIMIT = 8  # the MCP tool's default limit
TWIN = 0.5  # token-set Jaccard at which two stdlib functions count as natural near-duplicates


@dataclass(frozen=True)
class Planted:
    fid: int
    path: str  # original file key
    name: str  # the original's function name (the last part of its chunk's symbol)
    start: int  # original function lines (decorators excluded)
    end: int
    copies: dict[str, tuple[int, int]]  # flavour -> line span in zz_planted/<flavour>.py


# --- renaming ---------------------------------------------------------------------------------


def words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in spaced.lower().split("_") if w]


def synonym(name: str, taken: set[str], *, abbreviate: bool = False) -> str:
    parts = [THESAURUS.get(w, w[:4] if abbreviate and len(w) > 5 else w) for w in words(name)]
    new = "_".join(parts) or "x"
    if new == name.lower().strip("_") or new in taken or keyword.iskeyword(new):
        new = f"{new}_alt"
    while new in taken:
        new += "_"
    return new


def owned_names(fn: ast.FunctionDef) -> list[str]:
    """The names a function owns, in first-seen order: its parameters and local variables."""
    declared = {n for node in ast.walk(fn) if isinstance(node, ast.Global | ast.Nonlocal)
                for n in node.names}
    a = fn.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs) if p.arg not in ("self", "cls")]
    params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    stored = [n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    return [n for n in dict.fromkeys(params + stored) if n not in declared]


class Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:  # noqa: N802 (ast's naming)
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        return node


def renamed_copy(fn: ast.FunctionDef, *, flavour: str, fid: int) -> str:
    """Source of a renamed copy of `fn` (a fresh tree; `fn` is not changed)."""
    copy = _bare_copy(fn)
    every = {n.id for n in ast.walk(copy) if isinstance(n, ast.Name)} | set(dir(__builtins__))
    owned = owned_names(copy)
    if flavour == "opaque":
        mapping = {name: f"v{i}" for i, name in enumerate(owned)}
        mapping[copy.name] = f"func_{fid}"
    else:
        mapping, taken = {}, set(every)
        for name in [copy.name, *owned]:
            mapping[name] = synonym(name, taken, abbreviate=flavour == "abbreviated")
            taken.add(mapping[name])
    Renamer(mapping).visit(copy)
    copy.name = mapping[copy.name]
    copy.decorator_list = []
    _swap_independent(copy.body)
    if flavour == "edited":
        _drop_smallest_statement(copy)
    return ast.unparse(copy)


def _drop_smallest_statement(fn: ast.FunctionDef) -> None:
    """Delete the smallest statement of any block holding two or more, never the function's last."""
    blocks = [b for node in ast.walk(fn) for field in ("body", "orelse", "finalbody")
              if isinstance(b := getattr(node, field, None), list) and len(b) >= 2
              and all(isinstance(x, ast.stmt) for x in b)]
    choices = [(len(list(ast.walk(stmt))), n, k, block) for n, block in enumerate(blocks)
               for k, stmt in enumerate(block) if not (block is fn.body and k == len(block) - 1)]
    if choices:
        _, _, k, block = min(choices, key=lambda c: c[:3])
        del block[k]


def _drop_docstrings(fn: ast.AST) -> None:
    for node in ast.walk(fn):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]


def _names(node: ast.AST, ctx: type) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _swap_independent(body: list[ast.stmt]) -> None:
    """Swap the first adjacent pair of assignments that cannot see each other's effects."""
    for i in range(len(body) - 1):
        a, b = body[i], body[i + 1]
        if not (isinstance(a, ASSIGNS) and isinstance(b, ASSIGNS)):
            continue
        if any(isinstance(n, ast.Call | ast.Attribute | ast.Subscript) for s in (a, b)
               for t in _targets(s) for n in ast.walk(t)):
            continue
        if any(isinstance(n, ast.Call | ast.Await | ast.Yield | ast.NamedExpr)
               for s in (a, b) for n in ast.walk(s)):
            continue
        wa, wb = _names(a, ast.Store), _names(b, ast.Store)
        ra, rb = _names(a, ast.Load), _names(b, ast.Load)
        if isinstance(a, ast.AugAssign):
            ra |= wa
        if isinstance(b, ast.AugAssign):
            rb |= wb
        if not (wa & (rb | wb) or wb & ra):
            body[i], body[i + 1] = b, a
            return


def _targets(stmt: ast.stmt) -> list[ast.AST]:
    return list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]


# --- the tree ---------------------------------------------------------------------------------


def slice_files() -> list[Path]:
    found = []
    for top in SLICE:
        found += sorted(p for p in (STDLIB / top).rglob("*.py") if "__pycache__" not in p.parts)
    return found


def candidates(files: list[Path]) -> list[tuple[str, ast.FunctionDef]]:
    """Functions worth planting: one chunk, no nested defs, >= 2 owned names, 6-40 lines bare,
    and no textual twin in the slice (token-set Jaccard of the code without docstrings < TWIN with
    every other function), so a planted copy's only true duplicate is its original."""
    out, tokens = [], []
    for path in files:
        key = path.relative_to(STDLIB).as_posix()
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            text = ast.get_source_segment(source, node) or ""
            tokens.append(frozenset(re.findall(r"\w+", bare_code(node))))
            nested = any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda)
                         for n in ast.walk(node) if n is not node)
            if nested or len(text) > 1800 or len(owned_names(node)) < 2:
                continue
            if 6 <= renamed_copy(node, flavour="opaque", fid=0).count("\n") + 1 <= 40:
                out.append((key, node, len(tokens) - 1))
    return [(key, node) for key, node, t in out if not _has_twin(t, tokens)]


def bare_code(fn: ast.FunctionDef) -> str:
    """The function's code without docstrings or comments: what a twin is judged on (prose in
    docstrings hid stdlib twins such as get_attrtext / get_extended_attrtext)."""
    return ast.unparse(_bare_copy(fn))


def _bare_copy(fn: ast.FunctionDef) -> ast.FunctionDef:
    """A fresh tree of `fn` without docstrings (comments are gone with the parse)."""
    copy = ast.parse(ast.unparse(fn)).body[0]
    assert isinstance(copy, ast.FunctionDef | ast.AsyncFunctionDef)
    _drop_docstrings(copy)
    return copy


def _has_twin(index: int, tokens: list[frozenset[str]]) -> bool:
    mine = tokens[index]
    for other_index, other in enumerate(tokens):
        if other_index == index or len(other) < TWIN * len(mine) or len(mine) < TWIN * len(other):
            continue
        if len(mine & other) >= TWIN * len(mine | other):
            return True
    return False


def write_tree(root: Path, count: int, seed: int) -> list[Planted]:
    if root.exists():
        shutil.rmtree(root)
    files = slice_files()
    for path in files:
        target = root / path.relative_to(STDLIB)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    chosen = random.Random(seed).sample(candidates(files), count)
    chosen.sort(key=lambda kn: (kn[0], kn[1].lineno))
    sources = {f: ["# Planted renamed copies (benchmarks/duplicates_recall.py).", ""] for f in FLAVOURS}
    spans: list[dict[str, tuple[int, int]]] = [{} for _ in chosen]
    for fid, (_, fn) in enumerate(chosen):
        for flavour in FLAVOURS:
            lines = sources[flavour]
            text = renamed_copy(fn, flavour=flavour, fid=fid).split("\n")
            spans[fid][flavour] = (len(lines) + 1, len(lines) + len(text))
            lines += [*text, "", ""]
    (root / PLANTED_DIR).mkdir()
    for flavour in FLAVOURS:
        text = "\n".join(sources[flavour]) + "\n"
        ast.parse(text)  # the copies must be valid Python, as real copies would be
        (root / PLANTED_DIR / f"{flavour}.py").write_text(text)
    return [Planted(fid, key, fn.name, fn.lineno, fn.end_lineno, spans[fid])
            for fid, (key, fn) in enumerate(chosen)]


# --- scoring ----------------------------------------------------------------------------------


def label_of(member, planted: list[Planted]) -> tuple[int, str] | None:
    """(function id, 'original' or flavour) of a cluster member, None for other code."""
    for p in planted:
        if is_original(member, p):
            return p.fid, "original"
        for flavour, (a, b) in p.copies.items():
            if member.path == f"{PLANTED_DIR}/{flavour}.py" and (member.start_line, member.end_line) == (a, b):
                return p.fid, flavour
    return None


def is_original(chunk, p: Planted) -> bool:
    """The chunk of the planted function's original: same file, its symbol, holding its def."""
    return (chunk.path == p.path and (chunk.symbol or "").split(".")[-1] == p.name
            and chunk.start_line <= p.start <= chunk.end_line)


def score(clusters, planted: list[Planted]) -> dict[str, float]:
    together = {f: 0 for f in FLAVOURS}
    holding = {f: [0, 0] for f in ("any", *FLAVOURS)}  # clusters holding such a copy, correct ones
    pairs = good_pairs = other = 0
    for c in clusters:
        labels = [label_of(m, planted) for m in c.members]
        kinds = {lab[1] for lab in labels if lab and lab[1] != "original"}
        if not kinds:
            other += 1
            continue
        fids = {lab[0] if lab else None for lab in labels}
        correct = len(fids) == 1 and None not in fids
        for kind in ("any", *kinds):
            holding[kind][0] += 1
            holding[kind][1] += correct
        for a in range(len(labels)):
            for b in range(a + 1, len(labels)):
                la, lb = labels[a], labels[b]
                if (la and la[1] != "original") or (lb and lb[1] != "original"):
                    pairs += 1
                    good_pairs += bool(la and lb and la[0] == lb[0])
        for fid in {lab[0] for lab in labels if lab}:
            present = {lab[1] for lab in labels if lab and lab[0] == fid}
            for flavour in FLAVOURS:
                together[flavour] += "original" in present and flavour in present
    return {
        **{f"recall_{f}": together[f] / len(planted) for f in FLAVOURS},
        **{f"precision_{k}": (ok / n if n else 1.0) for k, (n, ok) in holding.items()},
        "pair_precision": good_pairs / pairs if pairs else 1.0,
        "clusters": len(clusters), "with_copy": holding["any"][0], "other": other,
    }


@dataclass
class Similarities:
    cosines: dict[str, np.ndarray]  # flavour or "unrelated" -> one value per planted function
    shapes: dict[str, np.ndarray]  # the same pairs' shape similarity (None: a chunk has no shape)
    top: list[list[tuple[float, int]]]  # each original's SIMILAR_LIMIT nearest (score, row)
    renamed_rows: list[int]  # each planted function's renamed copy


def pair_similarities(project: Project, planted: list[Planted]) -> Similarities:
    """Cosine and shape similarity of each copy to its original and of each original to its best
    unrelated match (by cosine), and what `similar --path <original>` would list (its nearest
    chunks but itself)."""
    with project.store.read() as reader:
        rows, matrix, signatures = reader.all_chunks()
    shapes = Shapes.of(signatures)
    where = {(r.path, r.start_line, r.end_line): n for n, r in enumerate(rows)}
    pairs: dict[str, list[tuple[int, int]]] = {f: [] for f in (*FLAVOURS, "unrelated")}
    planted_rows: set[int] = set()
    originals, renamed = [], []
    for p in planted:
        orig = next(n for n, r in enumerate(rows) if is_original(r, p))
        originals.append(orig)
        for flavour, (a, b) in p.copies.items():
            n = where[(f"{PLANTED_DIR}/{flavour}.py", a, b)]
            planted_rows.add(n)
            pairs[flavour].append((orig, n))
        renamed.append(where[(f"{PLANTED_DIR}/renamed.py", *p.copies["renamed"])])
    paths = np.array([r.path for r in rows])
    top = []
    for orig in originals:
        sims = matrix @ matrix[orig]
        sims[orig] = -2
        best = np.argsort(-sims, kind="stable")[:SIMILAR_LIMIT]
        top.append([(float(sims[j]), int(j)) for j in best])
        sims[list(planted_rows)] = -1
        sims[paths == rows[orig].path] = -1  # its own file: nested chunks, not duplicates
        pairs["unrelated"].append((orig, int(sims.argmax())))
    cosines, shape_sims = {}, {}
    for name, found in pairs.items():
        i, j = (np.array(side) for side in zip(*found, strict=True))
        cosines[name] = np.einsum("ij,ij->i", matrix[i], matrix[j])
        shape_sims[name] = np.where(shapes.known[i] & shapes.known[j],
                                    shape.similarity(shapes.sigs, i, j), np.nan)
    return Similarities(cosines, shape_sims, top, renamed)


def similar_figures(sims: Similarities, threshold: float) -> tuple[float, float]:
    """(share of originals whose renamed copy `similar` lists at this floor, mean hits listed)."""
    found = sum(any(j == copy and s >= threshold for s, j in top)
                for top, copy in zip(sims.top, sims.renamed_rows, strict=True))
    listed = [sum(s >= threshold for s, _ in top) for top in sims.top]
    return found / len(sims.top), float(np.mean(listed))


def run_repos(args: argparse.Namespace) -> None:
    """The --repos mode (benchmarks/_repos.py), with MiniLM's default threshold and top_k."""
    config = load_config(cwd=Path.cwd(), env={}, flags={"embedder": "local"})
    languages = list(_repos.REPOS) if args.repos == "all" else args.repos.split(",")
    unknown = [lang for lang in languages if lang not in _repos.REPOS]
    if unknown:
        parser_error = f"unknown language(s) {', '.join(unknown)}; choose from {', '.join(_repos.REPOS)}"
        raise SystemExit(f"error: {parser_error}")
    thresholds = sorted({float(t) for t in args.thresholds.split(",")} | {config.similarity.duplicate_min_score})
    print(f"planted clones in real repositories; model {config.model}; top_k {config.similarity.top_k}; "
          f"default duplicate_min_score {config.similarity.duplicate_min_score:g}; shape version {shape.SHAPE_VERSION}")
    _repos.report(languages, clones=args.clones or 30, seed=args.seed, thresholds=thresholds,
                  default=config.similarity.duplicate_min_score, top_k=config.similarity.top_k, thesaurus=THESAURUS,
                  long=args.long)
    print("each flavour is scored on its own: the slice plus that flavour's copies only\n"
          "recall: planted (original, copy) pairs of that flavour in one cluster / copies planted\n"
          "purity: among clusters holding a copy of that flavour, the fraction whose members are all "
          "one function's original and copies\n"
          "score: the duplicate score (cosine and shape similarity, sai/duplicates/score.py) of each copy "
          "with its original, and of each original with its best match among the repository's other units\n"
          "margin: the 5th percentile of the renamed copies' scores (the six renamings) minus the 95th "
          "percentile of the best unrelated scores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clones", type=int, default=None, help="120 (stdlib), 30 (--repos)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--long", type=int, default=_repos.LONG,
                        help=f"--repos: long functions (cut into windows) planted per language ({_repos.LONG})")
    parser.add_argument("--thresholds", default="0.65,0.7,0.75,0.8,0.85,0.9")
    parser.add_argument("--embedder", default="local", help="local (default) or ollama")
    parser.add_argument("--model", default=None, help="default: the embedder's default model")
    parser.add_argument("--repos", default=None, metavar="LANGS",
                        help="planted clones in real repositories instead of the stdlib: a comma list "
                             f"of languages or 'all' ({', '.join(_repos.REPOS)}); --clones defaults to 30")
    parser.add_argument("--own-tree", type=Path, default=None,
                        help="the tree whose clusters close the run (default: the running sai package)")
    args = parser.parse_args()
    if args.repos:
        run_repos(args)
        return
    root = CACHE_DIR / "recall" / "tree"
    planted = write_tree(root, args.clones or 120, args.seed)
    # outside the tree, which is rewritten each run; one index file per embedder and model
    model = args.model or DEFAULT_MODELS[args.embedder]
    db = CACHE_DIR / "recall" / f"code-{re.sub(r'[^A-Za-z0-9_.-]', '_', f'{args.embedder}-{model}')}.duckdb"
    flags = {"embedder": args.embedder, "root": str(root), "duckdb.path": str(db), "model": model}
    project = Project(config := load_config(cwd=root, env={}, flags=flags))
    started = time.perf_counter()
    report = indexer.index(project)
    log(f"indexed {report.chunks} chunks ({report.embedded} embedded) in "
        f"{time.perf_counter() - started:.0f} s")
    default = config.similarity.duplicate_min_score
    print(f"tree: stdlib {', '.join(SLICE)} + {len(planted)} functions planted {len(FLAVOURS)} times "
          f"({', '.join(FLAVOURS)} copies); {report.chunks} chunks; model {config.model}; "
          f"top_k {config.similarity.top_k}; default duplicate_min_score {default:g}, "
          f"find_similar_min_score {config.similarity.find_similar_min_score:g}")
    sims = pair_similarities(project, planted)
    for kind, table in (("cosine", sims.cosines), ("shape", sims.shapes)):
        for name, values in table.items():
            what = "copy vs its original" if name != "unrelated" else "original vs best match elsewhere"
            q = np.nanquantile(values, [0, 0.05, 0.5, 0.95, 1])
            missing = int(np.isnan(values).sum())
            print(f"  {kind}, {name:<11} ({what:<32}): min {q[0]:.3f}  p5 {q[1]:.3f}  "
                  f"median {q[2]:.3f}  p95 {q[3]:.3f}  max {q[4]:.3f}"
                  + (f"  ({missing} without a shape)" if missing else ""))
    thresholds = sorted({float(t) for t in args.thresholds.split(",")} | {default})
    print(f"{'min_score':>9}  {'recall: renamed':>15}  {'abbrev.':>7}  {'opaque':>6}  {'edited':>6}  "
          f"{'cluster prec: renamed':>21}  {'all':>5}  {'pair prec':>9}  {'clusters':>8}  "
          f"{'w/ copy':>7}  {'other':>5}")
    for t in thresholds:
        clusters = find_duplicates(project, min_score=t, min_cluster_size=2,
                                          max_clusters=10**9)
        s = score(clusters, planted)
        mark = "  <- default" if t == default else ""
        print(f"{t:>9g}  {s['recall_renamed']:>15.3f}  {s['recall_abbreviated']:>7.3f}  "
              f"{s['recall_opaque']:>6.3f}  {s['recall_edited']:>6.3f}  {s['precision_renamed']:>21.3f}  "
              f"{s['precision_any']:>5.3f}  {s['pair_precision']:>9.3f}  {s['clusters']:>8}  "
              f"{s['with_copy']:>7}  {s['other']:>5}{mark}")
    print(f"similar --path <original> --limit {SIMILAR_LIMIT}:")
    print(f"{'min_score':>9}  {'lists its renamed copy':>22}  {'hits listed (mean)':>18}")
    for t in sorted(set(thresholds) | {config.similarity.find_similar_min_score}):
        found, listed = similar_figures(sims, t)
        mark = "  <- default" if t == config.similarity.find_similar_min_score else ""
        print(f"{t:>9g}  {found:>22.3f}  {listed:>18.1f}{mark}")
    print("recall: planted (original, copy) pairs of that flavour in one cluster / planted\n"
          "cluster prec: among clusters holding a copy (of that flavour / of any), the fraction "
          "whose members are all one function's original and copies\n"
          "pair prec: member pairs involving a copy that pair it with its own original or sibling\n"
          "other: clusters without a planted copy (the stdlib's own near-duplicates; not scored)")
    project.close()
    _own_tree.report(embedder=args.embedder, model=model, tree=args.own_tree)


if __name__ == "__main__":
    main()
