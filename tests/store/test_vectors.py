"""The shared vector sidecar (store/duckdb/sidecar.py): answers equal an exact scan of what DuckDB holds
after any sequence of writes, kills of writers and of patching readers, compactions and
concurrent readers in other processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from vector_stores import (
    COLLECTION,
    DIM,
    HELPERS,
    META,
    assert_nearest_exact,
    assert_same,
    exact_top,
    manifest_of,
    stored_vectors,
    subprocess_env,
    unit_queries,
)

import sai.store.duckdb.sidecar as sidecar_module
import sai.store.duckdb.vectors as vectors_module
from sai.models import FileRow, NewChunk
from sai.store.duckdb import DuckDBStore
from sai.store.duckdb.sidecar import Sidecar

# Refreshes random files for ever inside one run (one writer connection), printing each commit.
WRITER = HELPERS + """
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=30)
rng = np.random.default_rng(int(sys.argv[2]))
with store.run():
    for n in range(10**9):
        key = f"src/f{rng.integers(0, 30)}.py"
        with store.write() as writer:
            if rng.random() < 0.2:
                writer.remove_files([key])
            else:
                writer.replace_files(*chunks(key, int(rng.integers(1, 6)), int(rng.integers(1, 10**9))))
        print(n, flush=True)
"""

# A reader that dies by SIGKILL inside a sidecar patch: after its rows are appended (`data`),
# or with the new manifest written aside but not yet renamed into place (`manifest`).
KILLED_PATCH = HELPERS + """
from sai.store.duckdb import sidecar
where = sys.argv[2]
if where == "data":
    sidecar.Manifest.write = lambda self, path: os.kill(os.getpid(), signal.SIGKILL)
else:
    real_replace = os.replace
    def replace(src, dst):
        if str(dst).endswith("manifest.json"):
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)
    sidecar.os.replace = replace
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=30)
with store.read() as reader:
    reader.nearest(np.ones(DIM, np.float32), 5)
"""

# Searches once and prints the ids and scores it found for the query on stdin.
SEARCH = HELPERS + """
import json
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=30)
query = np.asarray(json.loads(sys.stdin.read()), np.float32)
with store.read() as reader:
    print(json.dumps(reader.nearest(query, 10)), flush=True)
"""


def _chunks(key: str, count: int, seed: int) -> tuple[list[FileRow], list[NewChunk], np.ndarray]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((count, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rows = [NewChunk(path=key, language="python" if k % 3 else "rust", start_line=k + 1, end_line=k + 1,
                     symbol=None, text=f"{key} {seed} {k}", content_hash=f"{key}-{seed}-{k}",
                     file_hash=str(seed), no_duplicate=False, lexemes="x", shape=None) for k in range(count)]
    return [FileRow(key, 1, seed, str(seed), count)], rows, v


def _build(db: Path, files: int = 20, per_file: int = 5) -> DuckDBStore:
    store = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
    with store.write() as writer:
        writer.create(META)
        for f in range(files):
            writer.replace_files(*_chunks(f"src/f{f}.py", per_file, seed=f))
    return store


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "code.duckdb"



def test_readers_map_the_sidecar_and_answer_as_the_exact_scan(db: Path) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        with store.read() as reader:
            table = reader.copies.vectors()
        assert isinstance(table.matrix, np.memmap) and len(table) == 100
        assert manifest_of(db).rows == 100 and manifest_of(db).token == table.token
    finally:
        store.close()


def test_a_refresh_appends_and_tombstones_without_rewriting_the_rest(db: Path) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        vectors_file = Sidecar.beside(db, COLLECTION).dir / "g1.f32"
        first = vectors_file.read_bytes()
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f3.py", 7, seed=1000))
        assert_nearest_exact(store, db)
        m = manifest_of(db)
        assert (m.generation, m.rows, m.dead) == (1, 107, 5)
        assert vectors_file.read_bytes()[:len(first)] == first  # the old rows stay where they were
    finally:
        store.close()


def test_an_id_handed_to_a_new_chunk_never_serves_the_old_chunks_vector(db: Path) -> None:
    """DuckDB numbers new chunks from the largest id left: the last file's ids come back."""
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f19.py", 5, seed=555))  # ids 96-100 again, new vectors
        with store.read() as reader:
            ids = sorted(i for i, _ in reader.nearest(unit_queries()[0], 100))
        assert ids == list(range(1, 101))
        assert_nearest_exact(store, db)
    finally:
        store.close()


