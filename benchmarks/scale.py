"""SAI at monorepo size: indexing, re-indexing, searching and duplicates at `--chunks` chunks.

Builds a tree of the Python code on this machine (the standard library, then site-packages, each
file once, sorted; past them, copies whose def and class names carry a per-copy suffix, so texts
stay distinct), indexes it with a stand-in embedder (a subprocess speaking Ollama's API: hashed
word vectors, 384-d, no model, so SAI's own work is what is measured; texts sharing words get
higher cosines), and prints:

- index wall time against the embedder's own (busy) time; index file bytes per chunk (and the
  vector sidecar's); a no-op re-index in the process (with the stage times it logs) and by the CLI;
- hybrid / semantic / lexical p50 and p95 in one warm process, with no filter, a selective glob
  and a language;
- the first query after a one-file refresh, in the refreshing process and in another warm one;
- RSS and PSS (the proportional share of pages shared through the page cache) of one searching
  process alone and of four at once;
- recall@10 of the vector scan against an exact scan of the same rows;
- find_similar from a stored chunk and from a snippet; a watcher's start over the whole tree and
  the time from a saved file to the batch that re-indexed it;
- status, a symbol look-up after a write, and find_duplicates' time and peak RSS (a subprocess);
- following the code: `find_references` and `callers` p50/p95 for names drawn from the stored
  definitions, and `impact` after an edit of one function (the tree committed to a git repository
  once, the edit refreshed, impact asked against HEAD; the edit then undone), in a warm process.

Tree, index and figures are cached under `--cache` (reused when present).

    nice -n 10 .venv/bin/python benchmarks/scale.py --chunks 100000 [--cache DIR] [--queries 20]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.request
import zlib
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import _common
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sai import find_duplicates, find_similar, index, refresh, search, status  # noqa: E402
from sai.chunking import make_chunker  # noqa: E402
from sai.config import load_config  # noqa: E402
from sai.impact import impact  # noqa: E402
from sai.indexing.watch import Watcher  # noqa: E402
from sai.project import Project  # noqa: E402
from sai.query.calls import callers  # noqa: E402
from sai.query.lookup import find_symbol  # noqa: E402
from sai.query.references import find_references  # noqa: E402
from sai.settings import ALWAYS_PRUNED, SCHEMA  # noqa: E402
from sai.source.files import has_generated_marker  # noqa: E402

SOURCES = (Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"]))
DIM = 384
QUERIES = ("parse a header line", "encode the message body", "open a socket connection", "read the config file",
           "format a date", "split words", "compress data", "handle an error", "quote a string", "iterate lines",
           "tensor shape mismatch", "retry the request", "load a json file", "walk a directory tree")
MODES = ("hybrid", "semantic", "lexical")
DEF = re.compile(r"^(\s*(?:async\s+)?(?:def|class)\s+)([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


# -- the stand-in embedder (its own process) ------------------------------------------------

WORD = re.compile(r"[a-z]+|[0-9]+")


NOISE = 0.2  # the length of the dense part beside the unit bag of words
_DENSE = np.random.default_rng(0).standard_normal((4096, DIM))
_DENSE /= np.linalg.norm(_DENSE, axis=1, keepdims=True)


def embed_text(text: str) -> list[float]:
    """Hashed words (identifiers split into their lower-case runs), each on 3 signed dimensions,
    plus a dense part picked by the text's hash, to 8 decimals: as many bits a value as a model's
    float32, so the index stores and compresses the vectors as it does a model's. With the bag
    alone, to 5 decimals, DuckDB's ALP packed a vector into ~490 bytes against ~1,460 for
    MiniLM's (benchmarks/DECISIONS.md, "The stand-in's vectors")."""
    words = WORD.findall(text.lower()) or ["empty"]
    h = np.fromiter((zlib.crc32(w.encode()) for w in words), np.int64, len(words))
    dims = np.concatenate([h % DIM, (h >> 9) % DIM, (h >> 18) % DIM])
    signs = np.concatenate([np.where((h >> k) & 1, 1.0, -1.0) for k in (27, 28, 29)])
    v = np.bincount(dims, weights=signs, minlength=DIM)
    v = v / (np.linalg.norm(v) or 1.0) + NOISE * _DENSE[zlib.crc32(text.encode()) % len(_DENSE)]
    return np.round(v / np.linalg.norm(v), 8).tolist()


class StandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), StandInHandler)
        self.lock = threading.Lock()
        self.inputs = self.requests = 0
        self.busy_s = 0.0


class StandInHandler(_common.StandInHandler):
    server: StandIn

    def do_POST(self) -> None:  # noqa: N802
        body, inputs = self._request()
        started = time.perf_counter()
        data = json.dumps({"model": body["model"], "embeddings": [embed_text(t) for t in inputs]}).encode()
        with self.server.lock:
            self.server.inputs += len(inputs)
            self.server.requests += 1
            self.server.busy_s += time.perf_counter() - started
        self._send(data)


def serve() -> None:
    server = StandIn()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()


def counts(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/counts") as answer:
        return json.loads(answer.read())


# -- the tree -------------------------------------------------------------------------------

def indexed(rel: Path, text: str) -> bool:
    """Whether SAI's walk takes the file: no always-pruned directory, no generated marker in
    its head (a tree counted without this held 960k indexed chunks of a million cut)."""
    return not set(rel.parts) & set(ALWAYS_PRUNED) and not has_generated_marker(text.encode("utf-8"))


def build_tree(root: Path, chunks: int) -> dict[str, int]:
    """Every source .py file once (by content), then renamed copies, until SAI's own chunker
    has cut `chunks` chunks from what is written (a copy cuts as its original: its count is
    taken once). A byte budget missed by a fifth at a million: the sources' bytes per chunk
    differ (501 B in the first 100k chunks' files, 597 B over all of them)."""
    chunker = make_chunker("ast", max_chunk_chars=SCHEMA["max_chunk_chars"].default)
    seen: set[int] = set()
    originals: list[tuple[Path, str]] = []
    for n, base in enumerate(SOURCES):
        for path in sorted(base.rglob("*.py")):
            try:
                if path.stat().st_size > 500_000 or "__pycache__" in path.parts:
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            digest = zlib.crc32(text.encode())
            rel = Path(f"s{n}") / path.relative_to(base)
            if digest not in seen and indexed(rel, text):
                seen.add(digest)
                originals.append((rel, text))
    cut: dict[int, int] = {}  # original -> chunks its text cuts into
    written = counted = copies = 0
    while counted < chunks:
        for k, (rel, text) in enumerate(originals):
            if k not in cut:
                cut[k] = len(chunker.chunk(rel.as_posix(), text, "python"))
            if copies:
                rel = Path(f"v{copies}") / rel
                text = f"# variant {copies}\n" + DEF.sub(rf"\1\2_v{copies}", text)
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written += len(text)
            counted += cut[k]
            if counted >= chunks:
                break
        copies += 1
    return {"bytes": written, "chunks_cut": counted, "copies": copies - 1, "distinct_sources": len(originals)}


def write_config(root: Path, url: str) -> None:
    (root / "sai-cfg.yml").write_text(f"embedder: ollama\nmodel: nomic-embed-text\next: py\nollama:\n  url: {url}\n",
                                      encoding="utf-8")


def open_project(root: Path) -> Project:
    return Project(load_config(cwd=root, env={}))


# -- measuring ------------------------------------------------------------------------------

def pct(seconds: list[float]) -> dict[str, float]:
    ms = np.sort(np.array(seconds) * 1000)
    return {"p50": round(float(statistics.median(ms)), 1),
            "p95": round(float(ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]), 1)}


