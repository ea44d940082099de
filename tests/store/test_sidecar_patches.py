"""What the writers' change log patches (store/duckdb/copies.py): chunks stored without a
vector and given one later by set_vectors, writers killed around set_vectors, and a process's
row and lexical tables patched per write, which answer as tables read whole."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
from vector_stores import (
    COLLECTION,
    DIM,
    HELPERS,
    assert_nearest_exact,
    assert_same_as_read_whole,
    build_worded,
    manifest_of,
    subprocess_env,
    unit_queries,
    worded_chunks,
)

from sai.models import NewChunk
from sai.store.duckdb import DuckDBStore, copies
from sai.store.duckdb.postings import LexicalTable
from sai.store.duckdb.sidecar import Sidecar
from sai.store.duckdb.vectors import VectorTable

# Stores each file's chunks without vectors, commits, then gives them their vectors in a second
# transaction (the two stages of an index run), printing after each commit; killed anywhere.
PENDING_WRITER = HELPERS + """
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=30)
rng = np.random.default_rng(int(sys.argv[2]))
for n in range(10**9):
    files, rows, v = chunks(f"src/f{rng.integers(0, 30)}.py", int(rng.integers(1, 6)), int(rng.integers(1, 10**9)))
    with store.write() as writer:
        writer.replace_files(files, rows, np.full((len(rows), DIM), np.nan, np.float32))
    print("pending", n, flush=True)
    with store.write() as writer:
        writer.set_vectors([r.content_hash for r in rows], v)
    print("set", n, flush=True)
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "code.duckdb"


def test_a_write_patches_the_row_and_lexical_copies_which_answer_as_read_whole(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copies, "PATCH_SHARE", 0.3)
    store = build_worded(db)
    bases: list[np.ndarray] = []  # the full reads the store's lexical table was patched from
    try:
        assert_same_as_read_whole(store, db)
        for n in range(10):
            with store.write() as writer:
                writer.replace_files(*worded_chunks(f"src/f{n * 2}.py", 4, seed=100 + n))
                if n == 2:
                    writer.remove_files(["src/f19.py"])  # the last ids: the next file gets them again
            assert_same_as_read_whole(store, db)
            with store.read() as reader:
                table = reader.copies.get(copies.LEXICON)  # type: ignore[attr-defined]
            assert isinstance(table, LexicalTable)
            assert table.delta is not None and len(table.written) <= 0.3 * len(table.ids)
            if not any(table.ids is base for base in bases):
                bases.append(table.ids)
            assert manifest_of(db).generation == 1
    finally:
        store.close()
    # patched while the chunks written since the full read stay under 30% of it, then patched
    # from a newer copy (the shared file a process reading it whole wrote)
    assert len(bases) > 1, bases


def _six_pending(store: DuckDBStore) -> tuple[list[NewChunk], np.ndarray]:
    """Store six chunks of src/new.py without their vectors; returns them and their vectors."""
    files, rows, v = worded_chunks("src/new.py", 6, seed=7)
    with store.write() as writer:
        writer.replace_files(files, rows, np.full((6, DIM), np.nan, np.float32))
    return rows, v


