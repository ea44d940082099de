"""The storage contract (sai/store/base.py): every verb, against a real store of each backend and
the tests' in-memory double (tests/memory_store.py)."""

from __future__ import annotations

import dataclasses
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from memory_store import MemoryStore

from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk, Reference, chunk_id
from sai.store import Scope
from sai.store.base import Store
from sai.store.duckdb import DuckDBStore
from sai.store.qdrant import QdrantStore
from sai.store.uses import as_columns
from sai.text.shape import SIGNATURE_SIZE

BACKENDS = ["duckdb", "qdrant-local", "memory"] + (["qdrant-server"] if os.environ.get("QDRANT_URL") else [])
DIM = 8
META = IndexMeta(backend="duckdb", embedder="ollama", model="nomic-embed-text", prefix_style="nomic",
                 vector_dim=DIM, chunker="ast", chunker_version=3, chunking="ast/3/test")

# (key, language, start, end, symbol, kind, lexemes): what three files hold
CHUNKS = [
    ("src/cart.py", "python", 1, 20, "Cart", "class", "cart class holds item price"),
    ("src/cart.py", "python", 3, 8, "Cart.add", "method", "cart add item quantity"),
    ("src/cart.py", "python", 10, 18, "Cart.total", "method", "cart total price sum tax"),
    ("src/dates.py", "python", 1, 5, "parse_date", "function", "parse date iso string"),
    ("web/view.js", "javascript", 1, 4, "render", "function", "render cart view price"),
    ("web/view.js", "javascript", 6, 9, "renderAll", "function", "render all views"),
    ("notes/todo.txt", None, 1, 3, None, None, "todo price review"),
]


def _open(backend: str, where: Path) -> Store:
    if backend == "duckdb":
        return DuckDBStore(where / "index" / "code.duckdb", collection="code", lock_timeout_s=10)
    if backend == "qdrant-local":
        return QdrantStore("code", path=where / "qdrant", lock_timeout_s=10)
    if backend == "memory":  # the tests' double (tests/memory_store.py): held to the same contract
        return MemoryStore()
    if backend == "qdrant-server":
        return QdrantStore(f"code_{uuid.uuid4().hex[:8]}", url=os.environ["QDRANT_URL"],
                           api_key=os.environ.get("QDRANT_API_KEY"), lock_timeout_s=10)
    raise AssertionError(f"no fixture for backend {backend}")


