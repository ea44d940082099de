"""find_similar: the stored chunks nearest a snippet or a stored chunk.

What it compares is decided here once, for every front end (similar_request): a snippet, or a
location (path and line), and the cosine threshold. Front ends pass their Spelling so that the
messages name their flags (`--code`), and the MCP tool's `prefer_code` lets a snippet override a
location as the original tool did.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sai.config import Config
from sai.errors import NotFoundError, StoreError, UsageError
from sai.models import Hit
from sai.project import Project
from sai.query.freshness import stale_keys
from sai.query.hits import Filters, best_first, hit_of
from sai.query.likeness import Target, candidates, chunk_signature
from sai.store import IndexReader


@dataclass(frozen=True)
class Spelling:
    """How a front end names find_similar's arguments in the messages that refuse them."""

    code: str = "code"
    location: str = "path+line"
    min_score: str = "min_score"


@dataclass(frozen=True)
class SimilarRequest:
    """What find_similar compares: `code`, or the chunk at `path` (a key) and `line`."""

    code: str | None
    path: str | None
    line: int | None
    min_score: float


def similar_request(
    config: Config, *, code: str | None = None, path: str | None = None, line: int | None = None,
    min_score: float | None = None, prefer_code: bool = False, spelling: Spelling = Spelling(),
) -> SimilarRequest:
    """The target and threshold, checked; the config's threshold when none is given."""
    threshold = config.similarity.find_similar_min_score if min_score is None else min_score
    check_threshold(threshold, name=spelling.min_score)
    if code is not None and prefer_code:
        path = line = None
    if code is not None:
        if path is not None or line is not None:
            raise UsageError(f"give either {spelling.code} or {spelling.location}, not both")
        if not code.strip():
            raise UsageError("code is empty; pass the snippet to compare")
    elif path is None or line is None:
        if path is not None or line is not None:
            raise UsageError("path and line go together; give both")
        raise UsageError("give code, or path and line of an indexed chunk")
    return SimilarRequest(code, path, line, threshold)


def check_threshold(min_score: float, *, name: str = "min_score") -> None:
    """A semantic score threshold lies in [-1, 1] (7 would answer nothing, as if nothing were
    similar); the command line asks before it loads the config, as `--min-score`."""
    if not -1.0 <= min_score <= 1.0:
        raise UsageError(f"{name} {min_score} is not a similarity score; give a value in [-1, 1]")


def find_similar(
    project: Project,
    *,
    code: str | None = None,
    path: str | None = None,
    line: int | None = None,
    limit: int = 8,
    min_score: float | None = None,
    language: str | None = None,
    path_glob: str | None = None,
    prefer_code: bool = False,
) -> list[Hit]:
    """Neighbours of a snippet, or of the innermost stored chunk at path:line (itself excluded;
    `path` is a key), among the chunks passing the language and glob filters."""
    asked = similar_request(project.config, code=code, path=path, line=line, min_score=min_score,
                            prefer_code=prefer_code)
    filters = Filters.of(language=language, path_glob=path_glob)
    kept = project.store.cheap_shapes  # else the shapes are a read of every chunk: read from the texts
    with project.store.read() as reader:
        meta = project.indexed_meta(reader)  # before the embedder: a missing index is the error
        scope = filters.scope(reader)
        if asked.code is not None:
            vector = project.embedder.embed_documents([asked.code])[0]
            project.check_meta(meta, vector_dim=int(vector.shape[0]))
            target = Target(vector, None, code=asked.code)
        else:
            target = _chunk_target(reader, str(asked.path), int(asked.line or 0), stored_shapes=kept)
        found = candidates(reader, target, scope=scope, stored_shapes=kept)
        score = dict(found.ranked(limit, min_score=asked.min_score))
        rows = reader.chunks(list(score))
        rows = sorted((replace(r, score=score[r.id]) for r in rows), key=lambda r: best_first(r.score, r))
        stored = reader.files([r.path for r in rows])
    stale = stale_keys(project.config.root, stored, [r.path for r in rows])
    return [hit_of(r, stale=r.path in stale) for r in rows]


def _chunk_target(reader: IndexReader, key: str, line: int, *, stored_shapes: bool = True) -> Target:
    found = reader.chunks_of_file(key, line=line)
    vector = reader.vectors([found[0].id]).get(found[0].id) if found else None
    if vector is None and found:
        raise StoreError(f"the chunk at {key}:{line} has no vector yet (an index run is embedding the "
                         "stored chunks); try again when `sai status` shows no pending vectors")
    if vector is None:
        raise NotFoundError(f"no indexed chunk at {key}:{line}")
    chunk = found[0]
    if stored_shapes:
        sigs, sizes = reader.shapes().of(np.array([chunk.id], dtype=np.int64))
        signature = sigs[0] if sizes[0] else None
    else:
        signature = chunk_signature(chunk)
    return Target(vector, signature, exclude=chunk.id,
                  place=(chunk.path, chunk.start_line, chunk.end_line))
