"""The bucketed cosine pass of find_duplicates (sai/duplicates/buckets.py) against the exact one.

    python benchmarks/duplicates_buckets.py recall [--size 100000] [--min-score 0.75]
    python benchmarks/duplicates_buckets.py scale [--sizes 100000,300000,1000000] [--base-vectors NPY]

`recall`: on duplicates_scale.py's index of SIZE chunks (the first 5,000 AST chunks of the
stdlib embedded with all-MiniLM-L6-v2, then rotated copies of them, each keeping the real
set's near-duplicate structure; built when missing), the duplicate-score edges of
find_duplicates' pairing step (pairs.shape_edges over the joined units) are computed with the
exact cosine pass and with the bucketed one, and the bucketed edges are scored against the
exact ones: the share of exact edges found; the share found or replaced by an edge of the same
row scoring at least as high (a tie: the exact pass keeps the lower index); the share whose
two ends end up in one cluster; and whether every reported edge is exact (its score the exact
one's). Both times are printed, and the same for plain cosine (`metric: cosine`).

`scale`: for each size, in a fresh process, rows made the way `scale.py --vectors-only` makes
them (a base vector plus noise, cosine ~0.85 to it; base: --base-vectors, by default this
benchmark's 5,000 stdlib MiniLM vectors), each with the token shape of a real stdlib chunk
(salted per copy of the base, as duplicates_scale.py does), go through
edges.duplicate_edges (cosine pass, shape bands, scoring, top k) and union-find; the time of
each step and the process's peak RSS (ru_maxrss: the matrix included) are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from _common import CACHE_DIR, cached_vectors, emit_json, log, peak_rss_mb, stdlib_chunks
from duplicates_scale import BASE, build, project_at, salted

from sai.duplicates import buckets
from sai.duplicates.edges import Edges, Shapes, union_find_groups
from sai.duplicates.pairs import cosine_edges, shape_edges, units_of
from sai.duplicates.score import duplicate_edges
from sai.text.shape import signature

NOISE = 0.032  # per dimension, as scale.py's ArraySource: cosine ~0.85 to the base vector


def timed(run):  # noqa: ANN001, ANN201 - a benchmark helper
    started = time.perf_counter()
    out = run()
    return out, time.perf_counter() - started


def paired_edges(root: Path, min_score: float, top_k: int, *, bucketed: bool) -> tuple[Edges, Edges, float, float]:
    """(duplicate-score edges, plain-cosine edges) and their times, exact or bucketed."""
    buckets.BUCKETED_FROM = 0 if bucketed else 10**12
    project = project_at(root)
    try:
        with project.store.read() as reader:
            rows, matrix, signatures = reader.all_chunks()
        cosine_score = project.config.similarity.duplicate_cosine_min_score
    finally:
        project.close()
    shapes = Shapes.of(signatures)
    eligible = [i for i, r in enumerate(rows) if not r.no_duplicate]
    units = units_of(rows, matrix, shapes, eligible)
    ends = {at: rows[m[-1]].end_line for at, m in enumerate(units.members) if len(m) > 1}
    unit_rows = [replace(rows[i], end_line=ends[at]) if at in ends else rows[i] for at, i in enumerate(units.first)]
    dup, dup_s = timed(lambda: shape_edges(unit_rows, units.matrix, units.shapes, top_k=top_k,
                                           min_score=min_score, seeds=None))
    cos, cos_s = timed(lambda: cosine_edges(rows, matrix, eligible, top_k=top_k, min_score=cosine_score,
                                            seeds=None))
    return dup, cos, dup_s, cos_s


def compare(exact: Edges, got: Edges, n: int) -> dict:
    """How much of the exact edges the bucketed ones hold (see the module doc)."""
    key_e, key_g = exact.i * n + exact.j, got.i * n + got.j
    order = np.argsort(key_g)
    at = np.searchsorted(key_g[order], key_e).clip(max=max(len(key_g) - 1, 0))
    found = key_g[order][at] == key_e if len(key_g) else np.zeros(len(key_e), bool)
    got_s = got.s[order][at] if len(key_g) else np.zeros(len(key_e), np.float32)
    worst = np.full(n, np.inf, np.float32)  # each row's lowest kept score
    np.minimum.at(worst, got.i, got.s)
    kept = np.bincount(got.i, minlength=n)
    k = np.bincount(exact.i, minlength=n)
    replaced = ~found & (kept[exact.i] >= k[exact.i]) & (worst[exact.i] >= exact.s - 1e-6)
    root = np.arange(n)
    for members, _, _ in union_find_groups(n, got):
        root[members] = members[0]
    in_cluster = root[exact.i] == root[exact.j]
    return {"exact_edges": len(exact), "bucketed_edges": len(got), "recall": float(found.mean()) if len(found) else 1.0,
            "recall_with_ties": float((found | replaced).mean()) if len(found) else 1.0,
            "same_cluster": float(in_cluster.mean()) if len(in_cluster) else 1.0,
            "scores_exact": bool(np.allclose(got_s[found], exact.s[found], atol=1e-5))}


def recall(args: argparse.Namespace) -> None:
    chunks = stdlib_chunks(BASE)
    vectors = cached_vectors([c.text for c in chunks], label="stdlib-minilm")
    root = CACHE_DIR / f"dups-rotated-{args.size}"
    if build(root, args.size, chunks, vectors):
        log(f"built the {args.size}-chunk index")
    dup_e, cos_e, dup_es, cos_es = paired_edges(root, args.min_score, args.top_k, bucketed=False)
    dup_b, cos_b, dup_bs, cos_bs = paired_edges(root, args.min_score, args.top_k, bucketed=True)
    n = int(max(dup_e.i.max(initial=0), dup_b.i.max(initial=0), cos_e.i.max(initial=0), cos_b.i.max(initial=0))) + 1
    bits = buckets.hash_bits(args.size)
    for label, exact, got, es, bs, shaped in (("duplicate score", dup_e, dup_b, dup_es, dup_bs, True),
                                                ("plain cosine", cos_e, cos_b, cos_es, cos_bs, False)):
        score = args.min_score if shaped else 0.80
        tables = buckets.tables_needed(score, bits=bits, shaped=shaped)
        print(f"{label} at {score:g}, {args.size} chunks ({bits} bits x {tables} rounds): exact {es:.1f} s, "
              f"bucketed {bs:.1f} s; {json.dumps(compare(exact, got, n))}  (load avg {os.getloadavg()[0]:.1f})",
              flush=True)


def synthetic(size: int, base: np.ndarray, shapes: list[bytes]) -> tuple[np.ndarray, Shapes]:
    """`size` rows of base vector + noise (scale.py's way), the shape of stdlib chunk i % BASE salted per copy."""
    matrix = np.empty((size, base.shape[1]), np.float32)
    for a in range(0, size, 65_536):
        ids = np.arange(a, min(size, a + 65_536))
        rng = np.random.default_rng(a)
        v = base[ids % len(base)] + rng.standard_normal((len(ids), base.shape[1])).astype(np.float32) * NOISE
        matrix[a:a + len(ids)] = v / np.linalg.norm(v, axis=1, keepdims=True)
    salts = [[salted(s, copy) for s in shapes] for copy in range(-(-size // len(shapes)))]
    return matrix, Shapes.of([salts[i // len(shapes)][i % len(shapes)] for i in range(size)])


def child(args: argparse.Namespace) -> None:
    buckets.BUCKETED_FROM = 0  # the bucketed pass at every size
    chunks = stdlib_chunks(BASE)
    base = np.load(args.base_vectors).astype(np.float32) if args.base_vectors else \
        cached_vectors([c.text for c in chunks], label="stdlib-minilm").astype(np.float32)
    (matrix, shapes), made = timed(lambda: synthetic(args.child, base, [signature(c.text, "python") for c in chunks]))
    cosine, cosine_s = timed(lambda: buckets.bucketed_edges(matrix, top_k=args.top_k, min_score=0.8,
                                                               shaped_at=args.min_score))
    edges, edges_s = timed(lambda: duplicate_edges(matrix, shapes, top_k=args.top_k, min_score=args.min_score))
    groups, groups_s = timed(lambda: union_find_groups(len(matrix), edges))
    emit_json({"rows": args.child, "made_s": made, "cosine_pass_s": cosine_s, "cosine_edges": len(cosine),
               "duplicate_edges_s": edges_s, "edges": len(edges), "union_find_s": groups_s,
               "clusters": len(groups), "peak_rss_mb": peak_rss_mb()})


def scale(args: argparse.Namespace) -> None:
    print(f"{'rows':>8}  {'bits x rounds':>13}  {'cosine pass':>11}  {'duplicate_edges':>15}  {'union-find':>10}  "
          f"{'edges':>9}  {'clusters':>8}  {'peak RSS':>9}  load (1, 5, 15 min)")
    for size in (int(s) for s in args.sizes.split(",")):
        cmd = [sys.executable, __file__, "scale", "--child", str(size), "--top-k", str(args.top_k),
               "--min-score", str(args.min_score)]
        if args.base_vectors:
            cmd += ["--base-vectors", str(args.base_vectors)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"child failed at {size} rows:\n{done.stderr}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        bits = buckets.hash_bits(size)
        rounds = f"{bits} x {buckets.tables_needed(args.min_score, bits=bits, shaped=True)}"
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{size:>8}  {rounds:>13}  {r['cosine_pass_s']:>9.1f} s  {r['duplicate_edges_s']:>13.1f} s  "
              f"{r['union_find_s']:>8.1f} s  {r['edges']:>9}  {r['clusters']:>8}  {r['peak_rss_mb']:>6.0f} MB  {load}",
              flush=True)
    print(f"min_score {args.min_score:g}, top_k {args.top_k}; the cosine pass alone, then duplicate_edges (which "
          f"runs it again, with the shape bands and scoring); wall-clock on this {os.cpu_count()}-core machine")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("recall", "scale"))
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--min-score", type=float, default=0.75)
    parser.add_argument("--base-vectors", type=Path)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
    elif args.mode == "recall":
        recall(args)
    else:
        scale(args)


if __name__ == "__main__":
    main()
