"""The `--repos` mode of duplicates_recall.py: planted clones in real repositories, per language.

Each language's slice of a real repository (REPOS; unpacked into SAI_BENCH_REPOS, default
<SAI_BENCH_CACHE>/repos, one directory per repository named as in REPOS, at the commits printed:
a `COMMIT` file beside an unpacked tree names it) is chunked with SAI's ast chunker, as the
indexer would. From its functions, `--clones` (30) are drawn (fixed seed): one chunk each (the
chunk holds the whole function), 6-40 lines, >= 2 names of their own, <= 1800 characters, and no
twin in the slice (token-set Jaccard < 0.5 and shape similarity < 0.6 with every other chunk);
and LONG (8) longer functions, which the chunker cuts into windows, with no twin either. Each
is copied in every flavour of _clones.py (the long ones in the renamings only). A flavour's
copies go into one file, `zz_planted/<flavour>.<ext>`, a method's copy inside a class (or impl,
or object literal) of its own so that it parses as a method, and that file is chunked like the
others. The duplicate search then runs as find_duplicates runs it: a long unit's windows joined
(sai/duplicates/units.py), sai.duplicates.score.duplicate_edges over the units that have a shape,
nesting excluded, union-find; on MiniLM vectors cached on disk by content (a re-run embeds
nothing) and shapes computed afresh (so a change to sai/text/shape.py needs no model).
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _clones import FLAVOURS, RENAMINGS, RULES, Function, clone, functions_of, independent_pair
from _common import CACHE_DIR, cached_text_vectors

from sai.chunking.treesitter import TreeSitterChunker
from sai.duplicates.edges import Nesting, Shapes, union_find_groups
from sai.duplicates.score import duplicate_edges, duplicate_score
from sai.duplicates.units import unit_members, whole_units
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
LONG = 8  # long functions planted per language (cut into windows): what unit joining is for
LONG_CHARS = 6000
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
    symbol: str | None = None
    unit: str | None = None  # what the chunk's unit is (Chunk.kind), which its shape reads


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


def corpus(language: str, *, clones: int, seed: int, thesaurus: dict[str, str],
           long: int = LONG) -> tuple[list[Row], dict]:
    """The slice's chunks plus the planted copies (rows), and what was planted."""
    repo, _, ext = REPOS[language]
    chunker = TreeSitterChunker(max_chunk_chars=2000)
    rows: list[Row] = []
    picks = []
    long_picks: list[tuple[list[int], Function]] = []
    for p in slice_files(language):
        key = p.relative_to(REPOS_DIR / repo).as_posix()
        text = p.read_text(encoding="utf-8", errors="replace")
        chunks = chunker.chunk(key, text, language)
        first = len(rows)
        rows += [Row(key, c.start_line, c.end_line, c.text, symbol=c.symbol, unit=c.kind) for c in chunks]
        for fn in functions_of(text.encode("utf-8"), language):
            at = _chunk_of(fn, rows, first)
            if at is not None and _plantable(fn):
                picks.append((at, fn))
            windows = _windows_of(fn, rows, first)
            if windows and len(fn.owned) >= 2 and len(fn.node.text) <= LONG_CHARS:
                long_picks.append((windows, fn))
    tokens = [frozenset(re.findall(r"\w+", r.text)) for r in rows]
    sigs = Shapes.of([shape.signature(r.text, language, kind=r.unit) for r in rows])
    picks = [(at, fn) for at, fn in picks if not _has_twin(at, tokens) and not _has_shape_twin(at, sigs)]
    long_picks = [(ats, fn) for ats, fn in long_picks
                  if not any(_has_twin(at, tokens, own=ats) or _has_shape_twin(at, sigs, own=ats) for at in ats)]
    rng = random.Random(seed)
    chosen = sorted(rng.sample(picks, min(clones, len(picks))), key=lambda a: a[0])
    # reordering needs an independent pair, which few functions have: it draws its own functions
    # (those chosen above first)
    swappable = [p for p in picks if p not in chosen and independent_pair(p[1]) is not None]
    room = max(0, clones - sum(independent_pair(fn) is not None for _, fn in chosen))
    extra = sorted(rng.sample(swappable, min(room, len(swappable))), key=lambda a: a[0])
    longs = sorted(rng.sample(long_picks, min(long, len(long_picks))), key=lambda a: a[0])
    reserved = keywords_of(language)
    applied = {f: 0 for f in FLAVOURS}
    copies: dict[str, list[tuple[int, Function, str]]] = {f: [] for f in FLAVOURS}
    planted = [([at], fn, FLAVOURS) for at, fn in chosen] + [([at], fn, ("reordered",)) for at, fn in extra]
    for fid, (ats, fn, flavours) in enumerate([*planted, *((w, fn, RENAMINGS) for w, fn in longs)]):
        for at in ats:
            rows[at] = Row(**{**rows[at].__dict__, "fid": fid, "kind": "original"})
        for flavour in flavours:
            text = clone(fn, flavour=flavour, fid=fid, thesaurus=thesaurus, reserved=reserved)
            if text is not None:
                applied[flavour] += 1
                copies[flavour].append((fid, fn, text))
    for flavour, made in copies.items():
        rows += planted_rows(f"{PLANTED}/{flavour}.{ext}", made, language, flavour, chunker)
    return rows, {"functions": len(chosen), "long": len(longs), "applied": applied, "plantable": len(picks)}