@pytest.fixture(params=BACKENDS)
def store(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    made = _open(request.param, tmp_path)
    yield made
    made.close()


def _chunk(key: str, language: str | None, start: int, end: int, symbol: str | None, kind: str | None,
           lexemes: str, *, version: int = 0) -> NewChunk:
    text = f"# {symbol or 'notes'} v{version}\n" + "\n".join(f"line {n}" for n in range(start, end))
    shape = _signature(start, end) if symbol else None
    return NewChunk(path=key, language=language, start_line=start, end_line=end, symbol=symbol, text=text,
                    content_hash=f"h:{key}:{start}:{end}:{version}", file_hash=f"f:{key}:{version}",
                    no_duplicate=symbol == "renderAll", lexemes=lexemes, shape=shape, kind=kind)


def _signature(start: int, end: int) -> bytes:
    """A stored shape signature (sai/text/shape.py's layout): SIGNATURE_SIZE minima, then the element count."""
    minima = np.arange(SIGNATURE_SIZE) + 1_000 * start + end
    return np.append(minima, 12 + start).astype("<u4").tobytes()


def _vectors(n: int, seed: int = 3) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _file_rows(chunks: list[NewChunk]) -> list[FileRow]:
    counts: dict[str, int] = {}
    for c in chunks:
        counts[c.path] = counts.get(c.path, 0) + 1
    return [FileRow(key, 100 + n, 1_000 + n, f"f:{key}:0", n) for key, n in counts.items()]


def _fill(store: Store, spec: list[tuple] = CHUNKS) -> tuple[list[NewChunk], np.ndarray]:
    chunks = [_chunk(*row) for row in spec]
    vectors = _vectors(len(chunks))
    store.prepare()
    with store.write() as writer:
        if not writer.has_index():
            writer.create(META)
        writer.replace_files(_file_rows(chunks), chunks, vectors)
    return chunks, vectors


@pytest.fixture
def filled(store: Store) -> tuple[Store, list[NewChunk], np.ndarray]:
    chunks, vectors = _fill(store)
    return store, chunks, vectors


def _ids(store: Store) -> dict[tuple[str, int, int], int]:
    with store.read() as reader:
        rows = reader.all_chunks()[0]
    return {(r.path, r.start_line, r.end_line): r.id for r in rows}


# ---------------------------------------------------------------- the index and its files
def test_create_records_the_meta_and_an_empty_index(store: Store) -> None:
    assert not store.exists
    store.prepare()
    with store.write() as writer:
        assert not writer.has_index()
        writer.create(META)
    assert store.exists
    with store.read() as reader:
        meta = reader.meta()
        assert reader.has_index() and reader.chunk_count() == 0 and reader.files() == {}
        assert reader.content_hashes() == set() and reader.nearest(_vectors(1)[0], 3) == []
    assert {k: meta[k] for k in ("backend", "model", "vector_dim", "chunking", "schema_version")} == {
        "backend": "duckdb", "model": "nomic-embed-text", "vector_dim": str(DIM), "chunking": "ast/3/test",
        "schema_version": str(META.schema_version)}


def test_set_meta_adds_and_replaces_values(filled) -> None:
    store, _, _ = filled
    with store.write() as writer:
        writer.set_meta({"chunker": "lines", "extra": "1"})
    with store.read() as reader:
        assert (reader.meta()["chunker"], reader.meta()["extra"], reader.meta()["model"]) == (
            "lines", "1", "nomic-embed-text")


def test_replace_files_records_files_and_chunks(filled) -> None:
    store, chunks, _ = filled
    with store.read() as reader:
        files = reader.files()
        assert files["src/cart.py"] == FileRow("src/cart.py", 103, 1_003, "f:src/cart.py:0", 3)
        assert set(files) == {"src/cart.py", "src/dates.py", "web/view.js", "notes/todo.txt"}
        assert set(reader.files(["web/view.js", "absent.py"])) == {"web/view.js"}
        assert reader.chunk_count() == len(chunks) and reader.chunk_count(["src/cart.py", "absent.py"]) == 3
        assert reader.content_hashes() == {c.content_hash for c in chunks}


def test_replace_files_replaces_only_the_named_files_chunks(filled) -> None:
    store, _, _ = filled
    new = [_chunk("src/cart.py", "python", 1, 9, "Cart", "class", "cart rewritten", version=1)]
    with store.write() as writer:
        writer.replace_files([FileRow("src/cart.py", 5, 6, "f:src/cart.py:1", 1),
                              FileRow("notes/todo.txt", 7, 8, "f:empty", 0)], new, _vectors(1, seed=9))
    with store.read() as reader:
        assert [(r.start_line, r.end_line) for r in reader.chunks_of_file("src/cart.py")] == [(1, 9)]
        assert reader.chunks_of_file("notes/todo.txt") == []  # read, and it holds nothing now
        assert reader.files(["notes/todo.txt"])["notes/todo.txt"].chunk_count == 0
        assert reader.chunk_count() == 4 and len(reader.chunks_of_file("web/view.js")) == 2
        # the lexical index follows: the new chunk's words are found, the replaced chunks' gone
        assert [i for i, _ in reader.lexical("rewritten", 5)] == [r.id for r in reader.chunks_of_file("src/cart.py")]
        assert reader.lexical("quantity", 5) == [] and reader.lexical("todo review", 5) == []


def test_touch_files_changes_file_state_only(filled) -> None:
    store, _, _ = filled
    with store.write() as writer:
        writer.touch_files([FileRow("src/dates.py", 101, 9_999, "f:src/dates.py:0", 1)])
    with store.read() as reader:
        assert reader.files(["src/dates.py"])["src/dates.py"].mtime_ns == 9_999
        assert reader.chunk_count() == len(CHUNKS)


def test_remove_files_forgets_files_and_counts_their_chunks(filled) -> None:
    store, _, _ = filled
    with store.write() as writer:
        assert writer.remove_files(["web/view.js", "absent.py"]) == 2
        assert writer.remove_files([]) == 0
    with store.read() as reader:
        assert "web/view.js" not in reader.files() and reader.chunk_count() == len(CHUNKS) - 2
        assert reader.chunks_of_file("web/view.js") == [] and reader.lexical("render views", 5) == []


def test_chunk_hashes_and_vectors_by_hash(filled) -> None:
    store, chunks, vectors = filled
    with store.write() as writer:
        hashes = writer.chunk_hashes(["src/cart.py", "absent.py"])
        found = writer.vectors_by_hash([chunks[4].content_hash, "absent"])
    assert {k: sorted(v) for k, v in hashes.items()} == {
        "src/cart.py": sorted(c.content_hash for c in chunks[:3])}
    assert set(found) == {chunks[4].content_hash}
    assert found[chunks[4].content_hash].tobytes() == vectors[4].tobytes()  # bit for bit
    with store.read() as reader:  # a reader asks too: a run of a few files, before its write
        assert {k: v.tobytes() for k, v in reader.vectors_by_hash([chunks[4].content_hash, "absent"]).items()} \
            == {chunks[4].content_hash: vectors[4].tobytes()}


def test_summary_holds_what_status_shows_and_leaves_unknown_languages_out(filled) -> None:
    store, chunks, _ = filled
    with store.read() as reader:
        summary = reader.summary()
        files = reader.files()
    assert summary.languages == {"javascript": 2, "python": 4}
    assert (summary.chunk_count, summary.files, summary.pending) == (len(chunks), files, 0)
    assert summary.meta["model"] == "nomic-embed-text" and summary.indexed_at is not None


def test_summary_of_a_dropped_index_is_empty(filled) -> None:
    store, _, _ = filled
    with store.write() as writer:
        writer.drop()
    with store.read() as reader:
        summary = reader.summary()
    assert (summary.meta, summary.files, summary.chunk_count, summary.languages, summary.indexed_at) == (
        {}, {}, 0, {}, None)


# ---------------------------------------------------------------- search
def test_nearest_is_exact_and_best_first(filled) -> None:
    store, chunks, vectors = filled
    ids = _ids(store)
    query = vectors[1] + 0.3 * vectors[4]
    query /= np.linalg.norm(query)  # embedders hand out unit vectors (the contract says so)
    with store.read() as reader:
        hits = reader.nearest(query, 4)
    scores = vectors @ query
    expected = [ids[(chunks[k].path, chunks[k].start_line, chunks[k].end_line)] for k in np.argsort(-scores)[:4]]
    assert [i for i, _ in hits] == expected
    assert [s for _, s in hits] == pytest.approx(sorted(scores, reverse=True)[:4], abs=1e-5)


def test_nearest_within_a_scope_and_excluding_a_chunk(filled) -> None:
    store, _, vectors = filled
    ids = _ids(store)
    by_id = {i: key for key, i in ids.items()}
    with store.read() as reader:
        python = reader.nearest(vectors[4], 10, scope=Scope(language="python"))
        keyed = reader.nearest(vectors[0], 10, scope=Scope(keys=frozenset({"web/view.js", "notes/todo.txt"})))
        both = reader.nearest(vectors[0], 10, scope=Scope(language="javascript", keys=frozenset({"src/cart.py"})))
        own = ids[("src/cart.py", 3, 8)]
        without = reader.nearest(vectors[1], 10, exclude=own)
    assert {by_id[i][0] for i, _ in python} == {"src/cart.py", "src/dates.py"} and len(python) == 4
    assert {by_id[i][0] for i, _ in keyed} == {"web/view.js", "notes/todo.txt"} and len(keyed) == 3
    assert both == []
    assert own not in [i for i, _ in without] and len(without) == len(CHUNKS) - 1


def test_nearest_each_answers_as_nearest_asked_alone(filled) -> None:
    store, _, vectors = filled
    ids = list(_ids(store).values())
    excluded = [ids[0], ids[3], 10**9]  # the last: an id the index does not hold
    with store.read() as reader:
        together = reader.nearest_each(vectors[[0, 3, 5]], 4, exclude=excluded)
        alone = [reader.nearest(v, 4, exclude=e) for v, e in zip(vectors[[0, 3, 5]], excluded, strict=True)]
    assert [[i for i, _ in found] for found in together] == [[i for i, _ in found] for found in alone]
    assert [[s for _, s in found] for found in together] == [pytest.approx([s for _, s in f], abs=1e-6) for f in alone]
    assert all(len(found) == 4 for found in together)
    with store.read() as reader:  # a floor keeps the chunks of cosine >= it, as an exact scan finds them
        scores = sorted(s for found in alone for _, s in found)
        floor = (scores[len(alone) * 2] + scores[len(alone) * 2 + 1]) / 2  # between two scores, none on it
        above = reader.nearest_each(vectors[[0, 3, 5]], 4, exclude=excluded, floor=floor)
    assert [[i for i, _ in found] for found in above] == [[i for i, s in f if s >= floor] for f in alone]


def test_vectors_by_id_leave_unknown_ids_out(filled) -> None:
    store, chunks, vectors = filled
    ids = _ids(store)
    first, second = ids[("src/cart.py", 1, 20)], ids[("web/view.js", 1, 4)]
    with store.read() as reader:
        found = reader.vectors([second, 10_000, first])
        assert reader.vectors([]) == {}
    assert set(found) == {first, second} and found[first].dtype == np.float32
    # Qdrant normalises cosine vectors again: equal to 1e-6, not bit for bit
    assert np.allclose(found[first], vectors[0], atol=1e-6) and np.allclose(found[second], vectors[4], atol=1e-6)


def test_lexical_ranks_matches_and_scopes_its_statistics(filled, tmp_path: Path, request) -> None:
    store, _, _ = filled
    ids = _ids(store)
    by_id = {i: key for key, i in ids.items()}
    subset = frozenset({"web/view.js", "notes/todo.txt"})
    with store.read() as reader:
        everything = reader.lexical("price", 10)
        scoped = reader.lexical("price", 10, scope=Scope(keys=subset))
        python = reader.lexical("price", 10, scope=Scope(language="python"))
        assert reader.lexical("nosuchword", 10) == []
    assert {by_id[i] for i, _ in everything} == {
        ("src/cart.py", 1, 20), ("src/cart.py", 10, 18), ("web/view.js", 1, 4), ("notes/todo.txt", 1, 3)}
    assert [s for _, s in everything] == sorted((s for _, s in everything), reverse=True)
    assert {by_id[i][0] for i, _ in python} == {"src/cart.py"}
    # the scope's answer is what an index holding only those files gives
    alone = _open(request.node.callspec.params["store"], tmp_path / "alone")
    try:
        _fill(alone, [row for row in CHUNKS if row[0] in subset])
        alone_ids = {i: key for key, i in _ids(alone).items()}
        with alone.read() as reader:
            expected = reader.lexical("price", 10)
    finally:
        alone.close()
    assert [(by_id[i], round(s, 5)) for i, s in scoped] == [(alone_ids[i], round(s, 5)) for i, s in expected]


# ---------------------------------------------------------------- chunks
def test_chunks_come_in_the_order_given_and_unknown_ids_are_left_out(filled) -> None:
    store, chunks, _ = filled
    ids = _ids(store)
    wanted = [ids[("web/view.js", 6, 9)], 10_000, ids[("src/cart.py", 3, 8)]]
    with store.read() as reader:
        rows = reader.chunks(wanted)
        bare = reader.chunks(wanted, text=False)
    assert [(r.path, r.start_line) for r in rows] == [("web/view.js", 6), ("src/cart.py", 3)]
    view = rows[0]
    assert (view.symbol, view.kind, view.language, view.no_duplicate) == ("renderAll", "function", "javascript", True)
    assert view.text == chunks[5].text and view.content_hash == chunks[5].content_hash
    assert view.chunk_id == chunk_id("web/view.js", 6, 9, chunks[5].content_hash)
    assert [r.text for r in bare] == ["", ""] and [r.id for r in bare] == [r.id for r in rows]
    assert [r.text for r in rows] == [chunks[5].text, chunks[1].text]


def test_chunks_of_file_at_a_line_come_innermost_first(filled) -> None:
    store, _, _ = filled
    with store.read() as reader:
        inner = reader.chunks_of_file("src/cart.py", line=5)
        outer_only = reader.chunks_of_file("src/cart.py", line=9)
        assert reader.chunks_of_file("src/cart.py", line=99) == [] and reader.chunks_of_file("absent.py", line=1) == []
    assert [(r.start_line, r.end_line) for r in inner] == [(3, 8), (1, 20)]
    assert [(r.start_line, r.end_line) for r in outer_only] == [(1, 20)]


def test_chunks_of_file_come_in_line_order_with_text(filled) -> None:
    store, chunks, _ = filled
    with store.read() as reader:
        rows = reader.chunks_of_file("src/cart.py")
    assert [(r.start_line, r.end_line) for r in rows] == [(1, 20), (3, 8), (10, 18)]
    assert [r.text for r in rows] == [c.text for c in chunks[:3]]


def test_all_chunks_align_rows_vectors_and_shapes(filled) -> None:
    store, chunks, vectors = filled
    with store.read() as reader:
        rows, matrix, shapes = reader.all_chunks()
    assert [(r.path, r.start_line, r.end_line) for r in rows] == sorted((c.path, c.start_line, c.end_line)
                                                                        for c in chunks)
    by_hash = {c.content_hash: k for k, c in enumerate(chunks)}
    order = [by_hash[r.content_hash] for r in rows]
    assert matrix.dtype == np.float32  # Qdrant normalises cosine vectors again: equal to 1e-6, not bit for bit
    assert np.allclose(matrix, vectors[order], atol=1e-6)
    assert shapes == [chunks[k].shape for k in order]
    assert all(isinstance(r, ChunkRow) and r.text == "" for r in rows)


def test_shapes_hold_each_chunks_signature_by_id(filled) -> None:
    store, chunks, _ = filled
    ids = _ids(store)
    with store.read() as reader:
        table = reader.shapes()
    wanted = [ids[(c.path, c.start_line, c.end_line)] for c in chunks]
    sigs, sizes = table.of(np.array([*wanted, 10**9]))
    assert sizes.tolist() == [12 + c.start_line if c.shape else 0 for c in chunks] + [0]  # unknown: no shape
    assert sigs[0].tobytes() == chunks[0].shape[:4 * SIGNATURE_SIZE]
    alike, similarity = table.alike(sigs[1], 0.5)
    assert alike.tolist() == [wanted[1]] and similarity.tolist() == [1.0]  # no other minimum is equal
    half = sigs[1].copy()
    half[::2] = 7  # half of Cart.add's minima
    assert [a.tolist() for a in table.alike(half, 0.5)] == [[wanted[1]], [0.5]]
    assert not len(table.alike(half, 0.51)[0])
    assert len(table) == len(chunks)


def test_symbols_find_definitions_and_chunk_ids(filled) -> None:
    store, chunks, _ = filled
    ids = _ids(store)
    with store.read() as reader:
        table = reader.symbols()
    (found,) = table.lookup("add", limit=5)
    assert (found.symbol, found.kind, found.path, found.start_line) == ("Cart.add", "method", "src/cart.py", 3)
    assert table.row_id(chunk_id("src/dates.py", 1, 5, chunks[3].content_hash)) == ids[("src/dates.py", 1, 5)]
    assert table.row_id("0" * 16) is None


# ---------------------------------------------------------------- references
def test_references_are_found_by_name_and_by_lines_and_go_with_their_file(filled) -> None:
    store, chunks, _ = filled
    if not store.references:
        pytest.skip("the backend stores no references")
    unit = chunk_id("src/cart.py", 3, 8, chunks[1].content_hash)
    cart = [Reference("parse_date", "call", 5, 8, qualifier="dates", module="src.dates", unit="Cart.add",
                      unit_start=3, unit_end=8, unit_id=unit, language="python"),
            Reference("dates", "import", 1, 0, language="python"), Reference("Cart", "type", 12, 4, language="python")]
    with store.write() as writer:
        writer.replace_references({"src/cart.py": as_columns(cart),
                                   "web/view.js": as_columns([Reference("render", "call", 7, 2)])})
    with store.read() as reader:
        assert reader.references(["parse_date", "render", "absent"]) == [
            dataclasses.replace(cart[0], path="src/cart.py"), Reference("render", "call", 7, 2, path="web/view.js")]
        within = reader.references_in("src/cart.py", 1, 6)
        assert [(r.name, r.line) for r in within] == [("dates", 1), ("parse_date", 5)]
        assert reader.references(["parse_date"])[0].chunk_id == unit
        assert reader.files_using(["Cart", "render", "absent"]) == {
            "Cart": {"src/cart.py"}, "render": {"web/view.js"}, "absent": set()}
        many = ["parse_date", "render"] + [f"absent{n}" for n in range(60)]  # past the names a list holds
        assert reader.references(many) == reader.references(["parse_date", "render"])
        assert reader.files_using(many)["render"] == {"web/view.js"}
    with store.write() as writer:
        writer.replace_references({"src/cart.py": as_columns([])})  # the file holds none now
        writer.remove_files(["web/view.js"])  # its references go with it
    with store.read() as reader:
        assert reader.references(["parse_date", "render", "Cart"]) == []


# ---------------------------------------------------------------- runs, drop, transactions
def test_lexical_search_follows_every_write_at_once(store: Store) -> None:
    _fill(store)
    with store.read() as reader:
        assert reader.lexical("date", 5)
    with store.write() as writer:
        writer.remove_files(["src/dates.py"])
    with store.read() as reader:  # no step after the writes brings the lexical index up to date
        assert reader.lexical("date", 5) == []


def test_drop_removes_the_index(filled) -> None:
    store, _, _ = filled
    with store.write() as writer:
        writer.drop()
    with store.read() as reader:
        assert not reader.has_index() and reader.meta() == {} and reader.files() == {}
        assert reader.chunk_count() == 0


def test_a_reader_never_sees_an_open_write_transaction(filled) -> None:
    store, _, _ = filled
    if not store.transactional:
        pytest.skip("the backend has no transactions")
    seen: list[int] = []

    def count() -> None:
        with store.read() as reader:
            seen.append(reader.chunk_count())

    with store.write() as writer:
        writer.remove_files(["web/view.js"])
        other = threading.Thread(target=count)
        other.start()
        other.join(timeout=0.5)  # it may wait for the commit, never read the uncommitted state
        assert seen in ([], [len(CHUNKS)])
    other.join(timeout=30)
    assert seen in ([len(CHUNKS)], [len(CHUNKS) - 2])


def test_a_failed_write_leaves_nothing_behind(filled) -> None:
    store, _, _ = filled
    if not store.transactional:
        pytest.skip("the backend has no transactions")
    with pytest.raises(RuntimeError), store.write() as writer:
        writer.remove_files(["src/cart.py"])
        raise RuntimeError("stop")
    with store.read() as reader:
        assert reader.chunk_count() == len(CHUNKS) and "src/cart.py" in reader.files()


def test_recreate_leaves_no_index_to_read_and_a_new_one_can_be_built(filled) -> None:
    store, _, _ = filled
    store.close()
    store.recreate()  # moved aside (keeps_old_on_recreate) or dropped: either way gone from the store
    assert not store.exists
    _fill(store, CHUNKS[:2])
    with store.read() as reader:
        assert reader.chunk_count() == 2


def test_upgrade_keeps_every_chunk_where_the_store_can_upgrade(filled) -> None:
    store, chunks, _ = filled
    if not store.can_upgrade:
        with pytest.raises(NotImplementedError):
            store.upgrade(4)
        return
    store.upgrade(4)
    with store.read() as reader:
        assert reader.chunk_count() == len(chunks) and reader.meta()["schema_version"] == str(META.schema_version)


# ---------------------------------------------------------------- pending vectors


def test_a_store_without_pending_vectors_answers_as_an_index_with_nothing_waiting(filled) -> None:
    store, chunks, _ = filled
    if store.pending_vectors:
        pytest.skip("this backend holds chunks without a vector (the next tests)")
    with store.read() as reader:
        assert (reader.pending_count(), reader.pending(), reader.texts_by_id([1])) == (0, [], {})
    with store.write() as writer, pytest.raises(NotImplementedError):
        writer.set_vectors([chunks[0].content_hash], _vectors(1))


def _pending_store(store: Store, *, dim: int) -> tuple[list[NewChunk], np.ndarray]:
    """CHUNKS written in a new index of dimension `dim` (0: not known yet), the first three with
    their vectors (none when dim is 0), the rest waiting."""
    if not store.pending_vectors:
        pytest.skip("this backend stores every chunk with its vector")
    chunks = [_chunk(*row) for row in CHUNKS]
    vectors = _vectors(len(chunks))
    given = vectors.copy()
    given[0 if dim == 0 else 3:] = np.nan
    store.prepare()
    with store.write() as writer:
        writer.create(IndexMeta(**{**META.__dict__, "vector_dim": dim}))
        writer.replace_files(_file_rows(chunks), chunks, given if dim else np.zeros((len(chunks), 0), np.float32))
    return chunks, vectors


@pytest.mark.parametrize("dim", [0, DIM])
def test_chunks_without_a_vector_are_searchable_lexically_and_get_it_later(store: Store, dim: int) -> None:
    chunks, vectors = _pending_store(store, dim=dim)
    waiting = chunks if dim == 0 else chunks[3:]
    with store.read() as reader:
        assert reader.pending_count() == len(waiting)
        pending = reader.pending()
        assert [p.content_hash for p in pending] == [c.content_hash for c in waiting]  # in the order stored
        assert reader.texts_by_id([pending[0].first_id]) == {pending[0].first_id: waiting[0].text}
        assert reader.pending(pending[1].first_id) == pending[2:]  # only chunks stored after that id
        assert reader.content_hashes() == ({c.content_hash for c in chunks[:3]} if dim else set())
        assert {i for i, _ in reader.lexical("render", 10)}  # every stored chunk is in the postings
        near = reader.nearest(vectors[4], 10)
        assert len(near) == (0 if dim == 0 else 3)  # only chunks with a vector are scanned
        rows, matrix, shapes = reader.all_chunks()
        assert len(rows) == len(matrix) == len(shapes) == (0 if dim == 0 else 3)
        ids = {r.path + str(r.start_line): r.id for r in reader.chunks_of_file("web/view.js")}
        assert reader.vectors([ids["web/view.js1"]]) == {}
        scoped = reader.lexical("render", 10, scope=Scope(language="javascript"))
        assert {i for i, _ in scoped} == set(ids.values())  # a scope masks chunks without a vector too
    with store.write() as writer:
        assert writer.set_vectors([c.content_hash for c in waiting], vectors[len(chunks) - len(waiting):]) == \
            len(waiting)
    with store.read() as reader:
        assert reader.pending_count() == 0 and reader.meta()["vector_dim"] == str(DIM)
        assert reader.nearest(vectors[4], 1)[0][0] == ids["web/view.js1"]
        assert len(reader.all_chunks()[0]) == len(chunks)


def test_a_bounded_write_fills_only_its_stretch_of_ids_and_copy_vectors_fills_the_copies(store: Store) -> None:
    chunks, vectors = _pending_store(store, dim=DIM)
    copy = dataclasses.replace(chunks[4], path="web/copy.js")  # the same text in a file stored last
    with store.write() as writer:
        writer.replace_files(_file_rows([copy]), [copy], np.full((1, DIM), np.nan, np.float32))
    with store.read() as reader:
        pending = reader.pending()
        first = {p.content_hash: p for p in pending}[copy.content_hash]
        assert first.chunks == 2 and reader.pending_count() == len(chunks) - 3 + 1
        last = max(r.id for r in reader.chunks_of_file("web/copy.js"))
    hashes = [p.content_hash for p in pending]
    by_hash = {c.content_hash: vectors[i] for i, c in enumerate(chunks)}
    matrix = np.vstack([by_hash[h] for h in hashes])
    with store.write() as writer:  # the copy's id is past the stretch: it keeps waiting
        assert writer.set_vectors(hashes, matrix, ids=(pending[0].first_id, pending[-1].first_id)) == len(pending)
    with store.read() as reader:
        assert [(p.content_hash, p.first_id) for p in reader.pending()] == [(copy.content_hash, last)]
    with store.write() as writer:
        assert writer.copy_vectors(["no-such-hash", chunks[0].content_hash]) == 0  # none of theirs waits
        assert writer.copy_vectors([copy.content_hash]) == 1
        assert writer.copy_vectors([copy.content_hash]) == 0
    with store.read() as reader:
        assert reader.pending_count() == 0 and reader.pending() == []
        got = reader.vectors([last])[last]
        assert np.allclose(got, by_hash[copy.content_hash], atol=1e-6)
