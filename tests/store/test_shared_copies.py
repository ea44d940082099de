"""The row, BM25, symbol and shape tables shared through files beside the sidecar (store/duckdb/copies.py):
another process maps them instead of reading DuckDB, a later token patches the mapped copy, and
answers equal copies read whole after writes, deletions, damage, compactions and kills."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from vector_stores import (
    COLLECTION,
    HELPERS,
    answers_of,
    assert_same_as_read_whole,
    build_worded,
    forbid_whole_reads,
    forget_shared_copies,
    manifest_of,
    subprocess_env,
    worded_chunks,
)

from sai.store.duckdb import DuckDBStore, copies
from sai.store.duckdb.sidecar import Sidecar

# A reader that dies by SIGKILL while writing a shared copy (argv[3]: the rows, the symbols or the shapes):
# with the file written but not listed (`written`), or listed before the old file is swept (`listed`).
KILLED_WRITE = HELPERS + """
from sai.store.duckdb import copies, sidecar
where, name = sys.argv[2], sys.argv[3]
real_write = sidecar.Manifest.write
def write(self, path):
    if name in self.copies:
        if where == "listed":
            real_write(self, path)
        os.kill(os.getpid(), signal.SIGKILL)
    real_write(self, path)
sidecar.Manifest.write = write
store = DuckDBStore(Path(sys.argv[1]), collection="code", lock_timeout_s=30)
with store.read() as reader:
    reader.copies.vectors()
    {"rows": lambda: reader.copies.get(copies.ROWS), "shapes": reader.shapes}.get(sys.argv[3], reader.symbols)()