def test_tombstones_past_the_bound_compact_into_a_new_generation(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sidecar_module, "COMPACT_MIN_DEAD", 8)
    monkeypatch.setattr(sidecar_module, "COMPACT_DEAD_SHARE", 0.05)
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        for n in range(6):
            with store.write() as writer:
                writer.replace_files(*_chunks(f"src/f{n}.py", 5, seed=2000 + n))
            assert_nearest_exact(store, db)
        m = manifest_of(db)
        assert m.generation > 1 and m.dead <= 8
        assert not list(Sidecar.beside(db, COLLECTION).dir.glob("g1.*"))  # the old generation is gone
    finally:
        store.close()


def test_chunks_without_a_vector_yet_are_left_out_until_they_have_one(db: Path) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.conn.con.execute(f"UPDATE {COLLECTION} SET embedding = NULL WHERE id IN (3, 4)")
            writer.conn.unlogged()
        assert_nearest_exact(store, db)
        with store.read() as reader:
            assert {3, 4}.isdisjoint(i for i, _ in reader.nearest(unit_queries()[0], 100))
        with store.write() as writer:
            vector = [1.0] + [0.0] * (DIM - 1)
            writer.conn.con.execute(f"UPDATE {COLLECTION} SET embedding = ?::FLOAT[{DIM}] WHERE id = 3", [vector])
            writer.conn.unlogged()
        assert_nearest_exact(store, db)
        with store.read() as reader:
            assert reader.nearest(np.array(vector, np.float32), 1)[0][0] == 3
    finally:
        store.close()


def test_a_new_collection_at_the_same_path_rebuilds_the_sidecar(db: Path) -> None:
    store = _build(db)
    assert_nearest_exact(store, db)
    store.close()
    db.unlink()
    store = _build(db, files=3, per_file=2)  # ids 1-6 again, other vectors, a new created_at
    try:
        assert_nearest_exact(store, db)
        assert manifest_of(db).rows == 6
    finally:
        store.close()


def test_a_damaged_manifest_is_rebuilt_from_the_index(db: Path) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        Sidecar.beside(db, COLLECTION).manifest_path.write_text("{not json", encoding="utf-8")
        store.derived.clear()
        assert_nearest_exact(store, db)
    finally:
        store.close()


@pytest.mark.parametrize("where", ["data", "manifest"])
@pytest.mark.slow
def test_a_reader_killed_inside_a_patch_leaves_a_sidecar_the_next_reader_repairs(db: Path, where: str) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f4.py", 9, seed=4242))
        store.close()
        killed = subprocess.run([sys.executable, "-c", KILLED_PATCH, str(db), where], env=subprocess_env(),
                                capture_output=True, text=True, timeout=120)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert manifest_of(db).rows == 100  # the kill left the manifest of before the patch
        assert_nearest_exact(store, db)
        assert manifest_of(db).rows == 109
    finally:
        store.close()


@pytest.mark.slow
def test_writers_killed_at_random_moments_never_leave_a_wrong_vector(db: Path) -> None:
    store = _build(db, files=30)
    store.close()
    rng = np.random.default_rng(3)
    for round_ in range(6):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(round_)], env=subprocess_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        for _ in range(int(rng.integers(1, 15))):
            assert writer.stdout.readline(), writer.stderr.read() if writer.stderr else ""
        time.sleep(float(rng.random()) * 0.05)  # mid-transaction or between two
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        if round_ % 2:  # sometimes the sidecar is several writes behind
            assert_nearest_exact(store, db)
            store.close()
    assert_nearest_exact(store, db)
    store.close()


@pytest.mark.slow
def test_concurrent_readers_in_other_processes_agree_with_the_exact_scan(db: Path) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f9.py", 4, seed=77))
            writer.remove_files(["src/f10.py"])
        store.close()
        query = unit_queries()[1]
        readers = [subprocess.Popen([sys.executable, "-c", SEARCH, str(db)], env=subprocess_env(),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True) for _ in range(4)]
        answers = [r.communicate(json.dumps(query.tolist()), timeout=120) for r in readers]
        expected = exact_top(db, query, 10)
        for (out, err), reader in zip(answers, readers, strict=True):
            assert reader.returncode == 0, err
            assert_same([tuple(hit) for hit in json.loads(out)], expected)
        m = manifest_of(db)
        assert (m.rows, m.dead) == (104, 10)  # one patch: the others found it done
    finally:
        store.close()


