"""What an index holds (`sai status`, sai_index_status)."""

from __future__ import annotations

from sai.models import FileRow, IndexStatus
from sai.project import Project
from sai.query.freshness import stale_keys


def status(project: Project) -> IndexStatus:
    """What the index holds, or what it would be built with when there is none yet."""
    config = project.config
    meta: dict[str, str] = {}
    chunks = 0
    indexed_at = None
    stored: dict[str, FileRow] = {}
    languages: dict[str, int] = {}
    pending = 0
    if project.store.exists:
        with project.store.read() as reader:
            meta = reader.meta()
            if reader.has_index():
                chunks, stored, languages = reader.chunk_count(), reader.files(), reader.language_counts()
                indexed_at = reader.last_indexed_at()
                pending = reader.pending_count()
    dim = meta.get("vector_dim")
    return IndexStatus(
        backend=meta.get("backend", config.backend),
        collection=config.collection,
        model=meta.get("model", config.model),
        vector_dim=int(dim) or None if dim else None,  # 0: no vector stored yet
        chunk_count=chunks,
        chunker=meta.get("chunker", config.chunker),
        embedder=meta.get("embedder", config.embedder),
        file_count=len(stored),
        indexed_at=indexed_at,
        stale_files=len(stale_keys(config.root, stored, stored)),
        languages=languages,
        pending_vectors=pending,
    )
