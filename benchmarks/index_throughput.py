"""Indexing throughput on real code: how close does `sai.indexing.indexer.index()` run to the embedder?

Two modes.

`--embedder fast` (a GPU-served Ollama): indexes the Python standard library (every .py file
under the stdlib directory but site-packages, sorted; `--limit-files N` takes the first N, `--tree
DIR` indexes another tree) against a stand-in Ollama server in a child process that answers with
cheap precomputed vectors and sleeps n/rate seconds per request, one request at a time (a device
embedding `--rate` texts/s), so it costs no CPU. Prints wall, the embedder's own time (inputs /
rate), their ratio (target <= 1.3), the CPU used, when the chunks were all stored (and how many
texts the stand-in had embedded by then), when the stand-in gave its last answer (the time it sat
idle before it, and what came after it), the indexer's stage times, the index's size, peak memory, then a no-op run.

    python benchmarks/index_throughput.py --embedder fast [--rate 2000] [--limit-files N]

`--embedder local` (the default, the bundled CPU model):
Copies a deterministic slice of the Python standard library (the sorted top-level .py files of
`sysconfig.get_paths()["stdlib"]`, until at least --lines lines) into a temp dir, indexes it with
the local all-MiniLM-L6-v2 embedder behind a timing proxy, and prints

- wall time of index(), time inside the embedder, their ratio (target <= 1.08), chunks/s;
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
import json
import logging
import os
import pstats
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import _common
import numpy as np

from sai.config import load_config
from sai.indexing.indexer import index
from sai.models import IndexReport
from sai.project import Project
from sai.store.duckdb.tables import Connection

CONFIG_TEXT = "embedder: local\n"


class TimingEmbedder:
    """Stands in front of a real embedder: same interface, counts calls and time spent inside."""

    def __init__(self, inner: Any, *, record: bool = False) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.with_chunks, self.served = inner.with_chunks, inner.served
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

    def runs_elsewhere(self) -> bool:
        return self.inner.runs_elsewhere()

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
    """Counts and times Connection.open while active."""

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


def torch_threads() -> int | str:
    try:
        import torch
    except ImportError:  # the local embedder runs on ONNX Runtime: torch is only the reference
        return "none (no torch)"
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
    print(f"  ratio wall / embedder:    {ratio:8.3f}   (target <= 1.08: "
          f"{'PASS' if ratio <= 1.08 else 'FAIL'})")
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


# -- the fast embedder: a stand-in Ollama that costs no CPU ------------------------------------

VECTOR_POOL = 4096  # distinct precomputed vectors; a text's hash picks one


class FastServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, rate: float, dim: int) -> None:
        super().__init__(("127.0.0.1", 0), FastHandler)
        rng = np.random.default_rng(0)
        pool = rng.standard_normal((VECTOR_POOL, dim)).astype(np.float32)
        self.rows = [("[" + ",".join(f"{x:.6f}" for x in row) + "]").encode() for row in pool]
        self.rate = rate
        self.device = threading.Lock()  # one request on the device at a time
        self.inputs = self.requests = 0
        self.busy_s = 0.0
        self.last_s = 0.0  # time.time() of the last answer: what of the wall came after the embedder


class FastHandler(_common.StandInHandler):
    server: FastServer
    VRAM = 1 << 30  # a device: it sleeps instead of using this machine's cores

    def do_POST(self) -> None:  # noqa: N802
        body, inputs = self._request()
        srv = self.server
        with srv.device:
            time.sleep(len(inputs) / srv.rate)
            srv.inputs += len(inputs)
            srv.requests += 1
            srv.busy_s += len(inputs) / srv.rate
            srv.last_s = time.time()
        rows = b",".join(srv.rows[hash(text) % VECTOR_POOL] for text in inputs)
        self._send(b'{"model":"' + body["model"].encode() + b'","embeddings":[' + rows + b"]}")


def serve(rate: float, dim: int) -> None:
    """Run the fast stand-in until stdin closes; its url is the first line printed."""
    server = FastServer(rate, dim)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()


def server_counts(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/counts") as answer:
        return json.loads(answer.read())


def stdlib_tree(target: Path, limit: int | None) -> int:
    """Copy the stdlib's .py files (site-packages left out, sorted, the first `limit`)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chosen = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.relative_to(stdlib).parts)
    chosen = chosen[:limit] if limit else chosen
    for path in chosen:
        dest = target / path.relative_to(stdlib)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    print(f"corpus: {len(chosen)} .py files of {stdlib} -> {target}")
    return len(chosen)


