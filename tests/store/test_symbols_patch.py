"""A symbol table brought to a later token by patch (store/symbols.py `patched`,
store/duckdb/copies.py `Symbols.patched`) answers every look-up as a table built whole."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from vector_stores import COLLECTION, DIM, META

from sai.models import FileRow, NewChunk, chunk_id
from sai.store.duckdb import DuckDBStore
from sai.store.duckdb.sidecar import Sidecar
from sai.store.symbols import SymbolRow, SymbolTable

NAMES = ("parse", "Parser", "parse_header", "Config", "config.load", "Tree.walk", "walk", "Walker", "encode", "x")


def _file_rows(rng: random.Random, path: str, first_id: int) -> list[SymbolRow]:
    rows: list[SymbolRow] = []
    line = 1
    for k in range(rng.randint(1, 6)):
        start, end = line, line + rng.randint(0, 12)
        symbol = rng.choice((*NAMES, None))
        rows.append((first_id + k, path, rng.choice(("python", "go")), start, end, symbol,
                     "function" if symbol else None, f"{path}-{first_id + k}-{rng.random():.6f}"))
        line = end + rng.choice((0, 1, 3))  # windows that touch, overlap or leave gaps
    return rows


def _answers(table: SymbolTable, rows: list[SymbolRow]) -> tuple[object, ...]:
    names = [*NAMES, "PARSE", "par", "Tree", "w", "config", ""]
    found = [[(d.symbol, d.path, d.start_line, d.end_line, d.chunk_id, d.match) for d in table.lookup(n, limit=50)]
             for n in names]
    python = [[d.chunk_id for d in table.lookup(n, limit=5, language="python")] for n in names]
    defining = [table.defining_rows(n, limit=7) for n in names]
    ids = [table.row_id(chunk_id(path, start, end, digest)) for _, path, _, start, end, _, _, digest in rows]
    return found, python, defining, ids, len(table)


def test_patched_tables_answer_as_tables_built_whole_after_random_writes() -> None:
    rng = random.Random(7)
    files = {f"src/m{k}.py": [] for k in range(12)}  # type: dict[str, list[SymbolRow]]
    next_id = 1
    for path in files:
        files[path] = _file_rows(rng, path, next_id)
        next_id += len(files[path])
    table = SymbolTable("t0", sorted(r for rows in files.values() for r in rows))
    written: set[str] = set()
    gone: list[SymbolRow] = []
    for step in range(40):
        path = rng.choice([*files, f"src/new{step}.py"])
        old = files.pop(path, [])
        gone += old
        if rng.random() < 0.75:  # replaced (new ids) or removed
            files[path] = _file_rows(rng, path, next_id)
            next_id += len(files[path])
        removed_ids = np.array([r[0] for r in old], np.int64)
        written |= table.files_of(removed_ids) | {path}
        now = sorted(r for rows in files.values() for r in rows)
        table = table.patched(f"t{step + 1}", frozenset(written), [r for r in now if r[1] in written])
        whole = SymbolTable(f"t{step + 1}", now)
        assert _answers(table, now + gone) == _answers(whole, now + gone), step
    assert table.patched_files == frozenset(written)


def _chunk(path: str, k: int, symbol: str | None, seed: int) -> NewChunk:
    return NewChunk(path=path, language="python", start_line=10 * k + 1, end_line=10 * k + 8, symbol=symbol,
                    text=f"{path} {symbol} {seed} {k}", content_hash=f"{path}-{seed}-{k}", file_hash=str(seed),
                    no_duplicate=False, lexemes="x", shape=None)


def _write(store: DuckDBStore, path: str, symbols: list[str | None], seed: int, *, pending: bool = False) -> None:
    rows = [_chunk(path, k, s, seed) for k, s in enumerate(symbols)]
    vectors = np.random.default_rng(seed).standard_normal((len(rows), DIM)).astype(np.float32)
    with store.write() as writer:
        writer.replace_files([FileRow(path, 1, seed, str(seed), len(rows))], rows,
                             np.full_like(vectors, np.nan) if pending else vectors)
    if pending:
        with store.write() as writer:
            writer.set_vectors([r.content_hash for r in rows], vectors)


def _looked_up(store: DuckDBStore) -> tuple[object, ...]:
    with store.read() as reader:
        table = reader.symbols()
        rows = [(d.symbol, d.path, d.chunk_id, d.match) for n in ("parse", "Parse", "load", "walk", "p")
                for d in table.lookup(n, limit=20)]
        return rows, table.patched_files


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "code.duckdb"


def test_a_readers_symbol_table_follows_writes_by_patch(db: Path) -> None:
    store = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
    try:
        with store.write() as writer:
            writer.create(META)
        for k in range(12):
            _write(store, f"src/f{k}.py", ["parse", "load", None, f"walk{k}"], seed=k)
        assert _looked_up(store)[1] == frozenset()  # built whole
        _write(store, "src/f3.py", ["Parse", "walk"], seed=100)
        _write(store, "src/g.py", ["parse"], seed=101, pending=True)  # chunks first, vectors later
        with store.write() as writer:
            writer.remove_files(["src/f7.py"])
        _write(store, "src/f11.py", ["load"], seed=102)  # the last ids come back to new chunks
        patched, files = _looked_up(store)
        assert files == {"src/f3.py", "src/g.py", "src/f7.py", "src/f11.py"}
        mapped = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)  # another process: the shared file
        try:
            assert _looked_up(mapped) == (patched, files)  # the file's table, patched by the same files
        finally:
            mapped.close()
        for shared in (Sidecar.beside(db, COLLECTION).dir / "copies").glob("symbols.*.arrow"):
            shared.unlink()
        fresh = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        try:
            assert _looked_up(fresh) == (patched, frozenset())  # built whole
        finally:
            fresh.close()
    finally:
        store.close()
