"""Indexing throughput on real code: how close does `sai.indexer.index()` run to the embedder?

Copies a deterministic slice of the Python standard library (the sorted top-level .py files of
`sysconfig.get_paths()["stdlib"]`, until at least --lines lines) into a temp dir, indexes it with
the local all-MiniLM-L6-v2 embedder behind a timing proxy, and prints

- wall time of index(), time inside the embedder, their ratio (target <= 1.15), chunks/s;
- a second, no-op index() over the unchanged tree: wall time (target < 1 s) and embedder calls
  (target 0);
- with --profile: a cProfile top-20 of an extra full run whose embedder replays the vectors of
  the first run (so embedding costs ~0 and what remains is SAI's own overhead).

The model load (import + weights) is done once before any clock starts and reported apart.

    .venv/bin/python benchmarks/index_throughput.py [--lines N] [--keep DIR] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sai.config import load_config
from sai.indexer import index
from sai.models import IndexReport
from sai.project import Project
from sai.store.tables import Connection

CONFIG_TEXT = "embedder: local\n"


class TimingEmbedder:
    """Stands in front of a real embedder: same interface, counts calls and time spent inside."""

    def __init__(self, inner: Any, *, record: bool = False) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.record = record
        self.recorded: dict[str, np.ndarray] = {}
        self.reset()

    def reset(self) -> None:
        self.seconds = 0.0
        self.doc_calls = self.query_calls = self.texts = 0
        self.query_seconds: list[float] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        start = time.perf_counter()
        vectors = self.inner.embed_documents(texts)
        self.seconds += time.perf_counter() - start
        self.doc_calls += 1
        self.texts += len(texts)
        if self.record:
            self.recorded.update(zip(texts, vectors, strict=True))
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        start = time.perf_counter()
        vector = self.inner.embed_query(text)
        took = time.perf_counter() - start
        self.seconds += took
        self.query_seconds.append(took)
        self.query_calls += 1
        return vector

    def __getattr__(self, attr: str) -> Any:  # dimension, prefix_style, ... of the real embedder
        return getattr(self.inner, attr)


class ReplayEmbedder:
    """Answers embed_documents from vectors recorded earlier: embedding at (almost) no cost."""

    def __init__(self, recorded: dict[str, np.ndarray], *, name: str, model: str) -> None:
        self.recorded, self.name, self.model = recorded, name, model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.recorded[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        raise NotImplementedError("the replay embedder serves indexing only")


class OpenCounter:
    """Counts and times Connection.open (each loads the vss and fts extensions) while active."""

    def __init__(self) -> None:
        self.count, self.seconds = 0, 0.0
        self._original = Connection.__dict__["open"]

    def __enter__(self) -> OpenCounter:
        original = self._original.__func__

        def timed_open(cls: type, *args: Any, **kwargs: Any) -> Connection:
            start = time.perf_counter()
            try:
                return original(cls, *args, **kwargs)
            finally:
                self.count += 1
                self.seconds += time.perf_counter() - start

        Connection.open = classmethod(timed_open)  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Connection.open = self._original  # type: ignore[method-assign]

    def reset(self) -> None:
        self.count, self.seconds = 0, 0.0


def set_torch_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def stdlib_slice(min_lines: int) -> tuple[Path, list[Path], int]:
    """Sorted top-level stdlib .py files, as few as reach `min_lines` lines; and the line total."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chosen, lines = [], 0
    for path in sorted(stdlib.glob("*.py")):
        chosen.append(path)
        lines += len(path.read_text(encoding="utf-8", errors="replace").splitlines())
        if lines >= min_lines:
            break
    return stdlib, chosen, lines


def prepare_tree(target: Path, min_lines: int) -> tuple[int, int]:
    """Copy the corpus and a `embedder: local` config into `target`; returns (files, lines)."""
    stdlib, chosen, lines = stdlib_slice(min_lines)
    target.mkdir(parents=True, exist_ok=True)
    for path in chosen:
        shutil.copy2(path, target / path.name)
    (target / "sai-cfg.yml").write_text(CONFIG_TEXT, encoding="utf-8")
    print(f"corpus: {len(chosen)} files, {lines} lines from {stdlib} "
          f"({chosen[0].name} .. {chosen[-1].name}) -> {target}")
    return len(chosen), lines


def open_project(root: Path, embedder: Any, **flags: Any) -> Project:
    config = load_config(flags=flags, env={}, cwd=root)
    return Project(config, embedder=embedder)


def load_local_embedder() -> tuple[Any, float]:
    """The real LocalEmbedder, loaded by one dummy call; returns it and the load time."""
    start = time.perf_counter()
    from sai.embedders.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.embed_documents(["def warm_up():\n    return 0\n"])
    return embedder, time.perf_counter() - start


