"""What `similar` ranks by: how alike two chunks are in what they do, whatever they are called.

A small model reads names first: a copy renamed by someone else scores a low cosine against its
original (median 0.5 on benchmarks/semantic_clones.py's rewrites, where unrelated code of the
same set scores up to 0.8). So `similar` scores a candidate by the semantic score
(sai/text/shape.py semantic_score): the cosine of the two vectors, and the shape
similarity of the two chunks (sai/text/shape.py: their token streams with every name blanked,
which no renaming changes) weighted SEMANTIC_SHAPE, over 1 + SEMANTIC_SHAPE. A chunk too small
for a shape is scored by its cosine alone.

Candidates are the target's CANDIDATES nearest chunks by cosine and every chunk whose shape is
at least SHAPE_ALIKE like the target's (a rewrite the model misses). A chunk whose lines hold,
or lie inside, the target's or a better candidate's in the same file takes no place of its own:
a method's class is not "similar code" to it, and a partner's class and method are one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sai.models import ChunkRow
from sai.store import IndexReader, Scope
from sai.text import shape

CANDIDATES = 100  # nearest chunks by cosine that are scored whole
SHAPE_ALIKE = 0.5  # shape similarity from which a chunk is a candidate whatever its cosine

Place = tuple[str, int, int]  # key, start line, end line


@dataclass(frozen=True)
class Target:
    """What candidates are compared with: a vector, a shape, and the stored chunk itself."""

    vector: np.ndarray
    signature: np.ndarray | None  # shape.SIGNATURE_SIZE minima, or None: no shape (or a snippet)
    code: str | None = None  # a snippet: its shape is read in each candidate's language
    exclude: int | None = None  # the stored chunk's id
    place: Place | None = None  # its key and lines: chunks nested with it are left out


@dataclass(frozen=True)
class Candidates:
    """Chunks that may be like a target: their ids, scores, cosines and places (row-aligned)."""

    ids: np.ndarray
    score: np.ndarray
    cosine: np.ndarray
    places: list[Place]

    def ranked(self, limit: int, *, min_score: float) -> list[tuple[int, float]]:
        """The `limit` best with score >= min_score, (id, score), best first (ties by id); one
        nested in a better one's lines (or holding them) in the same file left out."""
        chosen: list[int] = []
        for k in np.lexsort((self.ids, -self.score)).tolist():
            if len(chosen) == limit or self.score[k] < min_score:
                break
            if not any(_nested(self.places[k], self.places[c]) for c in chosen):
                chosen.append(k)
        return [(int(self.ids[k]), float(self.score[k])) for k in chosen]


def candidates(
    reader: IndexReader, target: Target, *, scope: Scope | None = None, stored_shapes: bool = True
) -> Candidates:
    """The target's candidates (the module doc), scored. Without `stored_shapes` (a store whose
    shapes are a read of every chunk: Qdrant) the candidates are the nearest by cosine alone and
    their shapes are read from their texts."""
    cosine = dict(reader.nearest(target.vector, CANDIDATES, scope=scope, exclude=target.exclude))
    if target.signature is not None and target.code is None and stored_shapes:
        alike, _ = reader.shapes().alike(target.signature, SHAPE_ALIKE)
        cosine.update({i: np.nan for i in alike.tolist() if i != target.exclude and i not in cosine})
    rows = [r for r in reader.chunks(sorted(cosine), text=not stored_shapes)
            if (scope is None or scope.admits(r.language, r.path))
            and not (target.place is not None and _nested(target.place, (r.path, r.start_line, r.end_line)))]
    missing = [r.id for r in rows if np.isnan(cosine[r.id])]
    if missing:
        cosine.update({i: float(v @ target.vector) for i, v in reader.vectors(missing).items()})
    rows = [r for r in rows if not np.isnan(cosine[r.id])]
    ids = np.array([r.id for r in rows], dtype=np.int64)
    cos = np.array([cosine[r.id] for r in rows], dtype=np.float32)
    similarity = cos.copy()  # a chunk without a shape, or a target without one: its cosine alone
    if len(ids) and (target.signature is not None or target.code is not None):
        sigs, sizes = reader.shapes().of(ids) if stored_shapes else _text_shapes(rows)
        own = [_signature(target, r.language) for r in rows]
        for k in np.flatnonzero(sizes > 0).tolist():
            if own[k] is not None:
                similarity[k] = (sigs[k] == own[k]).mean()
    places = [(r.path, r.start_line, r.end_line) for r in rows]
    return Candidates(ids, shape.semantic_score(cos, similarity), cos, places)


def _text_shapes(rows: list[ChunkRow]) -> tuple[np.ndarray, np.ndarray]:
    """The rows' shape signatures and element counts read from their texts."""
    sigs, sizes, _ = shape.signatures([_stored_shape(r) for r in rows])
    return sigs, sizes


def chunk_signature(row: ChunkRow) -> np.ndarray | None:
    """A stored chunk's shape read from its text."""
    return signature_of(_stored_shape(row))


def _stored_shape(row: ChunkRow) -> bytes:
    """What the index stores as a chunk's shape (sai/indexing/prepare.py), from its text."""
    return shape.signature(row.text, row.language, kind=row.kind)


def _signature(target: Target, language: str | None) -> np.ndarray | None:
    """The target's shape; a snippet's as if written in this language (its keywords, comments)."""
    return target.signature if target.code is None else _snippet_signature(target.code, language)


@lru_cache(maxsize=64)
def _snippet_signature(code: str, language: str | None) -> np.ndarray | None:
    return signature_of(shape.signature(code, language))


def _nested(a: Place, b: Place) -> bool:
    return a[0] == b[0] and ((a[1] <= b[1] and b[2] <= a[2]) or (b[1] <= a[1] and a[2] <= b[2]))


def signature_of(blob: bytes) -> np.ndarray | None:
    """A shape signature's minima (shape.signature's bytes; None: no shape)."""
    sigs, _, known = shape.signatures([blob])
    return sigs[0] if known[0] else None
