"""The index file: schema and metadata, vectors, exact search, errors, and sharing the file between processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

import sai.store.duckdb.lease as lease_module
from sai.errors import StoreCorruptError, StoreError, StoreLockedError
from sai.models import SCHEMA_VERSION, FileRow, IndexMeta, NewChunk
from sai.store.duckdb import compaction, copies, tables
from sai.store.duckdb.errors import describe
from sai.store.duckdb.lease import READ_LEASE_S, State
from sai.store.duckdb.store import DuckDBStore

DIM = 16
COLLECTION = "code"
META = IndexMeta(
    backend="duckdb", embedder="ollama", model="nomic-embed-text", prefix_style="nomic",
    vector_dim=DIM, chunker="ast", chunker_version=1,
)

# Holds the index for writing in another process: prints "held" once inside the transaction.
HOLD_WRITER = """
import sys, time
from pathlib import Path
from sai.store.duckdb import DuckDBStore
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=10)
with store.write() as writer:
    writer.set_meta({"holder": "done"})
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""

# Writes one meta value once, without waiting for the lock (timeout 0: a single attempt).
WRITE_ONCE = """
import sys
from pathlib import Path
from sai.store.duckdb import DuckDBStore
with DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=float(sys.argv[2])).write() as writer:
    writer.set_meta({"other_process": "wrote"})
"""

# An index run in another process: one writer connection over many transactions (Store.run).
# Prints "held" after its first commit, then commits `n` more, one every `pause` seconds, and
# prints how many times it had to open the file.
HOLD_RUN = """
import sys, time
from pathlib import Path
from sai.store.duckdb import DuckDBStore as Store, tables
opens = 0
real = tables.Connection.open.__func__
def counted(cls, *args, **kwargs):
    global opens
    opens += 1
    return real(cls, *args, **kwargs)
tables.Connection.open = classmethod(counted)
store = Store(Path(sys.argv[1]), collection="code", lock_timeout_s=10)
with store.run():
    with store.write() as conn:
        conn.set_meta({"run": "0"})
    print("held", flush=True)
    for n in range(1, int(sys.argv[2]) + 1):
        time.sleep(float(sys.argv[3]))
        with store.write() as conn:
            conn.set_meta({"run": str(n)})
print("opens", opens, flush=True)
"""


def _rows(n: int) -> list[NewChunk]:
    return [
        NewChunk(path=f"src/f{i}.py", language="python", start_line=1 + 10 * i, end_line=9 + 10 * i,
                 symbol=f"f{i}", text=f"def f{i}(): pass", content_hash=f"hash{i}", file_hash=f"file{i}",
                 no_duplicate=False, lexemes=f"f{i} pass", shape=bytes([i]) * 8 if i % 2 else b"")
        for i in range(n)
    ]


def _vectors(n: int, seed: int = 7) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _build(path: Path, vectors: np.ndarray) -> DuckDBStore:
    store = DuckDBStore(path, collection=COLLECTION, lock_timeout_s=10)
    chunks = _rows(len(vectors))
    with store.write() as writer:
        writer.create(META)
        writer.replace_files([FileRow(c.path, 1, 1, c.file_hash, 1) for c in chunks], chunks, vectors)
    return store


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "code.duckdb"


@pytest.fixture
def built(db: Path) -> Iterator[DuckDBStore]:
    store = _build(db, _vectors(40))
    yield store
    store.close()


