"""How SAI's rows become Qdrant points and back: ids, sparse lexeme vectors, payloads, filters.

Pure functions, no client calls (docs/design.md, "The Qdrant backend").

- A chunk's point id is its chunk_id (models.chunk_id: 16 hex digits) read as an integer and
  shifted right by one bit: the same chunk gets the same id on every machine, and the id fits a
  signed 64-bit integer (numpy int64, DuckDB BIGINT). It is also `ChunkRow.id` on this backend.
- A file's point id is made the same way from its key.
- The sparse vector "lexemes" holds, per term of the chunk's lexemes (sai/text/lexical.py; stop
  words dropped and Porter-stemmed as for the DuckDB file, store/terms.py), the BM25-saturated
  term frequency tf*(k1+1)/(tf + k1*(1-b+b*len/AVG_LEN)). Qdrant's IDF modifier multiplies in
  the inverse document frequency at query time, so a query of the distinct terms (value 1
  each) scores Okapi BM25 (k1 1.2, b 0.75). The length norm uses a fixed mean length instead
  of the collection's current one: a point's vector never depends on the other points, so
  copies and incremental runs write the same values everywhere.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import Any

from qdrant_client import models

from sai.errors import StoreError
from sai.models import ChunkRow, FileRow, NewChunk, chunk_id
from sai.store import terms

K1, B = 1.2, 0.75
AVG_LEN = 66.0  # terms per chunk: the mean (65.6) over the 20,000 stdlib chunks of benchmarks/backends.py
DENSE, SPARSE = "dense", "lexemes"
INDEXED_FIELDS = ("key", "language", "content_hash")  # payload indexes (keyword)


def point_id(chunk_hex: str) -> int:
    """The point id (and ChunkRow.id) of a chunk_id: 63 bits of it."""
    return int(chunk_hex, 16) >> 1


def chunk_point_id(chunk: NewChunk) -> int:
    return point_id(chunk_id(chunk.path, chunk.start_line, chunk.end_line, chunk.content_hash))


def file_point_id(key: str) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:16], 16) >> 1


@functools.lru_cache(maxsize=1 << 20)
def term_index(term: str) -> int:
    """A term's sparse dimension: 32 bits of a fixed hash, the same in every process."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")


def _term_counts(lexemes: str) -> Counter[int]:
    return Counter(term_index(term) for term in terms.terms(lexemes))


def document_vector(lexemes: str) -> models.SparseVector:
    """A chunk's lexemes as BM25-saturated term frequencies (see the module docstring)."""
    counts = _term_counts(lexemes)
    norm = K1 * (1 - B + B * sum(counts.values()) / AVG_LEN)
    indices = sorted(counts)
    values = [counts[i] * (K1 + 1) / (counts[i] + norm) for i in indices]
    return models.SparseVector(indices=indices, values=values)


def query_vector(lexemes: str) -> models.SparseVector:
    """A query's distinct terms, 1 each: the IDF modifier weighs them."""
    indices = sorted(set(_term_counts(lexemes)))
    return models.SparseVector(indices=indices, values=[1.0] * len(indices))


def chunk_payload(chunk: NewChunk) -> dict[str, object]:
    return {
        "key": chunk.path, "start_line": chunk.start_line, "end_line": chunk.end_line,
        "symbol": chunk.symbol, "kind": chunk.kind, "language": chunk.language,
        "content_hash": chunk.content_hash, "file_hash": chunk.file_hash, "text": chunk.text,
        "shape": base64.b64encode(chunk.shape).decode("ascii") if chunk.shape is not None else None,
        "no_duplicate": chunk.no_duplicate,
        "chunk_id": chunk_id(chunk.path, chunk.start_line, chunk.end_line, chunk.content_hash),
    }


Point = models.Record | models.ScoredPoint


def payload_of(point: Point) -> dict[str, Any]:
    """A point's payload (the client types it as optional: absent when not asked for)."""
    return point.payload or {}


def dense_of(point: Point) -> list[float]:
    """A point's dense vector, read with `with_vectors=[DENSE]`."""
    vector = point.vector
    if not isinstance(vector, dict):
        raise StoreError("the Qdrant collection answered a point without its named vector")
    return vector[DENSE]  # type: ignore[return-value]  # the dense vector is a list of floats


def chunk_row(point: Point, *, text: bool = True) -> ChunkRow:
    payload = payload_of(point)
    return ChunkRow(
        id=int(point.id), path=payload["key"], language=payload.get("language"),
        start_line=int(payload["start_line"]), end_line=int(payload["end_line"]),
        symbol=payload.get("symbol"), text=payload.get("text", "") if text else "",
        no_duplicate=bool(payload.get("no_duplicate")), content_hash=payload.get("content_hash", ""),
        kind=payload.get("kind"),
    )


def shape_of(point: Point) -> bytes | None:
    payload = payload_of(point)
    encoded = payload.get("shape")
    return None if encoded is None else base64.b64decode(encoded)


def file_payload(row: FileRow, indexed_at: str) -> dict[str, object]:
    return {"key": row.path, "size": row.size, "mtime_ns": row.mtime_ns, "file_hash": row.file_hash,
            "chunk_count": row.chunk_count, "indexed_at": indexed_at}


def file_row(point: Point) -> FileRow:
    payload = payload_of(point)
    return FileRow(path=payload["key"], size=int(payload["size"]), mtime_ns=int(payload["mtime_ns"]),
                   file_hash=payload["file_hash"], chunk_count=int(payload.get("chunk_count", 0)))


def match(field: str, value: bool | int | str) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchValue(value=value))


def match_any(field: str, values: Iterable[str]) -> models.FieldCondition:
    return models.FieldCondition(key=field, match=models.MatchAny(any=list(values)))


def scope_filter(
    language: str | None, keys: frozenset[str] | None, *, exclude: int | None = None
) -> models.Filter | None:
    """The server-side filter of a Scope: language match, keys as MatchAny, an excluded id."""
    must: list[models.Condition] = []
    if language is not None:
        must.append(match("language", language))
    if keys is not None:
        must.append(match_any("key", sorted(keys)))
    must_not: list[models.Condition] = [models.HasIdCondition(has_id=[exclude])] if exclude is not None else []
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def keys_filter(keys: Iterable[str]) -> models.Filter:
    return models.Filter(must=[match_any("key", keys)])