def planted_rows(key: str, planted: list[tuple[int, Function, str]], language: str, flavour: str,
                 chunker: TreeSitterChunker) -> list[Row]:
    """The chunks of one flavour's file of copies, as the indexer would chunk it: a method's copy
    sits in a class (or impl) of its own, so it parses as a method; each chunk inside a copy's
    lines is labelled with it."""
    lines: list[str] = []
    spans: list[tuple[int, int, int]] = []  # (fid, first line, last line) of each copy
    for fid, fn, text in planted:
        head, tail = _holder(fn, fid)
        lines += head
        spans.append((fid, len(lines) + 1, len(lines) + text.count("\n") + 1))
        lines += [*text.split("\n"), *tail, ""]
    out = []
    for c in chunker.chunk(key, "\n".join(lines) + "\n", language):
        fid = next((f for f, a, b in spans if a <= c.start_line and c.end_line <= b), None)
        out.append(Row(key, c.start_line, c.end_line, c.text, fid, flavour if fid is not None else None,
                       c.symbol, c.kind))
    return out


def _holder(fn: Function, fid: int) -> tuple[list[str], list[str]]:
    """Lines before and after a copy that make it parse as its original does (a method in a class)."""
    parent = fn.node.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    container = parent.type if parent is not None else ""
    if container in ("block", "class_body", "declaration_list") and parent is not None and parent.parent is not None:
        container = parent.parent.type
    if fn.language in ("javascript", "typescript") and container == "object":
        return [f"const planted{fid} = {{"], ["};"]
    if fn.language == "python" and container == "class_definition":
        return [f"class Planted{fid}:"], []
    if fn.language == "rust" and container in ("impl_item", "trait_item"):
        return [f"impl Planted{fid} {{"], ["}"]
    if fn.language in ("javascript", "typescript", "java") and container in (
            "class_declaration", "class", "abstract_class_declaration", "enum_declaration"):
        return [f"class Planted{fid} {{"], ["}"]
    return [], []


def _chunk_of(fn, rows: list[Row], first: int) -> int | None:
    """The chunk holding exactly this function (its lines, and no nested unit's taken out)."""
    start, end = fn.node.start_point[0] + 1, fn.node.end_point[0] + 1
    body = fn.node.text.decode("utf-8", errors="replace")
    for at in range(first, len(rows)):
        r = rows[at]
        if r.end == end and r.start <= start and start - r.start <= 12 and body.strip() in r.text:
            return at
    return None


def _windows_of(fn: Function, rows: list[Row], first: int) -> list[int]:
    """The chunks of a function the chunker cut into windows (two or more, nothing nested), or []."""
    start, end = fn.node.start_point[0] + 1, fn.node.end_point[0] + 1
    inside = [at for at in range(first, len(rows)) if start - 12 <= rows[at].start and rows[at].end <= end]
    if len(inside) < 2 or len({rows[at].symbol for at in inside}) != 1 or rows[inside[-1]].end != end:
        return []
    return inside if rows[inside[0]].start <= start else []


def _plantable(fn) -> bool:
    lines = fn.node.end_point[0] - fn.node.start_point[0] + 1
    return 6 <= lines <= 40 and len(fn.owned) >= 2 and len(fn.node.text) <= 1800 and bool(fn.name)


def _has_twin(at: int, tokens: list[frozenset[str]], *, own: list[int] | None = None) -> bool:
    mine = tokens[at]
    for other_at, other in enumerate(tokens):
        if other_at == at or other_at in (own or ()) or len(other) < TWIN * len(mine) or len(mine) < TWIN * len(other):
            continue
        if len(mine & other) >= TWIN * len(mine | other):
            return True
    return False


def _has_shape_twin(at: int, shapes: Shapes, *, own: list[int] | None = None) -> bool:
    """A chunk sharing most of its token shape (a natural Type-2 clone: `equals` methods of sibling
    classes, overloads) is a twin too, whatever its names: a copy of either may rightly cluster
    with both. `own`: the other windows of its unit, which are not twins."""
    if not shapes.known[at]:
        return False
    others = np.flatnonzero(shapes.known)
    others = others[~np.isin(others, [at, *(own or [])])]
    sims = shape.similarity(shapes.sigs, np.full(len(others), at), others)
    return bool((sims >= SHAPE_TWIN).any())