def _start_holder(db: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITER, str(db), str(seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if line.strip() != "held":
        proc.kill()
        pytest.fail(f"the holder process did not take the lock: {proc.communicate()[1]}")
    return proc


def test_nearest_returns_the_closest_chunks_first_exactly(built: DuckDBStore) -> None:
    vectors = _vectors(40)
    with built.read() as reader:
        hits = reader.nearest(vectors[5], 40)
    scores = vectors @ vectors[5]
    assert [i for i, _ in hits] == [int(k) + 1 for k in np.argsort(-scores, kind="stable")]  # ids from 1
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)


def test_nearest_within_a_mask_answers_as_if_only_those_chunks_were_stored(built: DuckDBStore) -> None:
    vectors = _vectors(40)
    with built.read() as reader:
        table = reader.copies.vectors()
    mask = table.mask(paths=["src/f3.py", "src/f17.py", "src/f30.py"])
    hits = table.nearest(vectors[0], 8, mask=mask)
    assert sorted(i for i, _ in hits) == [4, 18, 31]
    assert table.nearest(vectors[0], 8, mask=table.mask(language="rust")) == []
    assert len(table.nearest(vectors[0], 8, mask=table.mask(language="python"), exclude=1)) == 8


def test_a_write_of_chunks_gives_readers_a_new_vector_table(built: DuckDBStore) -> None:
    with built.read() as reader:
        before = reader.copies.vectors()
    with built.write() as writer:
        writer.set_meta({"unrelated": "x"})  # no chunk changed: the copy stays valid
    with built.read() as reader:
        assert reader.copies.vectors() is before
    with built.write() as writer:
        writer.remove_files(["src/f0.py"])
    with built.read() as reader:
        after = reader.copies.vectors()
    assert after.token != before.token and len(after) == 39


def test_collection_records_what_the_index_was_built_with(built: DuckDBStore) -> None:
    with built.read() as reader:
        meta = reader.meta()
    assert meta["model"] == "nomic-embed-text"
    assert meta["embedder"] == "ollama"
    assert meta["vector_dim"] == str(DIM)
    assert meta["prefix_style"] == "nomic"
    assert meta["chunker"] == "ast"
    assert meta["chunker_version"] == "1"
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert meta["backend"] == "duckdb"


def test_stored_vectors_read_back_bit_for_bit(built: DuckDBStore) -> None:
    vectors = _vectors(40)
    with built.read() as reader:
        rows, matrix, shapes = reader.all_chunks()
        one = reader.vectors([rows[0].id])[rows[0].id]
    with built.write() as writer:
        by_hash = writer.vectors_by_hash(["hash3", "hash39", "absent"])
    order = [int(r.symbol[1:]) for r in rows]
    assert shapes == [_rows(40)[i].shape for i in order]  # row-aligned with all_chunks()
    assert matrix.dtype == np.float32
    assert matrix.tobytes() == vectors[order].tobytes()
    assert by_hash["hash3"].tobytes() == vectors[3].tobytes()
    assert set(by_hash) == {"hash3", "hash39"}
    assert one.tobytes() == vectors[order[0]].tobytes()


def test_dropping_a_collection_removes_its_tables_and_meta(built: DuckDBStore) -> None:
    with built.write() as writer:
        writer.drop()
    with built.read() as reader:
        assert not reader.has_index()
        assert reader.meta() == {}


def test_idle_read_lease_is_released_after_it_expires(
    built: DuckDBStore, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease = 0.5  # the real lease (READ_LEASE_S, 5 s) is read when the idle timer fires
    assert READ_LEASE_S > lease
    monkeypatch.setattr(lease_module, "READ_LEASE_S", lease)
    with built.read() as reader:
        assert reader.chunk_count() == 40
    time.sleep(lease + 0.5)
    done = subprocess.run(
        [sys.executable, "-c", WRITE_ONCE, str(db), "0"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr  # lock_timeout 0: the file had to be free already
    with built.read() as reader:
        assert reader.meta()["other_process"] == "wrote"


def test_idle_read_lease_yields_to_a_waiting_writer_before_it_expires(built: DuckDBStore, db: Path) -> None:
    with built.read() as reader:
        assert reader.chunk_count() == 40
    # the writer gives up after half the lease: it gets in only because the idle reader saw its
    # intent file and let go early
    done = subprocess.run(
        [sys.executable, "-c", WRITE_ONCE, str(db), str(READ_LEASE_S / 2)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    with built.read() as reader:
        assert reader.meta()["other_process"] == "wrote"


def test_a_read_lease_keeps_writers_out_after_another_instance_of_the_file_closed(built: DuckDBStore, db: Path) -> None:
    """DuckDB's own lock on the file is a POSIX record lock, which the process loses when it closes
    any descriptor of the file (here another DuckDB instance of it): the lease's own lock still
    keeps a writer of another process out, so it never answers from a state the file left."""
    with built.read() as reader:
        assert "other_process" not in reader.meta()
        duckdb.connect(str(db), read_only=True).close()
        refused = subprocess.run([sys.executable, "-c", WRITE_ONCE, str(db), "1"],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0 and "held by another process" in refused.stderr, refused.stderr
        assert reader.chunk_count() == 40
    done = subprocess.run([sys.executable, "-c", WRITE_ONCE, str(db), str(READ_LEASE_S / 2)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr  # the idle lease lets go for it
    with built.read() as reader:
        assert reader.meta()["other_process"] == "wrote"


def test_write_waits_for_another_process_writer_then_proceeds(built: DuckDBStore, db: Path) -> None:
    built.close()
    holder = _start_holder(db, 1.0)
    started = time.monotonic()
    try:
        with built.write() as writer:
            writer.set_meta({"ours": "written"})
    finally:
        holder.wait(timeout=30)
    assert time.monotonic() - started >= 0.5
    with built.read() as reader:
        meta = reader.meta()
    assert meta["ours"] == "written"
    assert meta["holder"] == "done"


def test_read_waits_for_another_process_writer_then_sees_its_commit(built: DuckDBStore, db: Path) -> None:
    built.close()
    holder = _start_holder(db, 1.0)
    try:
        with built.read() as reader:
            meta = reader.meta()
    finally:
        holder.wait(timeout=30)
    assert meta["holder"] == "done"


def test_write_gives_up_with_store_locked_error_after_lock_timeout(db: Path) -> None:
    _build(db, _vectors(4)).close()
    holder = _start_holder(db, 30.0)
    store = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(StoreLockedError) as caught, store.write():
            pass
    finally:
        holder.kill()
        holder.wait()
    assert 0.5 <= time.monotonic() - started < 10
    message = str(caught.value)
    assert "\n" not in message
    assert str(db) in message and "lock_timeout_s" in message


def test_reading_a_missing_index_raises_store_error_naming_sai(tmp_path: Path) -> None:
    store = DuckDBStore(tmp_path / "nothing.duckdb", collection=COLLECTION)
    with pytest.raises(StoreError, match="`sai`"), store.read():
        pass
    assert not (tmp_path / "nothing.duckdb").exists()


def test_invalid_collection_name_is_refused(db: Path) -> None:
    store = DuckDBStore(db, collection="code; DROP TABLE x")
    with pytest.raises(StoreError, match="invalid collection name"), store.write():
        pass


def test_a_stale_writer_file_holding_a_live_pid_does_not_stall_readers(built: DuckDBStore, db: Path) -> None:
    built.close()
    Path(f"{db}.writer").write_text(str(os.getppid()))  # a live process that is no writer
    started = time.monotonic()
    with built.read() as reader:
        assert reader.chunk_count() == 40
    assert time.monotonic() - started < 2


def test_a_damaged_index_file_is_one_line_naming_recreate(db: Path) -> None:
    _build(db, _vectors(4)).close()
    data = bytearray(db.read_bytes())
    data[4096:12288] = b"\x5a" * 8192  # clobber the database header blocks
    db.write_bytes(bytes(data))
    store = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=1)
    with pytest.raises(StoreCorruptError) as caught, store.read() as reader:
        reader.chunk_count()
    assert "\n" not in str(caught.value) and "--recreate" in str(caught.value)
    store.recreate()
    assert not db.exists() and Path(f"{db}.damaged").exists()


@pytest.mark.parametrize("size", [100, 5000, 12288])
def test_a_truncated_index_file_is_damaged_naming_recreate_and_the_kept_copy(db: Path, size: int) -> None:
    _build(db, _vectors(4)).close()
    os.truncate(db, size)
    store = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=1)
    with pytest.raises(StoreCorruptError) as caught, store.read() as reader:
        reader.chunk_count()
    message = str(caught.value)
    assert "is damaged" in message and "permissions" not in message and "\n" not in message
    assert message.endswith(f"rebuild it with `sai --recreate`, which keeps the damaged file as {db}.damaged")


def test_a_full_disk_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    error = describe(duckdb.IOException("IO Error: Could not write file: No space left on device"), tmp_path)
    assert isinstance(error, StoreError) and "free some space" in str(error)
    assert "\n" not in str(error)


def _read_during_run(store: DuckDBStore, db: Path, writes: int, pause_s: float) -> tuple[int, int, float, int]:
    """Read the index while another process's run holds it (HOLD_RUN: `writes` writes `pause_s`
    apart): the run's write count seen, the chunks seen, how long the read waited, and how many
    times the run opened the file."""
    store.close()
    run = subprocess.Popen([sys.executable, "-c", HOLD_RUN, str(db), str(writes), str(pause_s)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert run.stdout is not None and run.stdout.readline().strip() == "held", run.stderr
    started = time.monotonic()
    with store.read() as reader:
        seen, chunks = int(reader.meta()["run"]), reader.chunk_count()
    waited = time.monotonic() - started
    store.close()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    with store.read() as reader:
        assert reader.meta()["run"] == str(writes)  # every write of the run committed
    return seen, chunks, waited, int(out.split()[-1])


def test_a_run_keeps_one_writer_connection_and_lets_another_process_read_between_writes(
    built: DuckDBStore, db: Path
) -> None:
    seen, chunks, waited, opens = _read_during_run(built, db, writes=40, pause_s=0.1)
    assert chunks == 40
    assert waited < 3  # the run saw the request at its next transaction, not at its end
    assert 0 <= seen < 40
    assert opens == 2  # once at its start, once more after letting the reader in


def test_an_idle_run_lets_another_process_read_without_waiting_for_its_next_write(
    built: DuckDBStore, db: Path
) -> None:
    seen, _, waited, opens = _read_during_run(built, db, writes=1, pause_s=6)
    assert seen == 0
    assert waited < 3  # the run's next write comes 6 s after its first
    assert opens == 2


READ_ONCE = """
import sys
from pathlib import Path
from sai.store.duckdb import DuckDBStore
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=30)
with store.read() as reader:
    print(reader.chunk_count(), flush=True)
"""


def test_the_lease_moves_through_its_named_states(built: DuckDBStore, db: Path) -> None:
    lease = built.lease
    built.close()
    assert lease.state is State.CLOSED
    with built.read():
        assert lease.state is State.LEASED
    assert lease.state is State.LEASED  # kept after its last reader, for READ_LEASE_S
    with built.run():
        with built.write():
            assert lease.state is State.WRITING
        assert lease.state is State.HOLDING  # between the run's transactions: the connection kept
        other = subprocess.run([sys.executable, "-c", READ_ONCE, str(db)], capture_output=True, text=True, timeout=180)
        assert other.returncode == 0 and other.stdout.strip() == "40", other.stderr
        assert lease.state is State.CLOSED  # it yielded to the reader of the other process
        with built.write():
            assert lease.state is State.WRITING
        assert lease.state is State.HOLDING
    assert lease.state is State.CLOSED


def test_a_run_commits_each_write_and_serves_its_other_threads_between_them(built: DuckDBStore) -> None:
    seen: list[int] = []
    with built.run():
        with built.write() as writer:
            writer.replace_files([], _rows(3), _vectors(3, seed=1))
        reader = threading.Thread(target=lambda: seen.append(_count(built)))
        reader.start()
        reader.join(timeout=30)
        with built.write() as writer:
            writer.set_meta({"second": "yes"})
    assert seen == [43]
    with built.read() as conn:
        assert conn.meta()["second"] == "yes" and conn.chunk_count() == 43


def test_a_failed_write_inside_a_run_rolls_back_and_lets_go_of_the_file(built: DuckDBStore, db: Path) -> None:
    with built.run():
        with pytest.raises(RuntimeError), built.write() as writer:
            writer.set_meta({"lost": "yes"})
            raise RuntimeError("boom")
        done = subprocess.run([sys.executable, "-c", WRITE_ONCE, str(db), "0"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr  # lock_timeout 0: the run had let go already
    with built.read() as conn:
        assert "lost" not in conn.meta() and conn.meta()["other_process"] == "wrote"


def _count(store: DuckDBStore) -> int:
    with store.read() as conn:
        return conn.chunk_count()


def test_chunks_with_text_read_only_their_texts_when_the_rows_are_in_memory(built: DuckDBStore) -> None:
    built.derived.clear()
    with built.read() as reader:
        cold = reader.chunks([7, 3, 999, 12])  # no row table held: every column read by SQL
        reader.chunks([1], text=False)  # ranking's read: the row table now held
        warm = reader.chunks([7, 3, 999, 12])  # rows from memory, only the texts by SQL
    assert cold == warm and [r.text for r in warm] == ["def f6(): pass", "def f2(): pass", "def f11(): pass"]


def test_rows_without_text_come_from_memory_as_the_table_holds_them(built: DuckDBStore) -> None:
    with built.read() as reader:
        rows = reader.chunks([7, 3, 999, 12], text=False)
        table = reader.copies.held(copies.ROWS)
        from_sql = reader.chunks([7, 3, 12], text=True)
    assert table is not None  # the rows came from it
    assert [r.id for r in rows] == [7, 3, 12]  # order kept, 999 unknown
    assert rows == [replace(r, text="") for r in from_sql]
    with built.write() as writer:
        writer.remove_files(["src/f2.py"])  # chunk 3
        assert [r.id for r in writer.chunks([3, 7], text=False)] == [7]
    with built.read() as reader:
        assert [r.id for r in reader.chunks([3, 7], text=False)] == [7]
        later = reader.copies.held(copies.ROWS)
    assert later is not None and later is not table


def _row_groups(db: Path, table: str = COLLECTION) -> list[int]:
    """Rows of each row group of `table` (its id column's segments, summed per group)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [n for (n,) in con.execute(
            "SELECT sum(count) FROM pragma_storage_info(?) WHERE column_name = 'id' AND segment_type <> 'VALIDITY' "
            "GROUP BY row_group_id ORDER BY row_group_id", [table]).fetchall()]
    finally:
        con.close()


def _write_many(db: Path, n: int) -> None:
    """An index of `n` one-line chunks, 100 a file."""
    rows = [NewChunk(f"src/m{k // 100}.py", "python", k % 100, k % 100, f"f{k}", f"def f{k}(): pass", f"h{k}",
                     f"file{k // 100}", False, f"f{k}", b"") for k in range(n)]
    store = DuckDBStore(db, collection=COLLECTION)
    with store.write() as writer:
        writer.create(META)
        writer.replace_files([], rows, np.ones((len(rows), DIM), np.float32))
    store.close()


def test_a_writer_cuts_row_groups_small_enough_for_vectors_to_compress(db: Path) -> None:
    """DuckDB compresses a float column well only while a row group holds fewer than ~29.4M of its
    values (tables.ROW_GROUP_ROWS): a writer's rows go into groups of at most ROW_GROUP_ROWS."""
    _write_many(db, 30_000)
    groups = _row_groups(db)
    assert sum(groups) == 30_000 and len(groups) >= 2 and max(groups) <= tables.ROW_GROUP_ROWS


def test_a_file_an_older_sai_wrote_in_larger_row_groups_is_rewritten_once_at_a_runs_end(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_many(db, 30_000)
    old = db.with_name("old.duckdb")  # as an SAI before ROW_GROUP_ROWS wrote it: DuckDB's default groups
    con = duckdb.connect()
    con.execute(f"ATTACH '{db}' AS new (READ_ONLY)")
    con.execute(f"ATTACH '{old}' AS old")
    con.execute("COPY FROM DATABASE new TO old")
    con.execute("DELETE FROM old.sai_meta WHERE collection = '' AND key = 'row_group_rows'")
    con.close()
    os.replace(old, db)
    assert max(_row_groups(db)) > tables.ROW_GROUP_ROWS
    monkeypatch.setattr(compaction, "FIRST_BUILD_BLOCKS", 1)  # the test's file is small
    store = DuckDBStore(db, collection=COLLECTION)
    for _ in range(2):
        with store.run(), store.write() as writer:
            writer.set_meta({"touched": "yes"})
    with store.read() as reader:
        assert reader.summary().chunk_count == 30_000
    store.close()
    groups = _row_groups(db)
    assert sum(groups) == 30_000 and max(groups) <= tables.ROW_GROUP_ROWS
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT value FROM sai_meta WHERE collection = '' AND key = 'row_group_rows'").fetchall() \
        == [(str(tables.ROW_GROUP_ROWS),)]
    con.close()
