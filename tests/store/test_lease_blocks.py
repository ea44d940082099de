"""An idle read lease gives back the blocks a whole read left in DuckDB's buffer pool
(store/duckdb/store.py `_drop_blocks`), keeps its connection, and answers as before."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from vector_stores import META, assert_same, exact_top

import sai.store.duckdb.lease as lease_module
from sai.models import FileRow, NewChunk
from sai.store.duckdb import DuckDBStore

DIM = 384  # the blocks of a whole read must be many MB, as a real index's are
FILES, PER_FILE = 10, 300


def _chunks(key: str, seed: int) -> tuple[list[FileRow], list[NewChunk], np.ndarray]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((PER_FILE, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rows = [NewChunk(path=key, language="python", start_line=k + 1, end_line=k + 1, symbol=f"f{k}",
                     text=f"def f{k}(): return {seed}", content_hash=f"{key}-{seed}-{k}", file_hash=str(seed),
                     no_duplicate=False, lexemes=f"f{k} return", shape=None) for k in range(PER_FILE)]
    return [FileRow(key, 1, seed, str(seed), PER_FILE)], rows, v


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DuckDBStore:
    # An idle lease closes after READ_LEASE_S; on a loaded machine its first tick (0.2 s) can come
    # that late and close it with its drop: these tests look at the open lease.
    monkeypatch.setattr(lease_module, "READ_LEASE_S", 60.0)
    db = tmp_path / "index" / "code.duckdb"
    built = DuckDBStore(db, collection="code", lock_timeout_s=30)
    with built.write() as writer:
        writer.create(replace(META, vector_dim=DIM))
        for f in range(FILES):
            writer.replace_files(*_chunks(f"src/f{f}.py", seed=f))
    return built


def _cached_bytes(store: DuckDBStore) -> int:
    """Under the lease's lock, as its idle tick reads the same figure: a probe running beside the
    tick's eviction made the eviction fail, and the lease then closed at its end with the blocks kept."""
    with store.lease._cond:  # noqa: SLF001 - the lease's own lock; no reader is counted
        assert store.lease.state is lease_module.State.LEASED and store.lease.conn is not None  # still open
        row = store.lease.conn.con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchone()
    return int(row[0] or 0) if row else 0


def _query() -> np.ndarray:
    q = np.random.default_rng(7).standard_normal(DIM).astype(np.float32)
    return q / np.linalg.norm(q)


def test_a_whole_read_leaves_no_blocks_cached_once_its_reader_leaves(store: DuckDBStore,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the ~4.6 MB of vectors read to build the sidecar stayed cached until the lease closed."""
    monkeypatch.setattr(lease_module, "KEPT_BLOCKS_MAX", 1 << 20)  # the index is small; the rule is the same
    try:
        with store.read() as reader:
            reader.copies.vectors()  # builds the vector sidecar from the DuckDB file: a whole read
            cached_while_reading = _cached_bytes(store)
        left = _cached_bytes(store)
        assert cached_while_reading > 2 << 20  # ~4.6 MB: the check below can fail
        assert left <= 1 << 20, (cached_while_reading, left)
        with store.read() as reader:  # the same answers after the blocks went, and the memory limit
            assert_same(reader.nearest(_query(), 10), exact_top(store.path, _query(), 10))
            assert reader.copies.source.vector_rows().num_rows == FILES * PER_FILE  # 4.6 MB read: the limit is back
    finally:
        store.close()


def test_other_reads_leave_their_blocks_at_the_first_idle_tick(store: DuckDBStore,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A read outside the table copies (here the vector rows read as a query, no copy kept) is no
    table load: its blocks go at the lease's first idle tick, not when the lease closes."""
    monkeypatch.setattr(lease_module, "KEPT_BLOCKS_MAX", 1 << 20)
    try:
        with store.read() as reader:
            assert reader.copies.source.vector_rows().num_rows == FILES * PER_FILE
            counted = _cached_bytes(store)
        deadline = time.monotonic() + 10  # the tick comes after 0.2 s; a loaded machine may delay it
        while _cached_bytes(store) > 1 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert counted > 2 << 20 and _cached_bytes(store) <= 1 << 20, counted
    finally:
        store.close()


@pytest.mark.slow
def test_readers_in_many_threads_answer_while_writes_make_each_read_a_load(store: DuckDBStore) -> None:
    """Drops happen only with no reader on the lease: threads searching while another thread's
    writes change the token (each read a patch or a load, then a drop) never fail or differ."""
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                with store.read() as reader:
                    found = reader.nearest(_query(), 5)
                    assert len(found) == 5
                time.sleep(0.005)  # a writer in this process waits for a moment with no reader
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for n in range(12):
            with store.write() as writer:
                writer.replace_files(*_chunks(f"src/f{n % FILES}.py", seed=100 + n))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    try:
        assert not errors, errors[:3]
        with store.read() as reader:
            assert_same(reader.nearest(_query(), 10), exact_top(store.path, _query(), 10))
    finally:
        store.close()
