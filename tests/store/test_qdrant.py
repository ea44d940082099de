"""The store contract (sai/store/base.py) exercised against the Qdrant backend.

Written to become the parametrised contract suite: every test takes `make_store`, a factory of a
fresh store of one backend; `BACKENDS` lists the backends it builds. Qdrant runs in local mode
(`qdrant.path` in tmp_path); where QDRANT_URL is set, the same tests run against that server too.

Backend-neutral (the contract): every test taking `make_store` or `filled`, except these, which
are the Qdrant backend's own: point ids equal across stores (the contract only promises equal
chunk_ids), the token test, the closed port, local mode's single process, the
writer lock's lease, and a write killed mid-file (they reach into QdrantStore's client).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from sai.errors import StoreError, StoreLockedError
from sai.models import SCHEMA_VERSION, FileRow, IndexMeta, NewChunk, chunk_id, sha256_hex
from sai.store.base import Scope, Store
from sai.store.qdrant import QdrantStore
from sai.store.qdrant.client import Client
from sai.store.qdrant.locks import ServerLease, this_process
from sai.text.lexical import lexemes, query_lexemes

DIM = 8
META = IndexMeta(backend="qdrant", embedder="ollama", model="nomic-embed-text", prefix_style="nomic",
                 vector_dim=DIM, chunker="ast", chunker_version=1)
BACKENDS = ["qdrant-local"] + (["qdrant-server"] if os.environ.get("QDRANT_URL") else [])


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Store]]:
    """A factory of empty stores of one backend; each call gives another collection (or directory)."""
    made: list[Store] = []

    def make(name: str = "code") -> Store:
        if request.param == "qdrant-local":
            store: Store = QdrantStore(name, path=tmp_path / f"qdrant-{len(made)}", lock_timeout_s=5)
        else:
            unique = f"{name}_{uuid.uuid4().hex[:8]}"
            store = QdrantStore(unique, url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"),
                                lock_timeout_s=5)
        made.append(store)
        return store

    yield make
    for store in made:
        if request.param == "qdrant-server" and store.exists:
            with store.write() as writer:
                writer.drop()
        store.close()


def _vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _chunk(key: str, start: int, end: int, text: str, *, symbol: str | None = None,
           language: str | None = "python", kind: str | None = "function", shape: bytes | None = None) -> NewChunk:
    return NewChunk(path=key, language=language, start_line=start, end_line=end, symbol=symbol, text=text,
                    content_hash=sha256_hex(text), file_hash=sha256_hex(key), no_duplicate=False,
                    lexemes=lexemes(text, path=key, symbol=symbol), shape=shape, kind=kind)


def _file(key: str, chunks: int, *, mtime: int = 1) -> FileRow:
    return FileRow(path=key, size=100, mtime_ns=mtime, file_hash=sha256_hex(key), chunk_count=chunks)


CHUNKS = [
    _chunk("src/cart.py", 1, 20, "class Cart:\n    def total(self): return sum(self.items)", symbol="Cart",
           kind="class", shape=b"\x01\x02"),
    _chunk("src/cart.py", 2, 5, "def total(self): return sum(self.items)", symbol="Cart.total", kind="method"),
    _chunk("src/cart.py", 21, 30, "def parse_price(text): return float(text)", symbol="parse_price"),
    _chunk("src/user.py", 1, 9, "def get_user_name(user): return user.name", symbol="get_user_name"),
    _chunk("web/app.ts", 1, 7, "function renderCart(cart) { return cart.total }", symbol="renderCart",
           language="typescript"),
]
FILES = [_file("src/cart.py", 3), _file("src/user.py", 1), _file("web/app.ts", 1)]
VECTORS = np.stack([_vector(k) for k in range(len(CHUNKS))])


@pytest.fixture
def filled(make_store: Callable[..., Store]) -> Store:
    store = make_store()
    with store.write() as writer:
        writer.create(META)
        writer.replace_files(FILES, CHUNKS, VECTORS)
    return store


def _ids(store: Store) -> dict[tuple[str, int], int]:
    with store.read() as reader:
        rows, _, _ = reader.all_chunks()
    return {(r.path, r.start_line): r.id for r in rows}


def test_a_new_store_has_no_index_and_create_records_meta(make_store: Callable[..., Store]) -> None:
    store = make_store()
    assert not store.exists
    with store.read() as reader:
        assert reader.meta() == {} and not reader.has_index()
    with store.write() as writer:
        writer.create(META)
        writer.set_meta({"note": "x"})
    assert store.exists
    with store.read() as reader:
        meta = reader.meta()
        assert reader.has_index() and reader.chunk_count() == 0
    assert meta["model"] == "nomic-embed-text" and meta["vector_dim"] == str(DIM)
    assert meta["schema_version"] == str(SCHEMA_VERSION) and meta["note"] == "x" and meta["token"]


def test_replace_files_stores_chunks_files_and_counts(filled: Store) -> None:
    with filled.read() as reader:
        assert reader.chunk_count() == 5 and reader.chunk_count(["src/cart.py"]) == 3
        assert reader.files() == {f.path: f for f in FILES}
        assert reader.files(["src/user.py", "nope"]) == {"src/user.py": FILES[1]}
        assert reader.summary().languages == {"python": 4, "typescript": 1}
        assert reader.content_hashes() == {c.content_hash for c in CHUNKS}
        assert reader.summary().indexed_at is not None


def test_replacing_a_file_keeps_unchanged_chunk_ids_and_drops_old_chunks(filled: Store) -> None:
    before = _ids(filled)
    edited = [CHUNKS[0], _chunk("src/cart.py", 21, 31, "def parse_price(text): return int(text)")]
    with filled.write() as writer:
        writer.replace_files([_file("src/cart.py", 2, mtime=2)], edited, VECTORS[:2])
    after = _ids(filled)
    assert after[("src/cart.py", 1)] == before[("src/cart.py", 1)]
    assert ("src/cart.py", 2) not in after and after[("src/cart.py", 21)] != before[("src/cart.py", 21)]
    with filled.read() as reader:
        assert reader.chunk_count(["src/cart.py"]) == 2 and reader.files()["src/cart.py"].mtime_ns == 2


def test_a_file_without_chunks_keeps_its_file_row(filled: Store) -> None:
    with filled.write() as writer:
        writer.replace_files([_file("src/user.py", 0)], [], np.zeros((0, DIM), np.float32))
    with filled.read() as reader:
        assert reader.chunk_count(["src/user.py"]) == 0 and reader.files()["src/user.py"].chunk_count == 0


def test_touch_and_remove_files(filled: Store) -> None:
    with filled.write() as writer:
        writer.touch_files([_file("src/user.py", 1, mtime=99)])
        assert writer.remove_files(["src/cart.py", "missing.py"]) == 3
        assert writer.remove_files([]) == 0
    with filled.read() as reader:
        assert reader.files()["src/user.py"].mtime_ns == 99 and "src/cart.py" not in reader.files()
        assert reader.chunk_count() == 2


def test_chunk_hashes_and_vectors_by_hash(filled: Store) -> None:
    with filled.write() as writer:
        hashes = writer.chunk_hashes(["src/cart.py", "src/user.py"])
        found = writer.vectors_by_hash([CHUNKS[3].content_hash, "unknown"])
    assert sorted(hashes["src/cart.py"]) == sorted(c.content_hash for c in CHUNKS[:3])
    assert hashes["src/user.py"] == [CHUNKS[3].content_hash]
    assert list(found) == [CHUNKS[3].content_hash]
    assert np.allclose(found[CHUNKS[3].content_hash], VECTORS[3], atol=1e-6)


def test_nearest_is_exact_and_honours_scope_and_exclude(filled: Store) -> None:
    ids = _ids(filled)
    with filled.read() as reader:
        hits = reader.nearest(VECTORS[3], 5)
        assert hits[0][0] == ids[("src/user.py", 1)] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert [h[1] for h in hits] == sorted((h[1] for h in hits), reverse=True)
        expected = sorted((float(VECTORS[k] @ VECTORS[3]) for k in range(5)), reverse=True)
        assert [h[1] for h in hits] == pytest.approx(expected, abs=1e-5)
        typescript = reader.nearest(VECTORS[3], 5, scope=Scope(language="typescript"))
        assert [h[0] for h in typescript] == [ids[("web/app.ts", 1)]]
        keyed = reader.nearest(VECTORS[0], 5, scope=Scope(keys=frozenset({"src/user.py", "web/app.ts"})))
        assert {h[0] for h in keyed} == {ids[("src/user.py", 1)], ids[("web/app.ts", 1)]}
        excluded = reader.nearest(VECTORS[3], 5, exclude=ids[("src/user.py", 1)])
        assert ids[("src/user.py", 1)] not in [h[0] for h in excluded] and len(excluded) == 4
        assert reader.nearest(VECTORS[3], 5, scope=Scope(keys=frozenset())) == []


def test_lexical_finds_split_identifiers_within_scope(filled: Store) -> None:
    ids = _ids(filled)
    with filled.read() as reader:
        hits = reader.lexical(query_lexemes("user name"), 5)
        assert hits[0][0] == ids[("src/user.py", 1)] and hits[0][1] > 0
        price = reader.lexical(query_lexemes("parsePrice"), 5)
        assert price[0][0] == ids[("src/cart.py", 21)]
        scoped = reader.lexical(query_lexemes("cart total"), 5, scope=Scope(language="typescript"))
        assert [h[0] for h in scoped] == [ids[("web/app.ts", 1)]]
        assert reader.lexical(query_lexemes("zzzunknownzzz"), 5) == []
        assert reader.lexical("", 5) == []


def test_chunks_texts_and_vectors_by_id(filled: Store) -> None:
    ids = _ids(filled)
    wanted = [ids[("web/app.ts", 1)], 12345, ids[("src/cart.py", 1)]]
    with filled.read() as reader:
        rows = reader.chunks(wanted)
        bare = reader.chunks(wanted, text=False)
        vectors = reader.vectors(wanted)
    assert [r.path for r in rows] == ["web/app.ts", "src/cart.py"] and rows[1].text == CHUNKS[0].text
    assert rows[1].symbol == "Cart" and rows[1].kind == "class" and rows[1].chunk_id == chunk_id(
        "src/cart.py", 1, 20, CHUNKS[0].content_hash)
    assert all(r.text == "" for r in bare)
    assert set(vectors) == {ids[("web/app.ts", 1)], ids[("src/cart.py", 1)]}  # 12345 is unknown
    assert np.allclose(vectors[ids[("src/cart.py", 1)]], VECTORS[0], atol=1e-6)


def test_chunks_of_file_at_a_line_gives_innermost_first_and_without_in_line_order(filled: Store) -> None:
    with filled.read() as reader:
        at = reader.chunks_of_file("src/cart.py", line=3)
        of_file = reader.chunks_of_file("src/cart.py")
        assert reader.chunks_of_file("src/cart.py", line=500) == []
    assert [(r.start_line, r.end_line) for r in at] == [(2, 5), (1, 20)]
    assert [(r.start_line, r.end_line) for r in of_file] == [(1, 20), (2, 5), (21, 30)]
    assert of_file[2].text == CHUNKS[2].text


def test_all_chunks_rows_vectors_and_shapes_are_aligned(filled: Store) -> None:
    with filled.read() as reader:
        rows, matrix, shapes = reader.all_chunks()
    assert [(r.path, r.start_line) for r in rows] == sorted((c.path, c.start_line) for c in CHUNKS)
    by_place = {(c.path, c.start_line): k for k, c in enumerate(CHUNKS)}
    for row, vector, shape in zip(rows, matrix, shapes, strict=True):
        original = by_place[(row.path, row.start_line)]
        assert np.allclose(vector, VECTORS[original], atol=1e-6) and row.text == ""
        assert shape == CHUNKS[original].shape


def test_symbols_finds_definitions_and_chunk_ids(filled: Store) -> None:
    with filled.read() as reader:
        table = reader.symbols()
    found = table.lookup("total", limit=5)
    assert [(d.symbol, d.path, d.start_line) for d in found] == [("Cart.total", "src/cart.py", 2)]
    target = chunk_id("src/user.py", 1, 9, CHUNKS[3].content_hash)
    assert table.row_id(target) == _ids(filled)[("src/user.py", 1)]


def test_point_ids_are_the_same_in_two_stores(make_store: Callable[..., Store]) -> None:
    stores = [make_store("one"), make_store("two")]
    for store, order in zip(stores, (CHUNKS, list(reversed(CHUNKS))), strict=True):
        with store.write() as writer:
            writer.create(META)
            vectors = np.stack([VECTORS[CHUNKS.index(c)] for c in order])
            writer.replace_files(FILES, order, vectors)
    first, second = (_ids(s) for s in stores)
    assert first == second and all(0 < i < 2**63 for i in first.values())


def test_a_write_changes_the_token_and_drop_removes_everything(filled: Store) -> None:
    with filled.read() as reader:
        token = reader.meta()["token"]
    with filled.write() as writer:
        writer.remove_files(["web/app.ts"])
    with filled.read() as reader:
        assert reader.meta()["token"] != token
    with filled.write() as writer:
        writer.drop()
    assert not filled.exists
    with filled.read() as reader:
        assert reader.meta() == {} and reader.files() == {} and not reader.has_index()


def test_a_closed_port_is_one_line_naming_the_url_and_never_the_key() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    store = QdrantStore("code", url=url, api_key="s3cret-key-123", timeout_s=2)
    with pytest.raises(StoreError) as caught:
        with store.read() as reader:
            reader.meta()
    message = str(caught.value)
    assert url in message and "s3cret" not in message and "\n" not in message
    assert "qdrant.url" in message
    store.close()


def test_local_mode_is_single_process(tmp_path: Path) -> None:

    store = QdrantStore("code", path=tmp_path / "q")
    with store.write() as writer:
        writer.create(META)
    probe = ("import sys; from pathlib import Path; from sai.store.qdrant import QdrantStore\n"
             "from sai.errors import StoreError\n"
             "try:\n    QdrantStore('code', path=Path(sys.argv[1])).exists\nexcept StoreError as e:\n"
             "    print(e)")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "q")], capture_output=True, text=True,
                         timeout=60)
    assert "open in another process" in out.stdout and "single-process" in out.stdout
    store.close()


def test_a_lease_left_in_local_mode_blocks_no_writer(filled: Store) -> None:
    from sai.store.qdrant.locks import _lock_point

    assert isinstance(filled, QdrantStore)
    filled.lock_timeout_s = 0.5
    # what a writer of an older SAI, killed, left: a lease with two minutes to run
    filled.client.call("upsert", filled.meta_name, [_lock_point("killed-writer", time.time() + 120)])
    started = time.monotonic()
    with filled.write() as writer:  # local mode: the OS lock, free, says nobody writes
        writer.set_meta({"after": "kill"})
    assert time.monotonic() - started < 0.5 and filled._meta()["after"] == "kill"


HOLD_WRITER_LOCK = """
import fcntl, json, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, json.dumps({"holder": "testhost pid %d" % os.getpid(), "since": "10:00:00 UTC"}).encode())
print("held", flush=True)
time.sleep(60)
"""


def test_a_live_local_writer_is_named_and_a_killed_one_frees_the_index_at_once(filled: Store) -> None:
    from sai.errors import StoreLockedError
    from sai.store.qdrant.locks import WRITER_FILE

    assert isinstance(filled, QdrantStore) and filled.path is not None
    filled.lock_timeout_s = 0.5
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITER_LOCK, str(filled.path / WRITER_FILE)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLockedError) as caught, filled.write() as writer:
            writer.set_meta({"never": "written"})
        message = str(caught.value)
        assert f"being written by testhost pid {holder.pid} (writing since 10:00:00 UTC)" in message
        assert str(filled.path) in message and "raise lock_timeout_s" in message and "duckdb" not in message
    finally:
        holder.kill()
        holder.wait()
    started = time.monotonic()
    with filled.write() as writer:
        writer.set_meta({"after": "kill"})
    assert time.monotonic() - started < 0.5
    assert "never" not in filled._meta() and filled._meta()["after"] == "kill"


@pytest.fixture
def lease_client(tmp_path: Path) -> Iterator[Client]:
    """The client a server lease talks to: local mode's, which answers the same conditional upserts."""
    client = Client(url=None, api_key=None, path=tmp_path / "lease", timeout_s=5, prefer_grpc=False)
    yield client
    client.close()


