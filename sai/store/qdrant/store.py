"""The Qdrant backend: one index on a Qdrant server or cluster (a team's), or in qdrant-client's
local mode (a directory, one process). Everything it sends is built in points.py, through the
client of client.py.

Per SAI collection NAME (docs/design.md, "The Qdrant backend"):
- NAME holds one point per chunk: a dense vector "dense" (cosine), a sparse vector "lexemes"
  (IDF modifier: BM25 on the server) and the chunk's payload; payload indexes on key, language
  and content_hash.
- NAME__files holds one point per indexed file (size, mtime, hash, chunk count), no vectors.
- NAME__meta holds the index metadata (point 0) and the writer lock (point 1), no vectors.

Qdrant has no transactions (the store is not `transactional`): a write session applies each verb
as it goes. Its order makes a killed run harmless: replace_files first deletes the files' rows
(the next run sees them as new and indexes them again), then upserts the new points (same chunk,
same id), then deletes the files' points not in the new set, then records the files. The
metadata's `token` changes when a session first touches chunks and again when it ends, so
readers reload their symbol tables.

Concurrency: a server serves many readers and one writer; writers exclude each other with a
lease on the lock point, renewed by a heartbeat; in local mode with an OS lock beside the
collections, so a killed writer frees the index at once (locks.py). Local mode is also
single-process: qdrant-client locks the directory, and a second process gets a one-line
StoreLockedError.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from qdrant_client import models

from sai.errors import StoreError, StoreLockedError
from sai.models import ChunkRow, FileRow, IndexMeta, NewChunk
from sai.store.base import IndexReader, IndexSummary, IndexWriter, Scope, Store
from sai.store.cache import TokenCache
from sai.store.dirs import make_index_dir
from sai.store.qdrant import points as qp
from sai.store.qdrant.client import Client
from sai.store.qdrant.locks import LocalLock, ServerLease
from sai.store.symbols import SymbolTable

META_ID = 0  # the metadata's point in NAME__meta (point 1 is the writer lock, qdrant_lock.py)
PAGE = 1024  # points per scroll or upsert request


class QdrantStore(Store):
    """One SAI collection on a Qdrant server (`url`) or in a local-mode directory (`path`)."""

    backend = "qdrant"  # capabilities: none (not transactional, every chunk with its vector, no
    # in-place upgrade, and --recreate drops the collections: Qdrant cannot rename one aside)

    def __init__(
        self, collection: str, *, url: str | None = None, api_key: str | None = None,
        path: Path | None = None, timeout_s: float = 10.0, prefer_grpc: bool = False,
        lock_timeout_s: float = 30.0,
    ) -> None:
        if (url is None) == (path is None):
            raise StoreError("the qdrant backend needs qdrant.url (a server) or qdrant.path (local mode); "
                             "set one of them, or QDRANT_URL")
        self.collection = collection
        self.files_name, self.meta_name = f"{collection}__files", f"{collection}__meta"
        self.location = url if url is not None else str(path)
        self.path = Path(path) if path is not None else None
        self.lock_timeout_s = lock_timeout_s
        self.client = Client(url=url, api_key=api_key, path=self.path, timeout_s=timeout_s,
                             prefer_grpc=prefer_grpc)
        self.derived = TokenCache()  # the symbol table, per token
        self._writing = threading.Lock()  # one writer per process

    @property
    def exists(self) -> bool:
        return bool(self._meta())

    def _meta(self) -> dict[str, str]:
        if self.path is not None and not self.path.is_dir():
            return {}  # local mode: do not create a directory just to look
        if not self.client.call("collection_exists", self.meta_name):
            return {}
        found = self.client.call("retrieve", self.meta_name, [META_ID], with_payload=True)
        return dict(found[0].payload.get("values", {})) if found else {}

    @contextlib.contextmanager
    def read(self) -> Iterator[IndexReader]:
        yield QdrantReader(self)

    @contextlib.contextmanager
    def write(self) -> Iterator[IndexWriter]:
        if not self._writing.acquire(timeout=self.lock_timeout_s):
            raise self._locked_error("another thread of this process")
        try:
            self.prepare()
            lock = self._writer_lock()
            with lock.held():
                if not self.client.call("collection_exists", self.meta_name):
                    self.client.call("create_collection", self.meta_name, vectors_config={})
                writer = QdrantWriter(self, lock)
                try:
                    yield writer
                finally:
                    writer.end()
        finally:
            self._writing.release()

    def _writer_lock(self) -> LocalLock | ServerLease:
        """Local mode: an OS lock beside the collections; a server: the lock point's lease."""
        if self.path is not None:
            return LocalLock(self.path, timeout_s=self.lock_timeout_s, locked=self._locked_error)
        return ServerLease(self.client, self.meta_name, timeout_s=self.lock_timeout_s, locked=self._locked_error)

    def _locked_error(self, holder: str) -> StoreLockedError:
        return StoreLockedError(
            f"the index '{self.collection}' at {self.location} is being written by {holder}; waited "
            f"{self.lock_timeout_s:g}s: wait for it to finish or raise lock_timeout_s"
        )

    def prepare(self) -> None:
        if self.path is None:
            return
        try:
            make_index_dir(self.path)
        except OSError as exc:
            raise StoreError(f"cannot create the Qdrant directory {self.path}: {exc.strerror}; "
                             "check permissions or set qdrant.path") from exc

    def recreate(self) -> None:
        """Drop the collections (Qdrant cannot rename one aside): the next run builds it anew."""
        with self.write() as writer:
            writer.drop()

    def close(self) -> None:
        self.client.close()