@dataclass
class Prepared:
    language: str
    rows: list[Row]
    vectors: np.ndarray
    shapes: Shapes
    info: dict


def prepare(language: str, *, clones: int, seed: int, thesaurus: dict[str, str], long: int = LONG) -> Prepared:
    """The corpus as find_duplicates sees it: a long function's windows joined into one unit
    (sai/duplicates/units.py), each unit a row labelled as its windows are."""
    chunks, info = corpus(language, clones=clones, seed=seed, thesaurus=thesaurus, long=long)
    vectors = cached_text_vectors([r.text for r in chunks], label=f"repos-{language}")
    shapes = Shapes.of([shape.signature(r.text, language, kind=r.unit) for r in chunks])
    members = unit_members([r.path for r in chunks], [r.start for r in chunks], [r.end for r in chunks],
                           [r.symbol for r in chunks])
    units = whole_units(members, vectors, shapes)
    rows = [Row(**{**chunks[m[0]].__dict__, "end": chunks[m[-1]].end,
                   "text": "\n".join(chunks[k].text for k in m)}) for m in members]
    info["joined"] = sum(len(m) > 1 for m in members)
    return Prepared(language, rows, units.matrix, units.shapes, info)


def clusters_at(prep: Prepared, threshold: float, *, top_k: int, flavour: str) -> list[list[int]]:
    """find_duplicates' clusters (row indices) at this threshold over the slice and the copies of
    one flavour (so a copy never reaches its original through a sibling): chunks with a shape only."""
    alone = np.array([r.kind in (None, "original", flavour) for r in prep.rows])
    chosen = np.flatnonzero(prep.shapes.known & alone)
    rows = [prep.rows[i] for i in chosen]
    shapes = prep.shapes.take(chosen)
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
    sizes = np.minimum(prep.shapes.sizes[js], prep.shapes.sizes[i])
    return np.where(ok, duplicate_score(cos, sh, sizes), np.nan)


def report(languages: list[str], *, clones: int, seed: int, thresholds: list[float], default: float,
           top_k: int, thesaurus: dict[str, str], long: int = LONG) -> None:
    for language in languages:
        prep = prepare(language, clones=clones, seed=seed, thesaurus=thesaurus, long=long)
        repo, dirs, _ext = REPOS[language]
        commit = _commit(REPOS_DIR / repo)
        print(f"\n{language}: {repo}@{commit} {', '.join(dirs)}: {len(prep.rows)} units "
              f"({int(prep.shapes.known.sum())} with a shape), {prep.info['functions']} functions planted "
              f"and {prep.info['long']} long ones "
              f"(of {prep.info['plantable']} plantable); copies per flavour: "
              + ", ".join(f"{f} {n}" for f, n in prep.info["applied"].items()))
        dists = score_distributions(prep)
        for name, values in dists.items():
            q = np.nanquantile(values, [0.05, 0.5, 0.95]) if np.isfinite(values).any() else [np.nan] * 3
            what = "copy vs original" if name != "unrelated" else "original vs best unrelated"
            print(f"  score {name:<11} ({what:<26}): p5 {q[0]:.3f}  median {q[1]:.3f}  p95 {q[2]:.3f}"
                  + (f"  ({int(np.isnan(values).sum())} without a shape)" if np.isnan(values).any() else ""))
        copies = np.concatenate([dists[f] for f in RENAMINGS])
        low, high = np.nanquantile(copies, 0.05), np.nanquantile(dists["unrelated"], 0.95)
        print(f"  margin: p5 of renamed copies (all renamings) {low:.3f} - p95 of best unrelated {high:.3f}"
              f" = {low - high:+.3f}")
        print(f"  {'min_score':>9}  " + "  ".join(f"{f:>18}" for f in FLAVOURS) + "   (recall / purity)")
        for t in thresholds:
            s = {f: score(prep, clusters_at(prep, t, top_k=top_k, flavour=f))[f] for f in FLAVOURS}
            mark = "  <- default" if t == default else ""
            print(f"  {t:>9g}  " + "  ".join(f"{s[f][0]:>8.3f} / {s[f][1]:>7.3f}" for f in FLAVOURS) + mark)


def _commit(repo: Path) -> str:
    head = repo / ".git" / "HEAD"
    if (repo / "COMMIT").is_file():  # a tree unpacked from an archive, its commit written beside it
        return (repo / "COMMIT").read_text().strip()[:10]
    if not head.is_file():
        return "?"
    ref = head.read_text().strip()
    if ref.startswith("ref: "):
        target = repo / ".git" / ref[5:]
        return target.read_text().strip()[:10] if target.is_file() else "?"
    return ref[:10]


assert set(REPOS) <= set(RULES)
