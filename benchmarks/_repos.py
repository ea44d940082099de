"""The `--repos` mode of duplicates_recall.py: planted clones in real repositories, per language.

Each language's slice of a real repository (REPOS; cloned by hand into SAI_BENCH_REPOS, default
<SAI_BENCH_CACHE>/repos, one directory per repository named as in REPOS, at the commits printed)
is chunked with SAI's ast chunker, as the indexer
would. From its functions, `--clones` (30) are drawn (fixed seed): one chunk each (the chunk holds
the whole function), 6-40 lines, >= 2 names of their own, <= 1800 characters, and no twin in the
slice (token-set Jaccard < 0.5 and shape similarity < 0.6 with every other chunk). Each is copied
in every flavour of _clones.py (renamed, abbreviated, opaque, edited, reordered); a copy is a
chunk of its own in
`zz_planted/<flavour>.<ext>`. The duplicate search then runs as find_duplicates runs it
(sai.duplicates.edges.duplicate_edges over the chunks that have a shape, nesting excluded, union-find),
on MiniLM vectors cached on disk by content (a re-run embeds nothing) and shapes computed afresh
(so a change to sai/text/shape.py needs no model).
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _clones import FLAVOURS, RULES, clone, functions_of, independent_pair
from _common import CACHE_DIR, cached_text_vectors

from sai.chunking.treesitter import TreeSitterChunker
from sai.duplicates.edges import Nesting, Shapes, duplicate_edges, union_find_groups
from sai.text import shape
from sai.text.keywords import keywords_of

REPOS_DIR = Path(os.environ.get("SAI_BENCH_REPOS", str(CACHE_DIR / "repos")))
# language -> (repository, its directories in the slice, extension)
REPOS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "python": ("aiohttp", ("aiohttp",), "py"),
    "javascript": ("axios", ("lib",), "js"),
    "typescript": ("vitest", ("packages/vitest/src/node",), "ts"),
    "go": ("gin", (".",), "go"),
    "rust": ("tokio", ("tokio/src/sync", "tokio/src/time"), "rs"),
    "java": ("commons-lang", ("src/main/java/org/apache/commons/lang3/time",
                              "src/main/java/org/apache/commons/lang3/builder",
                              "src/main/java/org/apache/commons/lang3/text"), "java"),
    # semble's checkouts of the same names serve (SAI_BENCH_REPOS=<cache>/repos-quality/checkouts)
    "lua": ("lazy.nvim", ("lua/lazy",), "lua"),
    "zig": ("zls", ("src",), "zig"),
    "swift": ("alamofire", ("Source",), "swift"),
    "scala": ("cats", ("core/src/main/scala/cats/data",), "scala"),
}
TWIN = 0.5
SHAPE_TWIN = 0.6  # shape similarity at which two chunks of the slice are twins
_NOT_SOURCE = re.compile(r"(^|/)(tests?|testdata|__tests__|examples?|vendor|node_modules|dist)/"
                         r"|_test\.go$|\.d\.ts$|\.test\.")
PLANTED = "zz_planted"


@dataclass(frozen=True)
class Row:
    path: str
    start: int
    end: int
    text: str
    fid: int | None = None  # planted function id (original or copy)
    kind: str | None = None  # "original" or the copy's flavour


def slice_files(language: str) -> list[Path]:
    repo, dirs, ext = REPOS[language]
    found = []
    for d in dirs:
        base = REPOS_DIR / repo / d
        for p in sorted(base.rglob(f"*.{ext}")):
            rel = p.relative_to(REPOS_DIR / repo).as_posix()
            if _NOT_SOURCE.search(rel):
                continue
            found.append(p)
    if not found:
        raise SystemExit(f"error: no .{ext} files under {REPOS_DIR / repo}; clone {repo} there "
                         "(or set SAI_BENCH_REPOS to the directory holding it)")
    return found


def corpus(language: str, *, clones: int, seed: int, thesaurus: dict[str, str]) -> tuple[list[Row], dict]:
    """The slice's chunks plus the planted copies (rows), and what was planted."""
    repo, _, ext = REPOS[language]
    chunker = TreeSitterChunker(max_chunk_chars=2000)
    rows: list[Row] = []
    picks = []
    for p in slice_files(language):
        key = p.relative_to(REPOS_DIR / repo).as_posix()
        text = p.read_text(encoding="utf-8", errors="replace")
        chunks = chunker.chunk(key, text, language)
        first = len(rows)
        rows += [Row(key, c.start_line, c.end_line, c.text) for c in chunks]
        for fn in functions_of(text.encode("utf-8"), language):
            at = _chunk_of(fn, rows, first)
            if at is not None and _plantable(fn):
                picks.append((at, fn))
    tokens = [frozenset(re.findall(r"\w+", r.text)) for r in rows]
    sigs = Shapes.of([shape.signature(r.text, language) for r in rows])
    picks = [(at, fn) for at, fn in picks if not _has_twin(at, tokens) and not _has_shape_twin(at, sigs)]
    rng = random.Random(seed)
    chosen = sorted(rng.sample(picks, min(clones, len(picks))), key=lambda a: a[0])
    # reordering needs an independent pair, which few functions have: it draws its own functions
    # (those chosen above first)
    swappable = [p for p in picks if p not in chosen and independent_pair(p[1]) is not None]
    room = max(0, clones - sum(independent_pair(fn) is not None for _, fn in chosen))
    extra = sorted(rng.sample(swappable, min(room, len(swappable))), key=lambda a: a[0])
    reserved = keywords_of(language)
    applied = {f: 0 for f in FLAVOURS}
    for fid, (at, fn) in enumerate([*chosen, *extra]):
        rows[at] = Row(**{**rows[at].__dict__, "fid": fid, "kind": "original"})
        for flavour in FLAVOURS if fid < len(chosen) else ("reordered",):
            text = clone(fn, flavour=flavour, fid=fid, thesaurus=thesaurus, reserved=reserved)
            if text is None:
                continue
            applied[flavour] += 1
            start = 1 + 100 * fid
            rows.append(Row(f"{PLANTED}/{flavour}.{ext}", start, start + text.count("\n"), text, fid, flavour))
    return rows, {"functions": len(chosen), "applied": applied, "plantable": len(picks)}