class QdrantReader(IndexReader):
    """Reads straight from the collections: Qdrant has no snapshots, so a reader sees each write
    of a concurrent writer as it lands (the files' rows last, so a half-written file reads as new)."""

    def __init__(self, store: QdrantStore) -> None:
        self.store = store
        self.client = store.client
        self.name = store.collection

    # -- scrolling
    def _scroll(
        self, collection: str, *, filter_: models.Filter | None = None,
        payload: bool | list[str] = True, vectors: bool | list[str] = False,
    ) -> Iterator[models.Record]:
        offset = None
        while True:
            points, offset = self.client.call(
                "scroll", collection, scroll_filter=filter_, limit=PAGE, offset=offset,
                with_payload=payload, with_vectors=vectors,
            )
            yield from points
            if offset is None:
                return

    def has_index(self) -> bool:
        return bool(self.meta()) and self.client.call("collection_exists", self.name)

    def meta(self) -> dict[str, str]:
        return self.store._meta()

    def files(self, keys: list[str] | None = None) -> dict[str, FileRow]:
        if keys is not None and not keys:
            return {}
        if not self.client.call("collection_exists", self.store.files_name):
            return {}
        filter_ = qp.keys_filter(keys) if keys is not None else None
        rows = (qp.file_row(p) for p in self._scroll(self.store.files_name, filter_=filter_))
        return {row.path: row for row in rows}

    def summary(self) -> IndexSummary:
        if not self.has_index():
            return IndexSummary(meta=self.meta())
        files: dict[str, FileRow] = {}
        stamps: list[str] = []
        if self.client.call("collection_exists", self.store.files_name):
            for point in self._scroll(self.store.files_name):
                payload = qp.payload_of(point)
                files[payload["key"]] = qp.file_row(point)
                stamps.append(payload["indexed_at"])
        return IndexSummary(meta=self.meta(), files=files, chunk_count=self.chunk_count(),
                            languages=self._language_counts(), indexed_at=max(stamps) if stamps else None)

    def chunk_count(self, keys: list[str] | None = None) -> int:
        if keys is not None and not keys:
            return 0
        if not self.client.call("collection_exists", self.name):
            return 0  # without an index, every verb answers as an empty index does
        filter_ = qp.keys_filter(keys) if keys is not None else None
        return int(self.client.call("count", self.name, count_filter=filter_, exact=True).count)

    def _language_counts(self) -> dict[str, int]:
        counts = Counter(qp.payload_of(p).get("language") for p in self._scroll(self.name, payload=["language"]))
        return {name: counts[name] for name in sorted(n for n in counts if n is not None)}

    def content_hashes(self) -> set[str]:
        return {qp.payload_of(p)["content_hash"] for p in self._scroll(self.name, payload=["content_hash"])}

    def vectors_by_hash(self, hashes: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), PAGE):
            wanted = models.Filter(must=[qp.match_any("content_hash", hashes[start:start + PAGE])])
            for p in self._scroll(self.name, filter_=wanted, payload=["content_hash"], vectors=[qp.DENSE]):
                out.setdefault(qp.payload_of(p)["content_hash"], np.asarray(qp.dense_of(p), dtype=np.float32))
        return out

    # -- search
    def nearest(
        self, vector: np.ndarray, k: int, *, scope: Scope | None = None, exclude: int | None = None
    ) -> list[tuple[int, float]]:
        scope = scope or Scope()
        if k <= 0 or (scope.keys is not None and not scope.keys):
            return []
        found = self.client.call(
            "query_points", self.name, query=np.asarray(vector, dtype=np.float32).tolist(), using=qp.DENSE,
            limit=k, query_filter=qp.scope_filter(scope.language, scope.keys, exclude=exclude),
            search_params=self.client.exact_params(), with_payload=False,
        ).points
        return _best_first((int(p.id), float(p.score)) for p in found)

    def lexical(self, lexemes: str, k: int, *, scope: Scope | None = None) -> list[tuple[int, float]]:
        scope = scope or Scope()
        query = qp.query_vector(lexemes)
        if k <= 0 or not query.indices or (scope.keys is not None and not scope.keys):
            return []
        filter_ = qp.scope_filter(scope.language, scope.keys)
        # statistics over the scope, as if the index held only it
        params = models.SearchParams(idf=models.IdfCorpusParams(corpus=filter_)) if filter_ else None
        found = self.client.call(
            "query_points", self.name, query=query, using=qp.SPARSE, limit=k, query_filter=filter_,
            search_params=params, with_payload=False,
        ).points
        return _best_first((int(p.id), float(p.score)) for p in found if p.score > 0)

    def _points(self, ids: list[int], *, payload: bool | list[str] = True, vectors: bool = False) -> list:
        if not ids:
            return []
        return self.client.call("retrieve", self.name, list(dict.fromkeys(int(i) for i in ids)),
                                with_payload=payload, with_vectors=[qp.DENSE] if vectors else False)

    def vectors(self, ids: list[int]) -> dict[int, np.ndarray]:
        return {int(p.id): np.asarray(qp.dense_of(p), dtype=np.float32)
                for p in self._points(ids, payload=False, vectors=True)}

    # -- chunks
    def chunks(self, ids: list[int], *, text: bool = True) -> list[ChunkRow]:
        fields = True if text else _NO_TEXT
        held = {int(p.id): qp.chunk_row(p, text=text) for p in self._points(ids, payload=fields)}
        return [held[int(i)] for i in ids if int(i) in held]

    def chunks_of_file(self, key: str, *, line: int | None = None) -> list[ChunkRow]:
        if line is None:
            rows = [qp.chunk_row(p) for p in self._scroll(self.name, filter_=qp.keys_filter([key]))]
            return sorted(rows, key=lambda r: (r.start_line, r.end_line, r.id))
        filter_ = models.Filter(must=[
            qp.match("key", key),
            models.FieldCondition(key="start_line", range=models.Range(lte=line)),
            models.FieldCondition(key="end_line", range=models.Range(gte=line)),
        ])
        rows = [qp.chunk_row(p) for p in self._scroll(self.name, filter_=filter_)]
        return sorted(rows, key=lambda r: (r.end_line - r.start_line, r.start_line, r.id))

    def all_chunks(self) -> tuple[list[ChunkRow], np.ndarray, list[bytes | None]]:
        held = [(qp.chunk_row(p, text=False), qp.dense_of(p), qp.shape_of(p))
                for p in self._scroll(self.name, payload=_NO_TEXT, vectors=[qp.DENSE])]
        if not held:
            return [], np.zeros((0, 0), dtype=np.float32), []
        held.sort(key=lambda h: (h[0].path, h[0].start_line, h[0].end_line, h[0].id))
        matrix = np.asarray([h[1] for h in held], dtype=np.float32)
        return [h[0] for h in held], matrix, [h[2] for h in held]

    def symbols(self) -> SymbolTable:
        return self.symbols_at(self.meta().get("token", ""))

    def symbols_at(self, token: str) -> SymbolTable:
        def build() -> SymbolTable:
            payloads = [(int(p.id), qp.payload_of(p)) for p in self._scroll(self.name, payload=_SYMBOL_FIELDS)]
            rows = [(i, d["key"], d.get("language"), int(d["start_line"]), int(d["end_line"]), d.get("symbol"),
                     d.get("kind"), d["content_hash"]) for i, d in payloads]
            return SymbolTable(token, sorted(rows))

        return self.store.derived.get(token, build, name="symbols") if token else build()