def test_the_two_pass_scan_searches_only_live_rows_of_the_filtered_subset(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall against the exact scan is measured by benchmarks/scale.py on realistic vectors;
    here: what the first pass may hand on, and exactness once it hands on the whole subset."""
    monkeypatch.setattr(vectors_module, "FIRST_PASS_ROWS", 50)
    monkeypatch.setattr(vectors_module, "RESCORE_MIN", 60)
    store = _build(db, files=40, per_file=10)
    try:
        with store.read() as reader:
            reader.nearest(unit_queries()[0], 1)  # the sidecar, before the write tombstones rows in it
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f6.py", 10, seed=606))  # tombstones ten rows
        with store.read() as reader:
            table = reader.copies.vectors()
            assert table.bits is not None and table.live is not None
            live = set(table.ids[table.live].tolist())
            scope = {f"src/f{n}.py" for n in range(0, 40, 3)}  # 140 rows: still two passes
            in_scope = {int(i) for i, p in zip(table.ids, table.path_of, strict=True) if table.paths[p] in scope}
            stored = stored_vectors(db)
            for q in unit_queries():
                hits = table.nearest(q, 3)
                assert len(hits) == 3 and {i for i, _ in hits} <= live  # never a dead row
                assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
                exact = dict(exact_top(stored, q, 400))
                assert all(abs(exact[i] - s) < 1e-5 for i, s in hits)  # scored exactly
                found = table.nearest(q, 2, mask=table.mask(paths=scope))
                assert len(found) == 2 and {i for i, _ in found} <= (in_scope & live)
                small = {"src/f5.py", "src/f6.py"}  # fewer rows than the first pass hands on: exact
                assert_same(table.nearest(q, 5, mask=table.mask(paths=small)), exact_top(stored, q, 5, paths=small))
    finally:
        store.close()


def test_where_the_sidecar_cannot_be_written_a_reader_keeps_its_own_copy(db: Path) -> None:
    store = _build(db)
    try:
        db.with_name(db.name + ".vectors").write_text("not a directory", encoding="utf-8")
        assert_nearest_exact(store, db)
        with store.read() as reader:
            table = reader.copies.vectors()
        assert not isinstance(table.matrix, np.memmap) and len(table) == 100
    finally:
        store.close()


@pytest.mark.parametrize("damaged", ["f32", "dead", "names"])
def test_sidecar_files_shorter_than_the_manifest_says_are_rebuilt(db: Path, damaged: str) -> None:
    store = _build(db)
    try:
        assert_nearest_exact(store, db)
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f2.py", 3, seed=31))
        assert_nearest_exact(store, db)  # a generation with tombstones
        target = Sidecar.beside(db, COLLECTION).dir / f"g1.{damaged}"
        with open(target, "r+b") as f:
            f.truncate(max(0, target.stat().st_size - 9))
        store.derived.clear()
        assert_nearest_exact(store, db)
        assert manifest_of(db).generation == 2
    finally:
        store.close()


def test_a_floor_few_rows_reach_is_served_by_the_bits_with_every_row_above_it(db: Path) -> None:
    """nearest_each with a high floor (the near copies `impact` reports) narrows the scan by a
    Hamming bound on the sign bits, then scores exactly: every live row of cosine >= floor, none
    below; a floor most rows reach is an exact scan."""
    store = _build(db, files=40, per_file=10)
    try:
        with store.write() as writer:
            writer.replace_files(*_chunks("src/f6.py", 10, seed=606))  # tombstones ten rows
        stored = stored_vectors(db)
        rng = np.random.default_rng(8)
        sources = [stored[k] for k in rng.choice(len(stored), 12, replace=False)]
        queries = np.array([r[3] for r in sources], np.float32) + 0.08 * rng.standard_normal((12, DIM)).astype(
            np.float32) / np.sqrt(DIM)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        excluded = [int(sources[0][0])] + [10**9] * 11  # the first without its own source
        with store.read() as reader:
            table = reader.copies.vectors()
            assert table._bits_reaching(0.99) is not None and table._bits_reaching(0.5) is None
            for floor in (0.99, 0.5):
                found = reader.nearest_each(queries, 10, exclude=excluded, floor=floor)
                for q, e, hits in zip(queries, excluded, found, strict=True):
                    assert_same(hits, [h for h in exact_top(stored, q, 11) if h[0] != e and h[1] >= floor][:10])
            reached = reader.nearest_each(queries, 10, exclude=excluded, floor=0.99)
            assert not any(i == sources[0][0] for i, _ in reached[0])
            assert all(any(i == src[0] for i, _ in hits) for src, hits in zip(sources[1:], reached[1:], strict=True))
    finally:
        store.close()