def _chunk_of(fn, rows: list[Row], first: int) -> int | None:
    """The chunk holding exactly this function (its lines, and no nested unit's taken out)."""
    start, end = fn.node.start_point[0] + 1, fn.node.end_point[0] + 1
    body = fn.node.text.decode("utf-8", errors="replace")
    for at in range(first, len(rows)):
        r = rows[at]
        if r.end == end and r.start <= start and start - r.start <= 12 and body.strip() in r.text:
            return at
    return None


def _plantable(fn) -> bool:
    lines = fn.node.end_point[0] - fn.node.start_point[0] + 1
    return 6 <= lines <= 40 and len(fn.owned) >= 2 and len(fn.node.text) <= 1800 and bool(fn.name)


def _has_twin(at: int, tokens: list[frozenset[str]]) -> bool:
    mine = tokens[at]
    for other_at, other in enumerate(tokens):
        if other_at == at or len(other) < TWIN * len(mine) or len(mine) < TWIN * len(other):
            continue
        if len(mine & other) >= TWIN * len(mine | other):
            return True
    return False


def _has_shape_twin(at: int, shapes: Shapes) -> bool:
    """A chunk sharing most of its token shape (a natural Type-2 clone: `equals` methods of sibling
    classes) is a twin too, whatever its names: a copy of either may rightly cluster with both."""
    if not shapes.known[at]:
        return False
    others = np.flatnonzero(shapes.known)
    others = others[others != at]
    sims = shape.similarity(shapes.sigs, np.full(len(others), at), others)
    return bool((sims >= SHAPE_TWIN).any())


@dataclass
class Prepared:
    language: str
    rows: list[Row]
    vectors: np.ndarray
    shapes: Shapes
    info: dict


def prepare(language: str, *, clones: int, seed: int, thesaurus: dict[str, str]) -> Prepared:
    rows, info = corpus(language, clones=clones, seed=seed, thesaurus=thesaurus)
    vectors = cached_text_vectors([r.text for r in rows], label=f"repos-{language}")
    shapes = Shapes.of([shape.signature(r.text, language) for r in rows])
    return Prepared(language, rows, vectors, shapes, info)


def clusters_at(prep: Prepared, threshold: float, *, top_k: int, flavour: str) -> list[list[int]]:
    """find_duplicates' clusters (row indices) at this threshold over the slice and the copies of
    one flavour (so a copy never reaches its original through a sibling): chunks with a shape only."""
    alone = np.array([r.kind in (None, "original", flavour) for r in prep.rows])
    chosen = np.flatnonzero(prep.shapes.known & alone)
    rows = [prep.rows[i] for i in chosen]
    shapes = Shapes(prep.shapes.sigs[chosen], prep.shapes.known[chosen])
    nesting = Nesting.of([r.path for r in rows], [r.start for r in rows], [r.end for r in rows])
    edges = duplicate_edges(prep.vectors[chosen], shapes, top_k=top_k, min_score=threshold, nesting=nesting)
    return [[int(chosen[m]) for m in members] for members, _, _ in union_find_groups(len(rows), edges)]


