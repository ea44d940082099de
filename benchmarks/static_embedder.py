"""The static embedder (`model: minilm-static`) beside MiniLM int8: build time, throughput, variants.

    python benchmarks/static_embedder.py speed [--chunks 2000] [--rounds 3]
        Build time of the table from a cold cache (the fp32 ONNX file, then the distillation),
        and chunks/s of the static model and of MiniLM int8 over the same real chunks (AST chunks
        of the stdlib), in one process, the two alternating round by round (best round kept);
        with the cosine agreement between the two models' top-10 neighbour lists.
    python benchmarks/static_embedder.py index --tree DIR
        One index run of DIR from nothing with minilm-static (its index in a temporary directory):
        wall time, the time spent inside the embedder (summed over the worker processes, where
        the indexer's CPU stage embeds), chunks and chunks/s end to end, and when the chunks
        were all stored.
    python benchmarks/static_embedder.py variants --repos tuning [--modes hybrid,semantic]
        NDCG@10 on semble's benchmark (repos_quality.py's data and metric) of recipe variants:
        dimension, SIF weighting on or off, camelCase identifiers split or not. Each variant
        indexes into its own cache directory (index/<repo>/static-<variant>/). Choose on the
        tuning and held-out sets only: the untouched sets are refused here.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import repos_quality as rq
from _common import stdlib_chunks
from _repos_report import mean
from embedders import neighbour_overlap

from sai.embedders.static import Identifiers, StaticEmbedder
from sai.embedders.static_table import Recipe

VARIANTS: dict[str, tuple[Recipe, Identifiers]] = {  # name -> (recipe, how camelCase identifiers are read)
    "d256-sif-split": (Recipe(256, 1e-4), "split"),
    "d384-sif-split": (Recipe(384, 1e-4), "split"),
    "d256-flat-split": (Recipe(256, None), "split"),
    "d256-sif-nosplit": (Recipe(256, 1e-4), "whole"),
    "d128-sif-split": (Recipe(128, 1e-4), "split"),
    "d256-sif-both": (Recipe(256, 1e-4), "both"),
}


def speed(args: argparse.Namespace) -> int:
    from sai.embedders.local import LocalEmbedder
    from sai.embedders.minilm import model_dir, read_shape
    from sai.embedders.onnx_model import open_session

    cache = Path(tempfile.mkdtemp(prefix="sai-static-"))
    started, cpu = time.perf_counter(), time.process_time()
    open_session(cache, model_dir(), read_shape(model_dir()), precision="fp32", threads=4)
    onnx_s, onnx_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    static = StaticEmbedder(cache_dir=cache)
    static.load()
    table_s, table_cpu = time.perf_counter() - started, time.process_time() - cpu
    started = time.perf_counter()
    StaticEmbedder(cache_dir=cache).load()
    warm_s = time.perf_counter() - started
    print(f"build from a cold cache: fp32 ONNX file {onnx_s:.1f} s ({onnx_cpu:.1f} CPU-s), then the table "
          f"{table_s:.1f} s ({table_cpu:.1f} CPU-s); loading the built table {warm_s * 1000:.0f} ms")
    texts = [c.text for c in stdlib_chunks(args.chunks)]
    print(f"{len(texts)} stdlib chunks, mean {sum(map(len, texts)) / len(texts):.0f} characters")
    minilm = LocalEmbedder(cache_dir=cache)
    minilm.load()
    minilm_texts = texts[: args.minilm_chunks]
    best: dict[str, float] = {"static": 0.0, "minilm-int8": 0.0}
    per_cpu: dict[str, float] = {"static": 0.0, "minilm-int8": 0.0}
    for _ in range(args.rounds):
        for name, embedder, batch in (("static", static, texts), ("minilm-int8", minilm, minilm_texts)):
            started, cpu = time.perf_counter(), time.process_time()
            embedder.embed_documents(batch)
            best[name] = max(best[name], len(batch) / (time.perf_counter() - started))
            per_cpu[name] = max(per_cpu[name], len(batch) / max(time.process_time() - cpu, 1e-9))
    for name, rate in best.items():
        print(f"  {name:<12} {rate:9.1f} chunks/s, {per_cpu[name]:9.1f} per CPU-second (best of {args.rounds})")
    print(f"  ratio {best['static'] / best['minilm-int8']:.0f}x")
    a, b = static.embed_documents(minilm_texts), minilm.embed_documents(minilm_texts)
    print(f"  top-10 neighbours shared with MiniLM int8 over {len(minilm_texts)} chunks: {neighbour_overlap(a, b):.3f}")
    started = time.perf_counter()
    for _ in range(100):
        static.embed_query("load the configuration file and reject unknown keys")
    print(f"  static query vector: {(time.perf_counter() - started) * 10:.2f} ms")
    return 0


class Timed:
    """The embedder, with the seconds spent inside embed_documents summed."""

    def __init__(self, inner: StaticEmbedder) -> None:
        self.inner, self.name, self.model, self.batch_size = inner, inner.name, inner.model, inner.batch_size
        self.with_chunks, self.served = inner.with_chunks, inner.served
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - started

    def runs_elsewhere(self) -> bool:
        return self.inner.runs_elsewhere()

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def index_tree(args: argparse.Namespace) -> int:
    from index_throughput import StageCapture

    from sai.config import load_config
    from sai.indexing.indexer import index
    from sai.project import Project

    embedder = Timed(StaticEmbedder(cache_dir=args.model_cache))
    embedder.inner.load()
    capture = StageCapture()  # the CPU stage's embedding (in the worker processes) is in its times
    logger = logging.getLogger("sai.indexing.indexer")
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    with tempfile.TemporaryDirectory(prefix="sai-static-index-") as work:
        config = load_config(flags={"root": str(args.tree.resolve()), "duckdb.path": f"{work}/code.duckdb",
                                    "embedder": "local", "model": "minilm-static",
                                    "local.cache_dir": str(args.model_cache)}, env={}, cwd=Path(work))
        project = Project(config, embedder=embedder)  # type: ignore[arg-type]
        searchable: list[float] = []
        try:
            started = time.perf_counter()
            report = index(project, on_searchable=lambda _: searchable.append(time.perf_counter() - started))
            wall = time.perf_counter() - started
        finally:
            project.close()
    inside = embedder.seconds + (capture.times.embed if capture.times else 0.0)
    stored = f"; chunks all stored at {searchable[0]:.1f} s" if searchable else ""
    print(f"{args.tree}: {report.chunks} chunks, {report.embedded} embedded; index run {wall:.1f} s wall, "
          f"{inside:.1f} s inside the embedder (summed over the worker processes: {inside / wall:.0%} of the wall); "
          f"{report.chunks / wall:.0f} chunks/s end to end{stored}")
    return 0


def variants(args: argparse.Namespace) -> int:
    from sai.config import load_config
    from sai.project import Project

    untouched = [r for r in args.repos if r in rq.UNTOUCHED + rq.LANGS_UNTOUCHED]
    if untouched:
        print(f"error: variants are chosen on tuned-on sets only, not on {', '.join(untouched)}", file=sys.stderr)
        return 1
    cache = args.cache.resolve()
    specs, subs = rq.load_repos(cache), rq.load_substitutes(cache)
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    table: dict[str, dict[str, dict[str, float]]] = {v: {} for v in names}
    for repo_name in args.repos:
        repo = specs[repo_name]
        root = rq.checkout(cache, repo, subs.get(repo_name))
        queries = rq.load_queries(cache, repo_name)
        for variant in names:
            recipe, identifiers = VARIANTS[variant]
            index_dir = cache / "index" / repo_name / f"static-{variant}"
            index_dir.mkdir(parents=True, exist_ok=True)
            config = load_config(flags={"root": str(root), "duckdb.path": str(index_dir / "code.duckdb"),
                                        "embedder": "local", "model": "minilm-static"}, env={}, cwd=index_dir)
            embedder = StaticEmbedder(cache_dir=args.model_cache, recipe=recipe, identifiers=identifiers)
            project = Project(config, embedder=embedder)
            try:
                rq.index_repo(project)
                outcomes = [rq.run_query(project, repo, q, mode) for q in queries for mode in args.modes]
            finally:
                project.close()
            table[variant][repo_name] = {m: mean([o.ndcg for o in outcomes if o.mode == m]) for m in args.modes}
        print(repo_name, "  ".join(f"{v}: " + "/".join(f"{table[v][repo_name][m]:.3f}" for m in args.modes)
                                   for v in names), flush=True)
    print(f"\nmean NDCG@10 over {len(args.repos)} repositories ({'/'.join(args.modes)})")
    for variant in names:
        cells = [f"{mean([table[variant][r][m] for r in args.repos]):.3f}" for m in args.modes]
        print(f"  {variant:<18} {' / '.join(cells)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command")
    s = sub.add_parser("speed")
    s.add_argument("--chunks", type=int, default=2000)
    s.add_argument("--minilm-chunks", type=int, default=200, help="MiniLM runs on the first N (it is ~100x slower)")
    s.add_argument("--rounds", type=int, default=3)
    i = sub.add_parser("index")
    i.add_argument("--tree", type=Path, required=True)
    i.add_argument("--model-cache", type=Path, default=Path.home() / ".cache" / "sai")
    v = sub.add_parser("variants")
    v.add_argument("--repos", type=rq.parse_repos, required=True)
    v.add_argument("--variants", default=None, help=f"comma-separated, of: {', '.join(VARIANTS)}")
    v.add_argument("--modes", type=lambda m: rq.parse_list(m, rq.MODES, "mode"), default=["hybrid", "semantic"])
    v.add_argument("--cache", type=Path, default=rq.DEFAULT_CACHE)
    v.add_argument("--model-cache", type=Path, default=Path.home() / ".cache" / "sai")
    args = p.parse_args(argv)
    if args.command is None:  # `make bench` runs every benchmark bare: say what to give
        print("give a command: speed (throughput beside MiniLM int8), index --tree DIR, or variants --repos SET")
        return 0
    return {"speed": speed, "index": index_tree, "variants": variants}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