def memory(pid: int) -> dict[str, float]:
    """RSS and PSS (MB) of a process, from smaps_rollup."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("Rss", "Pss", "Pss_Anon", "Pss_File"):
                out[name.lower()] = round(int(rest.split()[0]) / 1024, 1)
    return out


def latencies(project: Project, filters: dict[str, dict[str, str]], queries: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        times: dict[str, list[float]] = {name: [] for name in filters}
        for n in range(queries):
            for name, given in filters.items():
                start = time.perf_counter()
                search(project, QUERIES[n % len(QUERIES)], limit=8, mode=mode, **given)
                times[name].append(time.perf_counter() - start)
        out[mode] = {name: pct(seconds) for name, seconds in times.items()}
        print(f"  {mode}: {out[mode]}", flush=True)
    return out


def recall(project: Project, url: str, count: int = 60) -> dict[str, float]:
    """recall@10 of the table's nearest() against an exact scan over the same live rows."""
    with project.store.read() as reader:
        table = reader.copies.vectors()  # type: ignore[attr-defined]
    rng = np.random.default_rng(5)
    live = np.arange(len(table.ids)) if table.live is None else np.flatnonzero(table.live)
    picks = [np.asarray(table.matrix[r]) for r in rng.choice(live, count - len(QUERIES), replace=False)]
    vectors = [project.embedder.embed_query(q) for q in QUERIES] + picks
    found, timings = [], []
    for q in vectors:
        start = time.perf_counter()
        got = {i for i, _ in table.nearest(q, 10)}
        timings.append(time.perf_counter() - start)
        scores = np.asarray(table.matrix[live]) @ q if len(live) < 300_000 else np.concatenate(
            [np.asarray(table.matrix[live[k:k + 200_000]]) @ q for k in range(0, len(live), 200_000)])
        tenth = np.partition(-scores, 9)[9]  # ties at the tenth score: any of them is a right answer
        exact = {int(i) for i in table.ids[live[-scores <= tenth + 1e-6]]}
        found.append(min(1.0, len(got & exact) / 10))
    return {"recall_at_10": round(float(np.mean(found)), 4), "worst": float(np.min(found)),
            "scan_ms": pct(timings), "rows": int(len(live)),
            "first_pass_rows": getattr(sys.modules["sai.store.duckdb.vectors"], "FIRST_PASS_ROWS", None)}


def start_workers(root: Path, n: int) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen([sys.executable, __file__, "--worker", str(root)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True) for _ in range(n)]


def ask(workers: list[subprocess.Popen[str]], command: str) -> list[dict[str, Any]]:
    for w in workers:
        assert w.stdin is not None
        w.stdin.write(command + "\n")
        w.stdin.flush()
    return [json.loads(w.stdout.readline()) for w in workers if w.stdout is not None]


def stop_workers(workers: list[subprocess.Popen[str]]) -> None:
    for w in workers:
        if w.stdin is not None:
            w.stdin.close()
        w.wait(timeout=60)


def worker(root: Path) -> None:
    """A searching process (like an agent's server): warms up, then answers commands on stdin."""
    project = open_project(root)
    for line in sys.stdin:
        if line.strip() == "warm":
            for n in range(len(QUERIES)):
                for mode in MODES:
                    search(project, QUERIES[n], limit=8, mode=mode)
            print(json.dumps({"pid": os.getpid()}), flush=True)
        elif line.strip() == "first":
            start = time.perf_counter()
            search(project, "decode the response body", limit=8, mode="hybrid")
            first = time.perf_counter() - start
            start = time.perf_counter()
            search(project, "decode the response body", limit=8, mode="hybrid")
            print(json.dumps({"first_ms": round(first * 1000, 1),
                              "second_ms": round((time.perf_counter() - start) * 1000, 1)}), flush=True)
    project.close()


def duplicates_child(root: Path) -> None:
    project = open_project(root)
    start = time.perf_counter()
    clusters = find_duplicates(project)
    print(json.dumps({"seconds": round(time.perf_counter() - start, 1), "clusters": len(clusters),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}), flush=True)


def noop(project: Project) -> tuple[float, str]:
    """A no-op index run's wall time and the stage times it logs (where a slow one spends it)."""
    stages: list[str] = []

    class Stages(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if hasattr(record, "stage_times"):
                stages.append(record.getMessage())

    logger, handler = logging.getLogger("sai.indexing.indexer"), Stages()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        start = time.perf_counter()
        index(project)
        return round(time.perf_counter() - start, 2), "; ".join(stages)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def refresh_one(project: Project, root: Path, key: str, n: int) -> float:
    path = root / key
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef scale_probe_{n}(value):\n    return value * {n}\n",
                    encoding="utf-8")
    start = time.perf_counter()
    refresh(project, [key])
    return time.perf_counter() - start