"""


def _shared(db: Path) -> list[str]:
    """The shared copies the manifest lists (`missing <name>` where its file is gone), then the
    files it does not list."""
    listed = manifest_of(db).copies
    files = {p.name for p in (Sidecar.beside(db, COLLECTION).dir / "copies").glob("*")}
    named = sorted(name if file in files else f"missing {name}" for name, (file, _) in listed.items())
    return named + sorted(f"unlisted {f}" for f in files - {file for file, _ in listed.values()})


def _file(db: Path, name: str) -> Path:
    return Sidecar.beside(db, COLLECTION).dir / "copies" / manifest_of(db).copies[name][0]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "index" / "code.duckdb"


def test_another_process_maps_the_shared_copies_instead_of_reading_them(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = build_worded(db)
    try:
        expected = answers_of(store)
        assert _shared(db) == ["lexicon", "rows", "shapes", "symbols"]
        forbid_whole_reads(monkeypatch)
        other = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        try:
            assert answers_of(other) == expected
            with other.read() as reader:
                lexicon = reader.copies.get(copies.LEXICON)  # type: ignore[attr-defined]
                assert not lexicon.rows.flags.owndata and not lexicon.rows.flags.writeable  # the file's pages
                assert not reader.symbols().arrays["def_row"].flags.writeable
                assert not reader.shapes().base.columns.flags.writeable
        finally:
            other.close()
    finally:
        store.close()


def test_a_process_at_a_later_token_patches_the_mapped_copies(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copies, "PATCH_SHARE", 0.5)
    store = build_worded(db)
    answers_of(store)
    store.close()
    for n in range(3):
        with DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30).write() as writer:
            writer.replace_files(*worded_chunks(f"src/f{n * 3}.py", 4, seed=300 + n))
            if n == 1:
                writer.remove_files(["src/f19.py"])  # the last ids: the next file gets them again
    with monkeypatch.context() as patching:
        forbid_whole_reads(patching)
        later = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        with later.read() as reader:
            held = reader.copies  # type: ignore[attr-defined]
            held.vectors()
            rows, lexicon, symbols = held.get(copies.ROWS), held.get(copies.LEXICON), reader.symbols()
            assert rows.added is not None and lexicon.delta is not None  # the mapped copies, patched
            assert reader.shapes().added is not None
            assert symbols.patched_files
    try:
        assert_same_as_read_whole(later, db)
    finally:
        later.close()


# 6 writes in the fast tier (a compaction and a deletion among them), 12 in the slow
@pytest.mark.parametrize("writes", [6, pytest.param(12, marks=pytest.mark.slow)])
def test_copies_follow_writes_compactions_and_deletions_as_copies_read_whole(
        db: Path, monkeypatch: pytest.MonkeyPatch, writes: int) -> None:
    monkeypatch.setattr(copies, "PATCH_SHARE", 0.25)
    monkeypatch.setattr("sai.store.duckdb.sidecar.COMPACT_MIN_DEAD", 10)
    monkeypatch.setattr("sai.store.duckdb.sidecar.COMPACT_DEAD_SHARE", 0.1)
    store = build_worded(db)
    rng = np.random.default_rng(8)
    try:
        for n in range(writes):
            with store.write() as writer:
                writer.replace_files(*worded_chunks(f"src/f{rng.integers(0, 20)}.py", int(rng.integers(1, 7)), 500 + n))
            if n % 4 == 3:  # deleted under a process that mapped them
                for shared in (Sidecar.beside(db, COLLECTION).dir / "copies").glob("*.arrow"):
                    shared.unlink()
            other = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
            try:
                assert answers_of(other) == answers_of(store)
            finally:
                other.close()
            assert_same_as_read_whole(store, db)
        assert manifest_of(db).generation > 1  # the sidecar compacted meanwhile: the copies follow the log, not it
    finally:
        store.close()


def test_a_damaged_shared_copy_is_read_again_from_the_index(db: Path) -> None:
    store = build_worded(db)
    expected = answers_of(store)
    store.close()  # no process maps the files: a file cut short under a mapping would fault it (as the sidecar's)
    target = _file(db, "lexicon")
    with open(target, "r+b") as f:
        f.truncate(target.stat().st_size // 2)
    rows = _file(db, "rows")
    rows.write_bytes(b"not arrow")
    for _ in range(2):  # the first reads the index and writes the copies again, the second maps them
        other = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        try:
            assert answers_of(other) == expected
        finally:
            other.close()
    assert _file(db, "rows").stat().st_size > 100 and not rows.exists()  # a new file listed, the damaged one gone
    assert _shared(db) == ["lexicon", "rows", "shapes", "symbols"]


def test_a_directory_of_the_layout_before_the_one_manifest_is_built_anew(db: Path) -> None:
    """Format 2 kept a stamp per row (g<n>.stamps) and each shared copy's token in its own file
    (copies/<name>.arrow): a reader builds the directory anew and leaves none of those files."""
    store = build_worded(db)
    expected = answers_of(store)
    store.close()
    directory = Sidecar.beside(db, COLLECTION).dir
    held = json.loads((directory / "manifest.json").read_text())
    generation = held["generation"]
    del held["copies"]
    (directory / "manifest.json").write_text(json.dumps(held | {"format": 2}))
    (directory / f"g{generation}.present").rename(directory / f"g{generation}.stamps")
    older = [directory / f"g{generation}.stamps", directory / "copies" / "rows.arrow", directory / "copies" / "lock"]
    for path in older[1:]:
        path.write_bytes(b"the layout before")
    other = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
    try:
        assert answers_of(other) == expected
    finally:
        other.close()
    assert not any(path.exists() for path in older)
    assert _shared(db) == ["lexicon", "rows", "shapes", "symbols"]


@pytest.mark.parametrize("name", ["rows", "symbols", "shapes"])
@pytest.mark.parametrize("where", ["written", "listed"])
@pytest.mark.slow
def test_a_reader_killed_writing_a_shared_copy_leaves_a_usable_index(db: Path, where: str, name: str) -> None:
    store = build_worded(db)
    try:
        answers_of(store)
        forget_shared_copies(db)
        with store.write() as writer:
            writer.replace_files(*worded_chunks("src/f4.py", 3, seed=44))
        killed = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(db), where, name], env=subprocess_env(),
                                capture_output=True, text=True, timeout=120)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        names = _shared(db)
        if where == "written":  # killed before the listing: no copy, a file the manifest does not list
            assert len(names) == 1 and names[0].startswith(f"unlisted {name}.")
        else:
            assert names == [name]
        assert_same_as_read_whole(store, db)
        other = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        try:
            assert answers_of(other) == answers_of(store)
            assert not any(name.startswith("unlisted") for name in _shared(db))  # the stray file was removed
        finally:
            other.close()
    finally:
        store.close()


def test_a_symbol_look_up_after_a_write_leaves_the_vector_sidecar_alone(db: Path) -> None:
    """The copies learn what changed from the change log, not from the sidecar: a look-up maps
    and patches no vector."""
    store = build_worded(db)
    try:
        answers_of(store)
        token = manifest_of(db).token
        with store.write() as writer:
            writer.replace_files(*worded_chunks("src/f2.py", 3, seed=21))
        other = DuckDBStore(db, collection=COLLECTION, lock_timeout_s=30)
        try:
            with other.read() as reader:
                assert reader.symbols().patched_files == {"src/f2.py"}  # the shared file, patched from the log
                assert reader.copies.current_vectors() is None  # type: ignore[attr-defined]  # none held, none mapped
        finally:
            other.close()
        assert manifest_of(db).token == token  # the sidecar still at the token before the write
    finally:
        store.close()
