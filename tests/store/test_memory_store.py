"""The tests' in-memory store (tests/memory_store.py) answers as the DuckDB file does after the same
writes: ids, BM25 scores within and without a scope, cosines, chunk rows, symbols and pending
vectors, so that a query test moved onto it still tests what it tested on the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from memory_store import MemoryStore
from vector_stores import DIM, META, QUERIES, WORDS, unit_queries, worded_chunks

from sai.store import Scope
from sai.store.base import Store
from sai.store.duckdb import DuckDBStore
from sai.text.lexical import query_lexemes

SCOPES = [None, Scope(language="rust"), Scope(keys=frozenset({"src/f1.py", "src/f4.py", "src/f9.py"})),
          Scope(language="python", keys=frozenset({"src/f2.py", "src/f3.py"}))]


def _write(store: Store) -> None:
    """Twelve files, two of them removed and three rewritten, the last one's chunks left pending."""
    with store.write() as writer:
        writer.create(META)
        for f in range(12):
            writer.replace_files(*worded_chunks(f"src/f{f}.py", 4 + f % 3, seed=f))
    with store.write() as writer:
        writer.remove_files(["src/f5.py", "src/f11.py"])
        for f in (2, 7):
            writer.replace_files(*worded_chunks(f"src/f{f}.py", 3, seed=100 + f))
        files, rows, _ = worded_chunks("src/f12.py", 4, seed=12)
        writer.replace_files(files, rows, np.full((len(rows), DIM), np.nan, np.float32))


def _answers(store: Store) -> list[object]:
    with store.read() as reader:
        lexical = [[(i, round(s, 9)) for i, s in reader.lexical(query_lexemes(q), 12, scope=scope)]
                   for q in QUERIES for scope in SCOPES]
        nearest = [[(i, round(s, 5)) for i, s in reader.nearest(q, 8, scope=scope, exclude=3)]
                   for q in unit_queries() for scope in SCOPES]
        rows, matrix, shapes = reader.all_chunks()
        symbols = reader.symbols()
        defined = [[(d.symbol, d.path, d.start_line, d.chunk_id, d.match) for d in symbols.lookup(w[:k], limit=20)]
                   for w in WORDS for k in (2, len(w))]
        summary = reader.summary()
        return [lexical, nearest, rows, matrix.round(6).tolist(), shapes, defined, reader.chunks_of_file("src/f7.py"),
                reader.chunks_of_file("src/f3.py", line=2), reader.pending(), reader.pending_count(),
                sorted(reader.content_hashes()), summary.chunk_count, summary.languages, reader.files()]


def test_the_memory_store_answers_as_the_duckdb_file(tmp_path: Path) -> None:
    memory, duck = MemoryStore(), DuckDBStore(tmp_path / "code.duckdb", collection="code", lock_timeout_s=30)
    try:
        _write(memory)
        _write(duck)
        expected, found = _answers(duck), _answers(memory)
    finally:
        duck.close()
    assert expected[0] and all(expected[1])  # the questions have answers to compare
    for name, want, got in zip(["lexical", "nearest", "rows", "matrix", "shapes", "symbols", "chunks_of_file",
                                "at a line", "pending", "pending count", "hashes", "count", "languages", "files"],
                               expected, found, strict=True):
        assert got == want, name


def test_a_copy_is_an_index_of_its_own() -> None:
    store = MemoryStore()
    _write(store)
    copy = store.copy()
    with copy.write() as writer:
        writer.remove_files(["src/f1.py"])
    with store.read() as reader, copy.read() as other:
        assert reader.chunk_count(["src/f1.py"]) == 5 and other.chunk_count(["src/f1.py"]) == 0


def test_a_failed_write_leaves_the_index_as_it_was() -> None:
    store = MemoryStore()
    _write(store)
    with pytest.raises(RuntimeError), store.write() as writer:
        writer.remove_files(["src/f1.py"])
        raise RuntimeError("stop")
    with store.read() as reader:
        assert reader.chunk_count(["src/f1.py"]) == 5