def _lease(client: Client, *, timeout_s: float) -> ServerLease:
    def locked(holder: str) -> StoreLockedError:
        return StoreLockedError(f"held by {holder}")

    return ServerLease(client, "code__meta", timeout_s=timeout_s, locked=locked, lease_s=1.0, renew_s=0.2)


def test_a_server_lease_is_renewed_while_its_writer_lives_and_a_waiting_writer_names_it(
    lease_client: Client,
) -> None:
    first = _lease(lease_client, timeout_s=1)
    with first.held():
        with pytest.raises(StoreLockedError) as caught, _lease(lease_client, timeout_s=2.5).held():
            pass  # 2.5 s: more than two leases; the heartbeat kept it
        assert f"held by {this_process()} (its lease runs until " in str(caught.value)
        first.check()  # still its own
    with _lease(lease_client, timeout_s=0).held():  # released at the end: free at once
        pass


def test_a_killed_server_writer_blocks_the_next_for_one_lease_at_most(lease_client: Client) -> None:
    killed = _lease(lease_client, timeout_s=1)
    lease_client.call("create_collection", "code__meta", vectors_config={})
    assert killed.renew() is None  # its last renewal, then no heartbeat: the process is gone
    started = time.monotonic()
    with _lease(lease_client, timeout_s=5).held():
        waited = time.monotonic() - started
        assert 0.5 < waited < 2.0, waited
        with pytest.raises(StoreLockedError, match="lost the writer lease of code__meta to .* pid"):
            killed.check()  # had it only stalled, it must not write now


