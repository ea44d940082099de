"""The writers' change log (store/duckdb/changelog.py): a reader patches its vector sidecar from the
chunk ids the log names, answers as the exact scan whichever way it got there, and reads every
vector again (a new generation) wherever the log misses a write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from vector_stores import (
    COLLECTION,
    DIM,
    META,
    assert_nearest_exact,
    assert_same_as_read_whole,
    build_worded,
    manifest_of,
    worded_chunks,
)

from sai.store.duckdb import changelog
from sai.store.duckdb.chunk_reads import ChunkReads


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "code.duckdb"


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the sidecar's reads of every chunk's vector (a build, or a log that misses a write)."""
    calls: list[int] = []
    batches = ChunkReads.vector_batches

    def counted(self: ChunkReads, ids: np.ndarray | None) -> Iterator[pa.RecordBatch]:
        if ids is None:
            calls.append(1)
        return batches(self, ids)

    monkeypatch.setattr(ChunkReads, "vector_batches", counted)
    return calls


def _log_rows(db: Path) -> list[tuple[str, str, list[int]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(f"SELECT token, previous, ids FROM {changelog.table_of(COLLECTION)} ORDER BY seq").fetchall()
    finally:
        con.close()


def test_writes_patch_the_sidecar_from_the_log_and_answer_as_the_exact_scan(db: Path, compared: list[int]) -> None:
    store = build_worded(db)
    try:
        assert_nearest_exact(store, db)  # the first read builds the sidecar: the one whole read
        for n in range(6):  # replace, add, remove, and chunks given their vectors later
            with store.write() as writer:
                if n % 3 == 2:
                    writer.remove_files([f"src/f{n}.py"])
                else:
                    writer.replace_files(*worded_chunks(f"src/f{n + 30 * (n % 2)}.py", 3, seed=500 + n))
            assert_nearest_exact(store, db)
        files, rows, vectors = worded_chunks("src/late.py", 4, seed=900)
        with store.write() as writer:
            writer.replace_files(files, rows, np.full((4, DIM), np.nan, np.float32))
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.set_vectors([r.content_hash for r in rows], vectors)
        assert_nearest_exact(store, db)
        assert_same_as_read_whole(store, db)
        assert compared == [1]  # every patch came from the log
        logged = _log_rows(db)
        assert [ids for *_, ids in logged[-2:]] == [[logged[-2][2][0] + k for k in range(4)]] * 2
        assert all(previous == before for (_, previous, _), (before, _, _) in zip(logged[1:], logged, strict=False))
    finally:
        store.close()


def test_a_write_the_log_did_not_see_makes_the_reader_read_every_vector(db: Path, compared: list[int]) -> None:
    store = build_worded(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:  # a write that does not name its chunks (as a migration)
            writer.conn.con.execute(f"UPDATE {COLLECTION} SET embedding = NULL WHERE id IN (3, 4)")
            writer.conn.unlogged()
        with store.write() as writer:
            writer.replace_files(*worded_chunks("src/f7.py", 2, seed=77))
        assert_nearest_exact(store, db)
        assert compared == [1, 1]
        with store.read() as reader:
            assert {3, 4}.isdisjoint(i for i, _ in reader.nearest(np.eye(DIM, dtype=np.float32)[0], 100))
    finally:
        store.close()


def test_a_reader_further_behind_than_the_log_keeps_reads_whole_and_the_log_stays_bounded(
    db: Path, compared: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changelog, "KEPT", 8)  # the same bound as the real one, in 18 writes
    store = build_worded(db, files=5, per_file=2)
    try:
        assert_nearest_exact(store, db)
        token = manifest_of(db).token
        for n in range(changelog.KEPT + 10):
            with store.write() as writer:
                writer.replace_files(*worded_chunks(f"src/f{n % 5}.py", 2, seed=1000 + n))
        assert len(_log_rows(db)) == changelog.KEPT
        assert manifest_of(db).token == token  # no reader has patched the sidecar meanwhile
        assert_nearest_exact(store, db)
        assert compared == [1, 1]
    finally:
        store.close()


def test_a_new_collection_and_its_take_over_carry_no_stale_log(db: Path) -> None:
    store = build_worded(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.replace_files(*worded_chunks("src/f1.py", 2, seed=11))
        assert _log_rows(db)
        with store.rebuild():
            with store.write() as writer:
                writer.create(META)
                writer.replace_files(*worded_chunks("src/f1.py", 3, seed=12))
        with pytest.raises(duckdb.CatalogException):  # nothing logged: the new collection's readers build anew
            _log_rows(db)
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.replace_files(*worded_chunks("src/f1.py", 2, seed=13))
        assert len(_log_rows(db)) == 1
        assert_nearest_exact(store, db)
    finally:
        store.close()
