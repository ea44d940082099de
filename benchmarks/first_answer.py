"""Seconds until the first answer, and until all vectors exist, of `sai --query` on an unindexed tree.

The tree: a fresh copy of the standard library's Python files (sorted by path; tests and vendored
trees left out) up to about `--chunks` AST chunks, docstrings blanked as in quality.py (their first
sentences are the queries), with `embedder: local` (the offline model); `--embedder fast` uses
index_throughput.py's stand-in Ollama (`--rate` texts/s, random vectors: timings only, no MRR).

1. Timeline: `python -m sai --query Q --json` in the copy, as a subprocess: the seconds until its
   answer reaches stdout (the first answer: chunks stored, vectors still to come) and until it
   exits (every vector written: the same run embeds them after answering).
2. Quality while the vectors come: copies of the finished index with only the first 0 / 10 / 50 /
   100 % of the chunks (by id: the order the indexer embeds them) keeping their vector; hybrid
   and lexical MRR@10 over the docstring queries (quality.py's correctness: the function's own
   chunk).

    .venv/bin/python benchmarks/first_answer.py [--chunks 20000] [--queries 200] [--work DIR]
        [--embedder local|fast] [--rate 2000] [--first-only]

`--first-only` stops the run once it has answered (a later `sai` finishes the vectors) and skips
the quality step: the first answer needs no model, so it is the same with any embedder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import duckdb
from _quality_corpus import PY_PRUNED, Function, first_sentence, is_correct, python_file, usable_query

from sai.chunking import make_chunker
from sai.config import load_config
from sai.project import Project
from sai.query import search

REPO = Path(__file__).resolve().parent.parent
FRACTIONS = (0.0, 0.1, 0.5, 1.0)
TOP = 10


def build_tree(root: Path, chunks: int) -> list[tuple[Function, str]]:
    """Blanked stdlib files under root until `chunks` AST chunks; returns (function, query) pairs."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    chunker = make_chunker("ast", max_chunk_chars=2000)
    total, targets = 0, []
    for path in _python_files(stdlib):
        key = path.relative_to(stdlib).as_posix()
        try:
            blanked, _, documented = python_file(key, path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(blanked, encoding="utf-8")
        total += len(chunker.chunk(key, blanked, "python"))
        targets += [(fn, first_sentence(doc)) for fn, doc in documented if usable_query(first_sentence(doc), fn.name)]
        if total >= chunks:
            break
    print(f"tree: {total} chunks (AST estimate), {len(targets)} docstring queries -> {root}", flush=True)
    return targets


def _python_files(stdlib: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(d for d in dirnames if d not in PY_PRUNED)
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    return sorted(found, key=lambda p: p.relative_to(stdlib).as_posix())


def write_config(root: Path, url: str | None) -> None:
    text = f"embedder: ollama\nmodel: nomic-embed-text\nollama:\n  url: {url}\n" if url else "embedder: local\n"
    (root / "sai-cfg.yml").write_text(text, encoding="utf-8")


def fast_server(rate: float) -> str:
    """index_throughput.py's stand-in Ollama in a thread (no CPU per text); its url."""
    import threading

    from index_throughput import FastServer

    server = FastServer(rate, 768)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def timeline(root: Path, query: str, *, first_only: bool) -> dict[str, float]:
    """Seconds from the start of `sai --query` to its answer on stdout and to its exit."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "sai", "--query", query, "--json"], cwd=root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    answer = proc.stdout.readline()
    first = time.monotonic() - started
    if first_only:
        proc.terminate()  # SIGTERM mid-embedding: what was written stays for the next run
    err = proc.stderr.read()
    proc.wait()
    done = time.monotonic() - started
    if (proc.returncode != 0 and not first_only) or not answer.strip():
        raise SystemExit(f"sai --query failed ({proc.returncode}): {err[-2000:]}")
    hits = json.loads(answer)["hits"]
    print(f"first answer: {first:.1f} s ({len(hits)} hits)" + ("" if first_only else f"; all vectors: {done:.1f} s"),
          flush=True)
    print("  " + "\n  ".join(line for line in err.splitlines() if not line.startswith("indexing: ")), flush=True)
    return {"first_answer_s": round(first, 2), **({} if first_only else {"all_vectors_s": round(done, 2)})}


def with_vectors(db: Path, fraction: float, target: Path) -> None:
    """A copy of the index where only the first `fraction` of the chunks (by id) keep a vector."""
    shutil.copy2(db, target)
    con = duckdb.connect(str(target))
    try:
        (count,) = con.execute("SELECT count(*) FROM source_code").fetchone()
        keep = int(count * fraction)
        con.execute("UPDATE source_code SET embedding = NULL WHERE id > (SELECT coalesce(max(id), 0) FROM "
                    "(SELECT id FROM source_code ORDER BY id LIMIT ?))", [keep])
        if keep == 0:  # the state right after the chunks are stored: no dimension known yet
            con.execute("UPDATE sai_meta SET value = '0' WHERE collection = 'source_code' AND key = 'vector_dim'")
        con.execute("UPDATE sai_meta SET value = 'bench' || ? WHERE collection = 'source_code' AND key = 'token'",
                    [str(fraction)])
    finally:
        con.close()


def mrr(root: Path, db: Path, targets: list[tuple[Function, str]], mode: str) -> float:
    config = load_config(flags={"duckdb.path": str(db)}, env={}, cwd=root)
    project = Project(config)
    try:
        total = 0.0
        for fn, query in targets:
            hits = search.search(project, query, limit=TOP, mode=mode)
            rank = next((i for i, h in enumerate(hits, start=1) if is_correct(h.path, h.start_line, h.end_line, fn)),
                        None)
            total += 1.0 / rank if rank else 0.0
        return total / max(len(targets), 1)
    finally:
        project.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("/tmp/sai-first-answer"))
    parser.add_argument("--embedder", choices=("local", "fast"), default="local")
    parser.add_argument("--rate", type=float, default=2000.0, help="fast: texts/s of the stand-in")
    parser.add_argument("--first-only", action="store_true", help="stop at the first answer; no MRR")
    args = parser.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    root = args.work / "tree"
    root.mkdir(parents=True)
    targets = build_tree(root, args.chunks)
    write_config(root, fast_server(args.rate) if args.embedder == "fast" else None)
    step = max(1, len(targets) // args.queries)
    chosen = targets[::step][: args.queries]
    figures: dict[str, object] = timeline(root, chosen[0][1], first_only=args.first_only)
    db = root / ".index" / "code.duckdb"
    if args.first_only or args.embedder == "fast":
        print(json.dumps(figures))
        return 0
    for fraction in FRACTIONS:
        copy = args.work / f"vectors-{int(fraction * 100)}.duckdb"
        with_vectors(db, fraction, copy)
        modes = ("hybrid", "lexical") if fraction in (0.0, 1.0) else ("hybrid",)
        for mode in modes:
            figures[f"mrr10_{mode}_{int(fraction * 100)}pct"] = round(mrr(root, copy, chosen, mode), 4)
        print(f"{int(fraction * 100):3d}% of vectors: " + ", ".join(
            f"{k.split('_')[1]} MRR@10 {v}" for k, v in figures.items() if k.endswith(f"_{int(fraction * 100)}pct")),
            flush=True)
    print(json.dumps({"queries": len(chosen), **figures}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