def score(prep: Prepared, clusters: list[list[int]]) -> dict[str, tuple[float, float]]:
    """Per flavour: (recall, cluster purity) as duplicates_recall.py defines them."""
    together = {f: 0 for f in FLAVOURS}
    holding = {f: [0, 0] for f in FLAVOURS}
    for members in clusters:
        labels = [(prep.rows[m].fid, prep.rows[m].kind) for m in members]
        kinds = {k for _, k in labels if k not in (None, "original")}
        if not kinds:
            continue
        fids = {f for f, _ in labels}
        pure = len(fids) == 1 and None not in fids
        for kind in kinds:
            holding[kind][0] += 1
            holding[kind][1] += pure
        for fid in {f for f, _ in labels if f is not None}:
            present = {k for f, k in labels if f == fid}
            for flavour in FLAVOURS:
                together[flavour] += "original" in present and flavour in present
    applied = prep.info["applied"]
    return {f: (together[f] / applied[f] if applied[f] else float("nan"),
                holding[f][1] / holding[f][0] if holding[f][0] else 1.0) for f in FLAVOURS}


def score_distributions(prep: Prepared) -> dict[str, np.ndarray]:
    """Duplicate scores of each copy with its original, and of each original with its best
    unrelated match (any chunk not planted and not nested with it); NaN when a side has no shape."""
    rows = prep.rows
    originals = {r.fid: i for i, r in enumerate(rows) if r.kind == "original"}
    planted = np.array([r.fid is not None for r in rows])
    out: dict[str, list[float]] = {f: [] for f in (*FLAVOURS, "unrelated")}
    for i, r in enumerate(rows):
        if r.kind not in (None, "original"):
            out[r.kind].append(_pair_score(prep, originals[r.fid], np.array([i]))[0])
    for orig in originals.values():
        others = np.flatnonzero(~planted & prep.shapes.known)
        o = rows[orig]
        others = np.array([j for j in others if not (rows[j].path == o.path and (
            rows[j].start <= o.start <= o.end <= rows[j].end or o.start <= rows[j].start <= rows[j].end <= o.end))])
        out["unrelated"].append(float(np.nanmax(_pair_score(prep, orig, others))) if len(others) else np.nan)
    return {k: np.array(v, dtype=float) for k, v in out.items()}


def _pair_score(prep: Prepared, i: int, js: np.ndarray) -> np.ndarray:
    cos = prep.vectors[js] @ prep.vectors[i]
    sh = shape.similarity(prep.shapes.sigs, np.full(len(js), i), js)
    ok = prep.shapes.known[js] & prep.shapes.known[i]
    return np.where(ok, (cos + sh) / 2, np.nan)


def report(languages: list[str], *, clones: int, seed: int, thresholds: list[float], default: float,
           top_k: int, thesaurus: dict[str, str]) -> None:
    for language in languages:
        prep = prepare(language, clones=clones, seed=seed, thesaurus=thesaurus)
        repo, dirs, _ext = REPOS[language]
        commit = _commit(REPOS_DIR / repo)
        print(f"\n{language}: {repo}@{commit} {', '.join(dirs)}: {len(prep.rows)} chunks "
              f"({int(prep.shapes.known.sum())} with a shape), {prep.info['functions']} functions planted "
              f"(of {prep.info['plantable']} plantable); copies per flavour: "
              + ", ".join(f"{f} {n}" for f, n in prep.info["applied"].items()))
        dists = score_distributions(prep)
        for name, values in dists.items():
            q = np.nanquantile(values, [0.05, 0.5, 0.95]) if np.isfinite(values).any() else [np.nan] * 3
            what = "copy vs original" if name != "unrelated" else "original vs best unrelated"
            print(f"  score {name:<11} ({what:<26}): p5 {q[0]:.3f}  median {q[1]:.3f}  p95 {q[2]:.3f}"
                  + (f"  ({int(np.isnan(values).sum())} without a shape)" if np.isnan(values).any() else ""))
        print(f"  {'min_score':>9}  " + "  ".join(f"{f:>18}" for f in FLAVOURS) + "   (recall / purity)")
        for t in thresholds:
            s = {f: score(prep, clusters_at(prep, t, top_k=top_k, flavour=f))[f] for f in FLAVOURS}
            mark = "  <- default" if t == default else ""
            print(f"  {t:>9g}  " + "  ".join(f"{s[f][0]:>8.3f} / {s[f][1]:>7.3f}" for f in FLAVOURS) + mark)


def _commit(repo: Path) -> str:
    head = repo / ".git" / "HEAD"
    if not head.is_file():
        return "?"
    ref = head.read_text().strip()
    if ref.startswith("ref: "):
        target = repo / ".git" / ref[5:]
        return target.read_text().strip()[:10] if target.is_file() else "?"
    return ref[:10]


assert set(REPOS) <= set(RULES)