class StageCapture(logging.Handler):
    """Keeps the stage times index() logs at debug level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.times: Any = None  # sai.indexing.stage_times.StageTimes (absent from older indexers)

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "stage_times"):
            self.times = record.stage_times


def fast_run(root: Path, url: str, args: argparse.Namespace) -> None:
    config = f"embedder: ollama\nmodel: nomic-embed-text\next: py\nollama:\n  url: {url}\n"
    if args.parallel:
        config += f"  parallel: {args.parallel}\n"
    (root / "sai-cfg.yml").write_text(config, encoding="utf-8")
    capture = StageCapture()
    logger = logging.getLogger("sai.indexing.indexer")
    logger.addHandler(capture)
    logger.setLevel(logging.DEBUG)
    for run in ("full", "no-op"):
        before = server_counts(url)
        project = open_project(root, None)
        searchable: list[tuple[float, int, float]] = []

        def stored(pending: int, start: float = time.perf_counter(), sent: float = before["inputs"],
                   searchable: list[tuple[float, int, float]] = searchable) -> None:
            searchable.append((time.perf_counter() - start, pending, server_counts(url)["inputs"] - sent))

        try:
            cpu, start, started = os.times(), time.perf_counter(), time.time()
            report = index(project, on_searchable=stored)
            wall = time.perf_counter() - start
            used = os.times()
        finally:
            project.close()
        db = project.config.db_path
        held = _common.bytes_under(db.parent)  # the whole index directory, as benchmarks/index_bytes.py weighs it
        after = server_counts(url)
        inputs = after["inputs"] - before["inputs"]
        own = inputs / args.rate
        # CPU of this process and of its finished children (the preparing workers; the stand-in,
        # still running, is not counted)
        busy = sum(b - a for a, b in zip(cpu[:4], used[:4], strict=True))
        print(f"run ({run}): {report}")
        print(f"  wall {wall:.2f} s; embedder's own time {own:.2f} s ({inputs:.0f} texts at "
              f"{args.rate:g}/s, {after['requests'] - before['requests']:.0f} requests); "
              f"CPU {busy:.1f} s ({busy / wall / (os.cpu_count() or 1):.0%} of the cores)")
        for at, pending, sent in searchable:
            print(f"  chunks all stored at {at:.2f} s, {pending} of them waiting for a vector; "
                  f"{sent:.0f} texts embedded by then")
        if inputs:
            last = after["last_s"] - started
            print(f"  the embedder's last answer at {last:.2f} s (idle {last - own:.2f} s before it); "
                  f"{wall - last:.2f} s after it")
        if own:
            verdict = "PASS" if wall / own <= 1.3 else "FAIL"
            print(f"  ratio wall / embedder: {wall / own:.3f}   (target <= 1.3: {verdict})")
        else:
            print(f"  no-op target < 1 s: {'PASS' if wall < 1 else 'FAIL'}")
        if capture.times:
            print(f"  stages: {capture.times.summary()}")
        print(f"  index: the file {db.stat().st_size / 1e6:.1f} MB, its directory {held / 1e6:.1f} MB "
              f"({held / max(report.chunks, 1):,.0f} B a chunk)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"  peak RSS: this process {peak:.0f} MB, largest finished child {kids:.0f} MB")


def fast_main(args: argparse.Namespace) -> None:
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--rate", str(args.rate), "--dim", str(args.dim)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tmp = None
    try:
        url = server.stdout.readline().strip()
        if args.tree:
            root = Path(args.tree).resolve()
        else:
            tmp = tempfile.TemporaryDirectory(prefix="sai-bench-")
            root = Path(tmp.name)
            stdlib_tree(root, args.limit_files)
        fast_run(root, url, args)
    finally:
        server.stdin.close()
        server.wait()
        if tmp is not None:
            tmp.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("local", "fast"), default="local",
                        help="local: the bundled MiniLM; fast: a stand-in Ollama at --rate texts/s")
    parser.add_argument("--rate", type=float, default=2000.0, help="fast: texts/s of the stand-in (2000)")
    parser.add_argument("--dim", type=int, default=768, help="fast: vector length (768, nomic-embed-text)")
    parser.add_argument("--limit-files", type=int, metavar="N", help="fast: the first N stdlib files")
    parser.add_argument("--tree", metavar="DIR", help="fast: index this tree (its sai-cfg.yml is overwritten)")
    parser.add_argument("--parallel", type=int, metavar="N", help="fast: ollama.parallel")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--lines", type=int, default=20000, help="local: corpus size in lines (20000)")
    parser.add_argument("--keep", metavar="DIR", help="build the tree and index here and keep it")
    parser.add_argument("--profile", action="store_true", help="cProfile top-20 of SAI's overhead")
    parser.add_argument("--torch-threads", type=int, metavar="N", help="torch.set_num_threads(N)")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.rate, args.dim)
        return 0
    if args.embedder == "fast":
        print(f"load average before: {os.getloadavg()}  (cores: {os.cpu_count()})")
        fast_main(args)
        print(f"load average after:  {os.getloadavg()}")
        return 0
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
