"""Small DuckDB stores of random vectors for the store tests (tests/store, tests/indexing), and the
checks that their answers equal an exact scan of the file or copies read whole by a new process."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

from sai.models import FileRow, IndexMeta, NewChunk, chunk_id
from sai.store import Scope
from sai.store.duckdb import DuckDBStore
from sai.store.duckdb.chunk_reads import ChunkReads
from sai.store.duckdb.sidecar import Manifest, Sidecar
from sai.text.lexical import lexemes, query_lexemes
from sai.text.shape import SIGNATURE_SIZE

DIM = 16
COLLECTION = "code"
META = IndexMeta(backend="duckdb", embedder="ollama", model="nomic-embed-text", prefix_style="nomic",
                 vector_dim=DIM, chunker="ast", chunker_version=1)
REPO = Path(__file__).resolve().parents[1]  # the checkout, for subprocesses

# Shared by the subprocess scripts: write `count` chunks of file `key` with vectors drawn from `seed`.
HELPERS = f"""
import sys, os, time, signal
import numpy as np
from pathlib import Path
from sai.models import FileRow, NewChunk
from sai.store.duckdb import DuckDBStore
DIM = {DIM}
def chunks(key, count, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((count, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rows = [NewChunk(path=key, language="python", start_line=k + 1, end_line=k + 1, symbol=None,
                     text=f"{{key}} {{seed}} {{k}}", content_hash=f"{{key}}-{{seed}}-{{k}}", file_hash=f"{{seed}}",
                     no_duplicate=False, lexemes="x", shape=None) for k in range(count)]
    return [FileRow(key, 1, seed, f"{{seed}}", count)], rows, v
"""
WORDS = ("parse", "header", "socket", "config", "compress", "encode", "body", "retry", "json", "tree",
         "walk", "date", "quote", "split", "error", "stream")
QUERIES = ("parse header", "compress the body", "retry json socket", "walk tree date", "quote split error")


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


Stored = list[tuple[int, str, str, list[float]]]


def stored_vectors(db: Path) -> Stored:
    """(id, path, language, vector) of every chunk with a vector in the DuckDB file, read by a
    connection of its own (one open a check: an open costs DuckDB ~20 ms)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT id, path, language, embedding FROM {COLLECTION} "
                           "WHERE embedding IS NOT NULL").fetchall()
    finally:
        con.close()


def exact_top(db: Path | Stored, query: np.ndarray, k: int, *, paths: set[str] | None = None,
              language: str | None = None) -> list[tuple[int, float]]:
    """The top k by an exact scan of what the DuckDB file holds (or of its rows read by stored_vectors)."""
    rows = stored_vectors(db) if isinstance(db, Path) else db
    rows = [r for r in rows if (paths is None or r[1] in paths) and (language is None or r[2] == language)]
    if not rows:
        return []
    ids = np.array([r[0] for r in rows])
    scores = np.array([r[3] for r in rows], np.float32) @ query
    order = np.lexsort((ids, -scores))[:k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def assert_same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-5)


def unit_queries(n: int = 5) -> np.ndarray:
    q = np.random.default_rng(99).standard_normal((n, DIM)).astype(np.float32)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def assert_nearest_exact(store: DuckDBStore, db: Path) -> None:
    with store.read() as reader:
        stored = stored_vectors(db)
        queries = unit_queries()
        # each query without its own best hit (the last: an id the index does not hold), asked together
        excluded = [exact_top(stored, q, 1)[0][0] for q in queries[:-1]] + [10**6]
        for q, e, found in zip(queries, excluded, reader.nearest_each(queries, 10, exclude=excluded), strict=True):
            assert_same(found, [hit for hit in exact_top(stored, q, 11) if hit[0] != e][:10])
        for q in queries:
            assert_same(reader.nearest(q, 10), exact_top(stored, q, 10))
            scope_paths = {"src/f1.py", "src/f2.py", "src/f7.py"}
            table = reader.copies.vectors()  # type: ignore[attr-defined]
            assert_same(table.nearest(q, 4, mask=table.mask(paths=scope_paths)),
                        exact_top(stored, q, 4, paths=scope_paths))
            assert_same(table.nearest(q, 6, mask=table.mask(language="rust")), exact_top(stored, q, 6, language="rust"))


def manifest_of(db: Path) -> Manifest:
    found = Manifest.read(Sidecar.beside(db, COLLECTION).manifest_path)
    assert found is not None
    return found


def worded_chunks(key: str, count: int, seed: int) -> tuple[list[FileRow], list[NewChunk], np.ndarray]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((count, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(WORDS, 6)) + f" {key} s{seed} k{k}" for k in range(count)]
    # shape signatures of minima drawn from 4 values: chunks share some by chance (every 4th has none)
    shapes = [np.append(rng.integers(0, 4, SIGNATURE_SIZE), 20).astype("<u4").tobytes() if k % 4 else None
              for k in range(count)]
    rows = [NewChunk(path=key, language="python" if k % 3 else "rust", start_line=k + 1, end_line=k + 1,
                     symbol=str(rng.choice(WORDS)) if k % 2 else None, text=text,
                     content_hash=f"{key}-{seed}-{k}", file_hash=str(seed), no_duplicate=False,
                     lexemes=lexemes(text, path=key, symbol=None), shape=shapes[k])
            for k, text in enumerate(texts)]
    return [FileRow(key, 1, seed, str(seed), count)], rows, v


def build_worded(db: Path, files: int = 20, per_file: int = 5) -> DuckDBStore:
    store = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
    with store.write() as writer:
        writer.create(META)
        for f in range(files):
            writer.replace_files(*worded_chunks(f"src/f{f}.py", per_file, seed=f))
    return store


def answers_of(store: DuckDBStore) -> tuple[list[object], ...]:
    """Every BM25 answer (whole and scoped), every chunk row, symbol look-ups and shape signatures
    (each chunk's, and the chunks of a shape alike), as this store's copies give them (after the
    vector table, as a hybrid search reads them)."""
    with store.read() as reader:
        reader.nearest(unit_queries()[0], 1)
        ids = sorted(r.id for key in reader.files() for r in reader.chunks_of_file(key))
        scope = Scope(keys=frozenset(sorted(reader.files())[::3]))
        hits = [reader.lexical(query_lexemes(q), 15, scope=within) for q in QUERIES for within in (None, scope)]
        rows = reader.chunks(ids + [10**6], text=False)
        symbols = reader.symbols()
        defined = [[(d.symbol, d.path, d.start_line, d.chunk_id, d.match) for d in symbols.lookup(w[:k], limit=30)]
                   for w in WORDS for k in (2, len(w))]
        named = [symbols.row_id(chunk_id(r.path, r.start_line, r.end_line, r.content_hash)) for r in rows]
        shapes = reader.shapes()
        sigs, sizes = shapes.of(np.asarray(ids + [10**6]))
        alike = [[a.tolist() for a in shapes.alike(sig, 0.4)] for sig in sigs[::7]]
    hits = [[(i, round(s, 9)) for i, s in found] for found in hits]
    return hits, rows, defined, named, (sigs.tolist(), sizes.tolist(), alike, len(shapes))


def assert_same_as_read_whole(store: DuckDBStore, db: Path) -> None:
    """`store`'s copies (patched, or mapped from the shared files) answer as copies read whole
    from DuckDB by a new process (the shared files removed first, so it cannot map them)."""
    held = answers_of(store)
    forget_shared_copies(db)
    fresh = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
    try:
        assert held == answers_of(fresh)
    finally:
        fresh.close()


def forget_shared_copies(db: Path) -> None:
    """Remove the shared copies' files and their listing (a process reads them whole again)."""
    directory = Sidecar.beside(db, COLLECTION).dir
    for shared in (directory / "copies").glob("*"):
        shared.unlink()
    held = Manifest.read(directory / "manifest.json")
    if held is not None:
        replace(held, copies={}).write(directory / "manifest.json")


def forbid_whole_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make a whole read of the rows, the postings, the symbols or the shapes fail: what a
    process mapping the files never does."""
    real_rows, real_postings, real_shapes = ChunkReads.row_rows, ChunkReads.lexicon_rows, ChunkReads.shape_rows

    def rows(self: ChunkReads, ids: np.ndarray | None = None) -> object:
        assert ids is not None, "the row table was read whole"
        return real_rows(self, ids)

    def shapes(self: ChunkReads, ids: np.ndarray | None = None) -> object:
        assert ids is not None, "the shape signatures were read whole"
        return real_shapes(self, ids)

    def postings(self: ChunkReads, ids: np.ndarray | None = None, *, after_termid: int = -1) -> object:
        assert ids is not None, "the postings were read whole"
        return real_postings(self, ids, after_termid=after_termid)

    def symbols(self: ChunkReads) -> object:
        raise AssertionError("the symbol rows were read whole")

    monkeypatch.setattr(ChunkReads, "row_rows", rows)
    monkeypatch.setattr(ChunkReads, "lexicon_rows", postings)
    monkeypatch.setattr(ChunkReads, "symbol_rows", symbols)
    monkeypatch.setattr(ChunkReads, "shape_rows", shapes)
