"""What an index holds (`sai status`, sai_index_status)."""

from __future__ import annotations

from sai.models import IndexStatus
from sai.project import Project
from sai.query.freshness import stale_keys
from sai.source import vendored
from sai.store import IndexSummary


def status(project: Project) -> IndexStatus:
    """What the index holds, or what it would be built with when there is none yet."""
    config = project.config
    summary = IndexSummary()
    if project.store.exists:
        with project.store.read() as reader:
            summary = reader.summary()
    meta, stored = summary.meta, summary.files
    dim = meta.get("vector_dim")
    return IndexStatus(
        backend=meta.get("backend", config.backend),
        collection=config.collection,
        model=meta.get("model", config.model),
        vector_dim=int(dim) or None if dim else None,  # 0: no vector stored yet
        chunk_count=summary.chunk_count,
        chunker=meta.get("chunker", config.chunker),
        embedder=meta.get("embedder", config.embedder),
        file_count=len(stored),
        indexed_at=summary.indexed_at,
        stale_files=len(stale_keys(config.root, stored, stored)),
        languages=summary.languages,
        pending_vectors=summary.pending,
        vendored_dirs=vendored.from_meta(meta),
        config_asks=config.config_asks,
    )