_NO_TEXT = ["key", "language", "start_line", "end_line", "symbol", "no_duplicate", "content_hash",
            "kind", "shape"]
_SYMBOL_FIELDS = ["key", "language", "start_line", "end_line", "symbol", "kind", "content_hash"]


def _best_first(found: Iterator[tuple[int, float]]) -> list[tuple[int, float]]:
    return sorted(found, key=lambda hit: (-hit[1], hit[0]))


def _now() -> str:
    return datetime.now(UTC).isoformat()


class QdrantWriter(QdrantReader, IndexWriter):
    """A write session: each verb is applied when called (no transaction, see the module doc)."""

    def __init__(self, store: QdrantStore, lock: LocalLock | ServerLease) -> None:
        super().__init__(store)
        self.lock = lock
        self.dirty = False  # chunks changed: a new token at the end

    def _changing(self) -> None:
        """Before each change of chunks: the lease still ours; before the first, a new token
        (readers drop their tables)."""
        if isinstance(self.lock, ServerLease):
            self.lock.check()
        if not self.dirty and self.has_index():
            self.set_meta({"token": uuid.uuid4().hex})
        self.dirty = True

    def end(self) -> None:
        """The session's close: a last new token when it changed chunks."""
        if self.dirty and self.has_index():
            self.set_meta({"token": uuid.uuid4().hex})
        self.dirty = False

    def create(self, meta: IndexMeta) -> None:
        dim = int(meta.vector_dim)
        self._drop_collections()
        self.client.call(
            "create_collection", self.name,
            vectors_config={qp.DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={qp.SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )
        for field in qp.INDEXED_FIELDS:
            self.client.index_field(self.name, field)
        self.client.call("create_collection", self.store.files_name, vectors_config={})
        self.client.index_field(self.store.files_name, "key")
        values = {k: str(v) for k, v in meta.__dict__.items()}
        self.set_meta(values | {"created_at": _now(), "token": uuid.uuid4().hex})

    def _drop_collections(self) -> None:
        for name in (self.name, self.store.files_name):
            if self.client.call("collection_exists", name):
                self.client.call("delete_collection", name)

    def drop(self) -> None:
        self._drop_collections()
        self.client.call("delete", self.store.meta_name, points_selector=models.PointIdsList(points=[META_ID]))
        self.store.derived.clear()
        self.dirty = False

    def set_meta(self, values: dict[str, str]) -> None:
        merged = self.meta() | {k: str(v) for k, v in values.items()}
        point = models.PointStruct(id=META_ID, vector={}, payload={"values": merged})
        self.client.call("upsert", self.store.meta_name, [point])

    def chunk_hashes(self, keys: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if not keys:
            return out
        for p in self._scroll(self.name, filter_=qp.keys_filter(keys), payload=["key", "content_hash"]):
            out.setdefault(qp.payload_of(p)["key"], []).append(qp.payload_of(p)["content_hash"])
        return out

    def replace_files(self, files: list[FileRow], chunks: list[NewChunk], vectors: np.ndarray) -> None:
        if not files and not chunks:
            return
        self._changing()
        keys = sorted({f.path for f in files} | {c.path for c in chunks})
        self._delete(self.store.files_name, qp.keys_filter(keys))  # a killed run redoes these files
        ids = [qp.chunk_point_id(c) for c in chunks]
        for start in range(0, len(chunks), PAGE):
            points = [_chunk_point(i, c, v) for i, c, v in zip(ids[start:start + PAGE], chunks[start:start + PAGE],
                                                              vectors[start:start + PAGE], strict=True)]
            self.client.call("upsert", self.name, points)
        kept: list[models.ExtendedPointId] = list(ids)
        stale = models.Filter(must=[qp.match_any("key", keys)],
                              must_not=[models.HasIdCondition(has_id=kept)] if kept else None)
        self._delete(self.name, stale)
        self.touch_files(files)

    def touch_files(self, files: list[FileRow]) -> None:
        stamp = _now()
        for start in range(0, len(files), PAGE):
            points = [models.PointStruct(id=qp.file_point_id(f.path), vector={}, payload=qp.file_payload(f, stamp))
                      for f in files[start:start + PAGE]]
            self.client.call("upsert", self.store.files_name, points)

    def remove_files(self, keys: list[str]) -> int:
        if not keys:
            return 0
        removed = self.chunk_count(keys)
        if removed:
            self._changing()
        self._delete(self.store.files_name, qp.keys_filter(keys))
        self._delete(self.name, qp.keys_filter(keys))
        return removed

    def _delete(self, collection: str, filter_: models.Filter) -> None:
        self.client.call("delete", collection, points_selector=models.FilterSelector(filter=filter_))


def _chunk_point(point: int, chunk: NewChunk, vector: np.ndarray) -> models.PointStruct:
    dense = np.asarray(vector, dtype=np.float32).tolist()
    return models.PointStruct(id=point, vector={qp.DENSE: dense, qp.SPARSE: qp.document_vector(chunk.lexemes)},
                              payload=qp.chunk_payload(chunk))


__all__ = ["QdrantStore", "QdrantReader", "QdrantWriter"]