def test_a_write_killed_mid_file_leaves_the_old_chunks_and_a_file_the_next_run_redoes(
    filled: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert isinstance(filled, QdrantStore)
    real = filled.client.call

    def failing(method: str, *args: object, **kwargs: object) -> object:
        if method == "upsert" and args and args[0] == filled.collection:
            raise StoreError("the server went away")
        return real(method, *args, **kwargs)

    monkeypatch.setattr(filled.client, "call", failing)
    with pytest.raises(StoreError), filled.write() as writer:
        writer.replace_files([_file("src/user.py", 1, mtime=5)], [CHUNKS[3]], VECTORS[3:4])
    monkeypatch.setattr(filled.client, "call", real)
    with filled.read() as reader:
        assert "src/user.py" not in reader.files()  # new to the next run: indexed again
        assert reader.chunk_count(["src/user.py"]) == 1
        assert reader.lexical(query_lexemes("user name"), 1)  # still searchable


def test_readers_in_threads_run_while_a_writer_writes(filled: Store) -> None:
    import threading

    errors: list[BaseException] = []
    answers: list[int] = []

    def read() -> None:
        try:
            for _ in range(10):
                with filled.read() as reader:
                    answers.append(len(reader.nearest(VECTORS[0], 3)))
                    reader.lexical(query_lexemes("cart total"), 3)
        except BaseException as exc:  # noqa: BLE001 (collected for the assertion below)
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    for k in range(5):
        with filled.write() as writer:
            writer.replace_files([_file("src/cart.py", 3, mtime=k)], CHUNKS[:3], VECTORS[:3])
    for thread in readers:
        thread.join(timeout=60)
    assert not errors and len(answers) == 30 and all(n == 3 for n in answers)