def test_chunks_stored_before_their_vectors_are_searched_once_set_vectors_commits(db: Path) -> None:
    store = build_worded(db)
    try:
        assert_nearest_exact(store, db)
        rows, v = _six_pending(store)
        with store.read() as reader:
            table = reader.copies.vectors()  # type: ignore[attr-defined]
            pending = {int(i) for i in table.ids[table.present is not None and ~table.present]}
            assert len(pending) == 6 and isinstance(table.matrix, np.memmap)
            assert pending.isdisjoint(i for i, _ in reader.nearest(v[0], 200))
            assert pending <= set(table.ids[table.mask(paths=["src/new.py"])].tolist())  # lexical scopes see them
        assert_nearest_exact(store, db)
        with store.write() as writer:
            assert writer.set_vectors([r.content_hash for r in rows], v) == 6
        assert_nearest_exact(store, db)
        with store.read() as reader:
            assert reader.nearest(v[2], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
        m = manifest_of(db)
        assert (m.rows, m.dead) == (112, 6)  # the pending rows tombstoned, the rows with vectors appended
        assert_same_as_read_whole(store, db)
    finally:
        store.close()


def test_a_write_of_vectors_alone_leaves_the_row_copies_as_they_were_and_patches_the_vectors(db: Path) -> None:
    store = build_worded(db)
    try:
        rows, v = _six_pending(store)
        with store.read() as reader:
            before = {kind.name: reader.copies.get(kind) for kind in copies.KINDS}  # type: ignore[attr-defined]
            stored = reader.copies.source.token  # type: ignore[attr-defined]
        with store.write() as writer:
            assert writer.set_vectors([r.content_hash for r in rows], v) == 6
        with store.read() as reader:
            source = reader.copies.source  # type: ignore[attr-defined]
            assert len(source.touched_since(stored)) == 6  # the sidecar's question: these chunks' vectors
            assert len(source.touched_since(stored, rows_only=True)) == 0  # the other copies': nothing
            after = {kind.name: reader.copies.get(kind) for kind in copies.KINDS}  # type: ignore[attr-defined]
            assert reader.nearest(v[2], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
        for name, copy in after.items():
            assert copy.token != before[name].token, name
            if name == "lexicon":
                assert copy.ids is before[name].ids and (copy.delta is None or not len(copy.delta.ids))
            elif name == "symbols":
                assert copy.patched_files == before[name].patched_files
            else:
                assert copy.patch_rows == before[name].patch_rows and copy.base is before[name].base, name
        assert_same_as_read_whole(store, db)
    finally:
        store.close()


def test_pending_count_comes_from_a_current_sidecar_and_agrees_with_the_index(db: Path) -> None:
    store = build_worded(db)
    try:
        _six_pending(store)
        behind = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)  # a process of its own
        with behind.read() as reader:
            assert reader.pending_count() == 6  # the sidecar is behind: counted in DuckDB, not patched
            assert reader.copies.current_vectors() is None  # type: ignore[attr-defined]  # none held, none mapped
        behind.close()
        with store.read() as reader:
            reader.nearest(unit_queries()[0], 1)  # a search brings the sidecar up to date
        current = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        with current.read() as reader:
            assert reader.pending_count() == 6
            assert isinstance(reader.copies.current_vectors(), VectorTable)  # type: ignore[attr-defined]  # mapped
        current.close()
        store.close()
        con = duckdb.connect(str(db), read_only=True)  # the file agrees
        try:
            assert con.execute(f"SELECT count(*) FROM {COLLECTION} WHERE embedding IS NULL").fetchone() == (6,)
        finally:
            con.close()
    finally:
        store.close()


@pytest.mark.slow
def test_writers_killed_around_set_vectors_never_leave_a_wrong_or_missing_vector(db: Path) -> None:
    store = build_worded(db, files=30)
    assert_nearest_exact(store, db)
    store.close()
    rng = np.random.default_rng(11)
    for round_ in range(6):
        writer = subprocess.Popen([sys.executable, "-c", PENDING_WRITER, str(db), str(round_)], env=subprocess_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        for _ in range(int(rng.integers(1, 12))):  # stops after a pending commit or after set_vectors
            assert writer.stdout.readline(), writer.stderr.read() if writer.stderr else ""
        time.sleep(float(rng.random()) * 0.05)  # or inside the next transaction
        writer.send_signal(signal.SIGKILL)
        assert writer.wait() == -signal.SIGKILL
        assert_nearest_exact(store, db)  # the sidecar patched at this state: equal to an exact scan of DuckDB
        assert_same_as_read_whole(store, db)
        if round_ % 2:
            store.close()
    store.close()
    assert Sidecar.beside(db, COLLECTION).manifest_path.is_file()