def timed_index(root: Path, proxy: TimingEmbedder) -> tuple[IndexReport, float, OpenCounter]:
    """One index() run: its report, wall time and the index-file opens it made."""
    project = open_project(root, proxy)
    try:
        with OpenCounter() as opens:
            start = time.perf_counter()
            report = index(project)
            wall = time.perf_counter() - start
    finally:
        project.close()
    return report, wall, opens


def full_run(root: Path, proxy: TimingEmbedder) -> None:
    report, wall, opens = timed_index(root, proxy)
    ratio = wall / proxy.seconds if proxy.seconds else float("inf")
    print(f"run 1 (full): {report}")
    print(f"  wall time of index():     {wall:8.2f} s")
    print(f"  time inside embedder:     {proxy.seconds:8.2f} s  "
          f"({proxy.doc_calls} embed_documents calls, {proxy.texts} texts)")
    print(f"  outside embedder:         {wall - proxy.seconds:8.2f} s  (of which {opens.count} "
          f"Connection.open: {opens.seconds:.2f} s)")
    print(f"  ratio wall / embedder:    {ratio:8.3f}   (target <= 1.15: "
          f"{'PASS' if ratio <= 1.15 else 'FAIL'})")
    print(f"  chunks embedded:          {report.embedded:8d}   (chunks held: {report.chunks})")
    print(f"  chunks/s (wall):          {report.embedded / wall:8.2f}")
    print(f"  chunks/s (embedder only): {report.embedded / proxy.seconds:8.2f}")


def noop_run(root: Path, proxy: TimingEmbedder) -> None:
    proxy.reset()
    report, wall, opens = timed_index(root, proxy)
    calls = proxy.doc_calls + proxy.query_calls
    print(f"run 2 (no-op): {report}")
    print(f"  wall time of index():     {wall:8.3f} s   (target < 1 s: "
          f"{'PASS' if wall < 1 else 'FAIL'})")
    print(f"  Connection.open:          {opens.seconds:8.3f} s   ({opens.count} opens)")
    print(f"  embedder calls:           {calls:8d}   (target 0: {'PASS' if calls == 0 else 'FAIL'})")


def profiled_run(root: Path, proxy: TimingEmbedder, top: int = 20) -> None:
    """A full run into a second index file, embedding replayed, under cProfile."""
    replay = ReplayEmbedder(proxy.recorded, name=proxy.name, model=proxy.model)
    project = open_project(root, replay, **{"duckdb.path": ".index/profile.duckdb"})
    profiler = cProfile.Profile()
    try:
        start = time.perf_counter()
        profiler.enable()
        index(project)
        profiler.disable()
        wall = time.perf_counter() - start
    finally:
        project.close()
        for leftover in (root / ".index").glob("profile.duckdb*"):
            leftover.unlink()
    print(f"profile: full run with replayed vectors (no embedding), {wall:.2f} s under cProfile")
    for key in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(key).print_stats(top)
        body = out.getvalue()
        print(f"--- top {top} by {key} ---")
        print(body[body.find("   ncalls"):].rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20000, help="corpus size in lines (20000)")
    parser.add_argument("--keep", metavar="DIR", help="build the tree and index here and keep it")
    parser.add_argument("--profile", action="store_true", help="cProfile top-20 of SAI's overhead")
    parser.add_argument("--torch-threads", type=int, metavar="N", help="torch.set_num_threads(N)")
    args = parser.parse_args(argv)
    set_torch_threads(args.torch_threads)
    print(f"load average before: {os.getloadavg()}  (cores: {os.cpu_count()})")
    if args.keep:
        root = Path(args.keep).resolve()
        if root.exists() and any(root.iterdir()):
            parser.error(f"--keep {root} exists and is not empty")
        tmp = None
    else:
        tmp = tempfile.TemporaryDirectory(prefix="sai-bench-")
        root = Path(tmp.name)
    try:
        prepare_tree(root, args.lines)
        real, load_s = load_local_embedder()
        print(f"model load (import + weights + one dummy text, excluded below): {load_s:.2f} s; "
              f"torch threads: {torch_threads()}")
        proxy = TimingEmbedder(real, record=args.profile)
        full_run(root, proxy)
        noop_run(root, proxy)
        if args.profile:
            profiled_run(root, proxy)
    finally:
        if tmp is not None:
            tmp.cleanup()
    print(f"load average after:  {os.getloadavg()}")
    if args.keep:
        print(f"kept: {root} (reuse with benchmarks/query_latency.py --index {root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