def similar_latency(project: Project, keys: list[str], queries: int) -> dict[str, Any]:
    """find_similar p50/p95 from a stored chunk (path:line) and from a snippet, in a warm process."""
    by_chunk: list[float] = []
    by_code: list[float] = []
    with project.store.read() as reader:
        at = [(key, found[len(found) // 2].start_line) for key in keys[:queries]
              if (found := reader.chunks_of_file(key))]
    for key, line in at:
        start = time.perf_counter()
        find_similar(project, path=key, line=line, limit=8)
        by_chunk.append(time.perf_counter() - start)
    for q in (QUERIES * (1 + queries // len(QUERIES)))[:queries]:
        start = time.perf_counter()
        find_similar(project, code=f"def probe():\n    # {q}\n    return None\n", limit=8)
        by_code.append(time.perf_counter() - start)
    return {"chunk": pct(by_chunk), "code": pct(by_code)}


def following(project: Project, root: Path, keys: list[str], queries: int) -> dict[str, Any]:
    """refs, callers and impact p50/p95, warm (the docstring's last item)."""
    with project.store.read() as reader:
        units = [row for key in keys[:queries] for row in reader.chunks_of_file(key)
                 if row.symbol and row.kind in ("function", "method")]
    units = units[:: max(1, len(units) // queries)][:queries]
    names = [u.symbol.rsplit(".", 1)[-1] for u in units]
    find_references(project, names[0])  # the symbol table built once, as a server holds it
    timings: dict[str, list[float]] = {"refs": [], "callers": [], "impact": []}
    for name in names:
        for label, ask_one in (("refs", find_references), ("callers", callers)):
            start = time.perf_counter()
            ask_one(project, name)
            timings[label].append(time.perf_counter() - start)
    if not (root / ".git").is_dir():
        for args in (("init", "-q"), ("add", "-A"), ("-c", "user.name=s", "-c", "user.email=s@example.com",
                                                     "commit", "-qm", "tree")):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    for unit in units:
        path = root / unit.path
        original = path.read_text(encoding="utf-8")
        lines = original.splitlines(keepends=True)
        lines[unit.end_line - 1] = lines[unit.end_line - 1].rstrip("\n") + "  # scale probe\n"  # the unit's last line
        path.write_text("".join(lines), encoding="utf-8")
        refresh(project, [unit.path])
        start = time.perf_counter()
        impact(project)
        timings["impact"].append(time.perf_counter() - start)
        path.write_text(original, encoding="utf-8")
        refresh(project, [unit.path])
    return {label: pct(values) for label, values in timings.items()} | {"names": len(names)}


def watch_latency(project: Project, root: Path, key: str, saves: int = 3) -> dict[str, Any]:
    """A watcher over the whole tree: how long it takes to start (its first, no-op, index run)
    and, per saved file, from the save to the batch that re-indexed it, and its process's RSS."""
    reports: list[tuple[float, Any]] = []
    arrived = threading.Condition()

    def report(r: Any) -> None:
        with arrived:
            reports.append((time.perf_counter(), r))
            arrived.notify_all()

    stop = threading.Event()
    start = time.perf_counter()
    thread = threading.Thread(target=Watcher(project, report=report, stop=stop).run, daemon=True)
    thread.start()
    with arrived:
        arrived.wait_for(lambda: reports, timeout=600)
    started = reports[0][0] - start if reports else None
    after: list[float] = []
    for n in range(saves):
        seen = len(reports)
        path = root / key
        saved = time.perf_counter()
        path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef scale_watch_{n}():\n    return {n}\n",
                        encoding="utf-8")
        with arrived:
            arrived.wait_for(lambda seen=seen: len(reports) > seen, timeout=120)  # type: ignore[misc]
        if len(reports) > seen:
            after.append(reports[seen][0] - saved)
    stop.set()
    thread.join(timeout=60)
    return {"start_s": None if started is None else round(started, 2),
            "save_to_indexed_ms": [round(t * 1000) for t in after], "rss_mb": memory(os.getpid())["rss"]}


# -- the vector store alone, at sizes the machine cannot index in time ------------------------

class ArraySource:
    """A VectorSource (store/duckdb/sidecar.py) over arrays: `n` rows made from a built index's vectors,
    each a base vector plus noise (cosine ~0.85 to it), 20 chunks per file."""

    def __init__(self, base: np.ndarray, n: int) -> None:
        self.base, self.n = base, n
        self.ids = np.arange(1, n + 1, dtype=np.int64)
        self.extra: dict[int, np.ndarray] = {}  # rows a simulated write replaced
        self.logged: np.ndarray | None = None  # what the writers' change log names (None: no log)

    def vector(self, ids: np.ndarray) -> np.ndarray:
        rng = np.random.default_rng(int(ids[0]))
        v = self.base[(ids - 1) % len(self.base)] + rng.standard_normal((len(ids), DIM)).astype(np.float32) * 0.032
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def touched_since(self, token: str) -> np.ndarray | None:
        return self.logged

    def vector_batches(self, ids: np.ndarray | None) -> Any:
        import pyarrow as pa

        wanted = self.ids if ids is None else np.asarray(ids, np.int64)
        for k in range(0, len(wanted), 65_536):
            part = wanted[k:k + 65_536]
            matrix = self.vector(part)
            yield pa.record_batch({
                "id": pa.array(part), "present": pa.array(np.ones(len(part), np.uint8)),
                "path": pa.array([f"p{i // 20}.py" for i in part]), "language": pa.array(["python"] * len(part)),
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), DIM)})


def vectors_only(args: argparse.Namespace) -> dict[str, Any]:
    from sai.store.duckdb.sidecar import Sidecar

    if args.base_vectors is not None:
        base = np.load(args.base_vectors).astype(np.float32)
    else:
        base_dir = next((args.cache / "tree-100000" / ".index" / "code.duckdb.vectors").glob("*/manifest.json")).parent
        m = json.loads((base_dir / "manifest.json").read_text())
        base = np.fromfile(base_dir / f"g{m['generation']}.f32", np.float32, count=m["rows"] * DIM).reshape(-1, DIM)
    source = ArraySource(base, args.vectors_only)
    sidecar = Sidecar(args.cache / f"vectors-{args.vectors_only}")
    shutil.rmtree(sidecar.dir, ignore_errors=True)  # built anew: the build is measured
    out: dict[str, Any] = {"rows": args.vectors_only, "base": str(args.base_vectors or "the 100k index's vectors")}
    start = time.perf_counter()
    sidecar.view(source, token="t1", origin="bench", dim=DIM)
    out["build_s"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    table = sidecar.view(source, token="t1", origin="bench", dim=DIM)
    out["open_ms"] = round((time.perf_counter() - start) * 1000, 1)
    # a one-file refresh: its 20 chunks written again, patched from the writers' change log
    source.logged = source.ids[160:180]
    start = time.perf_counter()
    table = sidecar.view(source, token="t2", origin="bench", dim=DIM)
    out["patch_one_file_ms"] = round((time.perf_counter() - start) * 1000, 1)
    out |= scan_figures(table, source)
    print(json.dumps(out), flush=True)
    workers = [subprocess.Popen([sys.executable, __file__, "--vector-worker", str(sidecar.dir)], stdout=subprocess.PIPE,
                                stdin=subprocess.PIPE, text=True) for _ in range(5)]
    for group, name in ((workers[:1], "rss_one"), (workers[1:], "rss_four")):
        for w in group:
            w.stdin.write("go\n")  # type: ignore[union-attr]
            w.stdin.flush()  # type: ignore[union-attr]
        for w in group:
            w.stdout.readline()  # type: ignore[union-attr]
        each = [memory(w.pid) for w in group]
        out[name] = {"each": each, "pss_sum": round(sum(e["pss"] for e in each)),
                     "rss_sum": round(sum(e["rss"] for e in each))}
        for w in group:
            w.stdin.close()  # type: ignore[union-attr]
            w.wait()
    return out


def scan_figures(table: Any, source: ArraySource, count: int = 40) -> dict[str, Any]:
    """Two-pass scan latency and recall@10 against the exact scan, without and with a 10% filter."""
    rng = np.random.default_rng(9)
    picks = rng.choice(len(table.ids), count, replace=False)
    queries = source.vector(np.asarray(table.ids[picks]) + 7)  # near a row, not one
    live = np.flatnonzero(table.live) if table.live is not None else np.arange(len(table.ids))
    out: dict[str, Any] = {}
    tenth_of_files = table.mask(paths=[f"p{k}.py" for k in range(0, len(table.ids) // 20, 10)])
    for name, mask in (("none", None), ("10% of files", tenth_of_files)):
        rows = live if mask is None else np.flatnonzero(mask)
        times, exact_times, found = [], [], []
        for q in queries:
            start = time.perf_counter()
            got = {i for i, _ in table.nearest(q, 10, mask=mask)}
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            scores = np.concatenate([table.matrix[k:k + 200_000] @ q  # slices: no gather
                                     for k in range(0, len(table.ids), 200_000)])[rows]
            exact_times.append(time.perf_counter() - start)
            tenth = np.partition(-scores, 9)[9]
            exact = {int(i) for i in table.ids[rows[-scores <= tenth + 1e-6]]}
            found.append(min(1.0, len(got & exact) / 10))
        out[name] = {"scan": pct(times), "exact_scan": pct(exact_times),
                     "recall_at_10": round(float(np.mean(found)), 4), "worst": float(np.min(found))}
    return out


def vector_worker(directory: Path) -> None:
    from sai.store.duckdb.sidecar import Manifest, Sidecar

    sys.stdin.readline()
    sidecar = Sidecar(directory)
    m = Manifest.read(sidecar.manifest_path)
    assert m is not None
    table = sidecar.view(None, token=m.token, origin=m.origin, dim=m.dim)  # type: ignore[arg-type]
    rng = np.random.default_rng(os.getpid())
    for _ in range(20):
        table.nearest(np.asarray(table.matrix[int(rng.integers(0, len(table.ids)))]), 10)
    print("done", flush=True)
    sys.stdin.read()


# -- the run --------------------------------------------------------------------------------

def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    root = args.cache / f"tree-{args.chunks}"
    results: dict[str, Any] = {"chunks_wanted": args.chunks}
    done = root / ".index" / "scale-index.json"
    if not done.is_file():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        results["tree"] = build_tree(root, args.chunks)
        write_config(root, url)
        before = counts(url)
        project = open_project(root)
        start = time.perf_counter()
        searchable: list[float] = []  # when the chunks are stored, before the vectors
        report = index(project, on_searchable=lambda _waiting: searchable.append(time.perf_counter() - start))
        wall = time.perf_counter() - start
        project.close()
        after = counts(url)
        stored = searchable[0] if searchable else wall
        figures = {"wall_s": round(wall, 1), "chunks_stored_s": round(stored, 1),
                   "vectors_stage_s": round(wall - stored, 1),
                   "embedder_busy_s": round(after["busy_s"] - before["busy_s"], 1),
                   "texts": after["inputs"] - before["inputs"], "chunks": report.chunks, "files": report.files,
                   "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                   "tree": results["tree"]}
        done.write_text(json.dumps(figures), encoding="utf-8")
    write_config(root, url)
    results["index"] = json.loads(done.read_text(encoding="utf-8"))
    print(f"index: {results['index']}", flush=True)
    if args.build_only:
        return results
    project = open_project(root)
    results["noop_reindex_s"], results["noop_stages"] = noop(project)
    start = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "sai", "--silent"], cwd=root, capture_output=True, text=True)
    results["noop_cli_s"] = round(time.perf_counter() - start, 2) if cli.returncode == 0 else cli.stderr.strip()
    db = project.config.db_path
    chunks = results["index"]["chunks"]
    sidecar = db.with_name(db.name + ".vectors")
    results["file_bytes_per_chunk"] = round(db.stat().st_size / chunks)
    print(f"no-op {results['noop_reindex_s']} s ({results['noop_stages']}), by the CLI {results['noop_cli_s']} s; "
          f"index file {db.stat().st_size / 1e6:.0f} MB "
          f"({results['file_bytes_per_chunk']} B/chunk)", flush=True)

    with project.store.read() as reader:
        sizes = {k: r.chunk_count for k, r in reader.files().items() if r.chunk_count >= 4}
    if args.following_only:  # the section below alone, on the tree built before
        results["following"] = following(project, root, sorted(sizes), args.queries)
        print(f"following the code: {results['following']}", flush=True)
        project.close()
        return results
    selective = min(sizes, key=lambda k: (sizes[k], k))
    probe = max(sizes, key=lambda k: (sizes[k] < 40, sizes[k], k))  # a mid-size file to refresh
    filters = {"none": {}, f"glob {selective}": {"path_glob": selective}, "language py": {"language": "py"}}
    search(project, "warm up", limit=8, mode="hybrid")  # loads the tables once
    results["sidecar_bytes_per_chunk"] = round(_common.bytes_under(sidecar) / chunks)
    results["latency"] = latencies(project, filters, args.queries)
    results["recall"] = recall(project, url)
    print(f"recall: {results['recall']}", flush=True)
    results["similar"] = similar_latency(project, sorted(sizes), args.queries)
    print(f"similar: {results['similar']}", flush=True)

    start = time.perf_counter()
    status(project)
    results["status_s"] = round(time.perf_counter() - start, 2)

    one = start_workers(root, 1)
    ask(one, "warm")
    results["rss_one"] = memory(one[0].pid)
    refresh_s = refresh_one(project, root, probe, 1)
    start = time.perf_counter()
    search(project, "decode the response body", limit=8, mode="hybrid")
    first_here = time.perf_counter() - start
    start = time.perf_counter()
    find_symbol(project, "scale_probe_1")
    results["symbol_after_write_s"] = round(time.perf_counter() - start, 3)
    results["after_refresh"] = {"refresh_s": round(refresh_s, 2), "first_query_ms_writer": round(first_here * 1000, 1),
                                "other_process": ask(one, "first")[0]}
    stop_workers(one)
    print(f"after a one-file refresh: {results['after_refresh']}", flush=True)
    four = start_workers(root, 4)
    ask(four, "warm")
    each = [memory(w.pid) for w in four]
    results["rss_four"] = {"each": each, "rss_sum": round(sum(m["rss"] for m in each)),
                           "pss_sum": round(sum(m["pss"] for m in each))}
    stop_workers(four)
    print(f"memory: one {results['rss_one']}; four {results['rss_four']}", flush=True)
    results["watch"] = watch_latency(project, root, probe)
    print(f"watch: {results['watch']}", flush=True)
    results["following"] = following(project, root, sorted(sizes), args.queries)
    print(f"following the code: {results['following']}", flush=True)
    project.close()

    if not args.skip_duplicates:
        try:
            child = subprocess.run([sys.executable, __file__, "--duplicates", str(root)], capture_output=True,
                                   text=True, timeout=args.duplicates_timeout)
            results["duplicates"] = json.loads(child.stdout.strip().splitlines()[-1]) if child.returncode == 0 \
                else {"error": child.stderr.strip().splitlines()[-1:]}
        except subprocess.TimeoutExpired:
            results["duplicates"] = {"error": f"not done after {args.duplicates_timeout} s"}
        print(f"duplicates: {results['duplicates']}", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("SAI_SCALE_CACHE", "/tmp/sai-scale")))
    parser.add_argument("--queries", type=int, default=20, help="queries per mode and filter")
    parser.add_argument("--skip-duplicates", action="store_true")
    parser.add_argument("--build-only", action="store_true", help="build (or find) the index, measure nothing")
    parser.add_argument("--following-only", action="store_true",
                        help="build (or find) the index, measure refs, callers and impact alone")
    parser.add_argument("--duplicates-timeout", type=float, default=1200)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--duplicates", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--vectors-only", type=int, metavar="N",
                        help="the vector store alone at N rows, from the vectors of the 100k run's index")
    parser.add_argument("--base-vectors", type=Path, metavar="NPY",
                        help="with --vectors-only: the rows are made from these vectors (an .npy of (n, 384) float32)")
    parser.add_argument("--vector-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--first-pass-rows", type=int, metavar="N",
                        help="run the bit first pass above N rows (default: vectors.FIRST_PASS_ROWS)")
    args = parser.parse_args()
    if args.first_pass_rows is not None:
        import sai.store.duckdb.vectors as vectors

        vectors.FIRST_PASS_ROWS = args.first_pass_rows
    if args.serve:
        serve()
        return 0
    if args.worker:
        worker(args.worker)
        return 0
    if args.duplicates:
        duplicates_child(args.duplicates)
        return 0
    if args.vector_worker:
        vector_worker(args.vector_worker)
        return 0
    if args.vectors_only:
        results = vectors_only(args)
        name = f"{args.vectors_only}-{args.base_vectors.stem}" if args.base_vectors else str(args.vectors_only)
        (args.cache / f"results-vectors-{name}.json").write_text(json.dumps(results, indent=1))
        print(json.dumps(results, indent=1))
        return 0
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        results = run(args, url)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait()
    out = args.cache / f"results-{args.chunks}{'-following' if args.following_only else ''}.json"
    out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
