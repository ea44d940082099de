"""`sai copy`: an index moved from one backend to another without embedding anything.

Reads through the store contract (store/base.py): the files' rows, every chunk with its vector
and shape, the texts in batches; writes whole files per batch with `replace_files`, then
the meta. Lexemes are worked out again from each chunk's text (sai/text/lexical.py), as the index
run made them. An index already at the target is replaced. References are not copied (only the
DuckDB backend holds them): a copy into DuckDB records that it holds none, so the next `sai`
reads every file again for them (nothing embedded).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from sai.errors import StoreError, UsageError
from sai.models import SCHEMA_VERSION, ChunkRow, FileRow, IndexMeta, NewChunk
from sai.project import Project, chunks_part
from sai.store import open_store
from sai.text.lexical import lexemes

BATCH = 512  # chunks per write (whole files)
_NOT_COPIED = {"token", "created_at", "backend"}  # the target's own


@dataclass(frozen=True)
class CopyReport:
    files: int
    chunks: int
    source: str = ""  # the backends copied from and to, and where the copy now lives
    target: str = ""
    location: str = ""


def copy_to(project: Project, backend: str) -> CopyReport:
    """`sai copy --to`: the project's index copied to the other backend (opened and closed here)."""
    config = project.config
    if backend == config.backend:
        raise UsageError(f"the index already lives on backend {backend}; give --to with the other backend")
    target = open_store(config, backend=backend)  # a local Qdrant opens once
    try:
        report = copy_index(project.store, target, collection=config.collection)
    finally:
        target.close()
    return replace(report, source=config.backend, target=backend, location=target.location)


def copy_index(source: Any, target: Any, *, collection: str) -> CopyReport:
    """Copy the index of `source` into `target` (both stores of store/base.py)."""
    with source.read() as reader:
        if not reader.has_index():
            raise StoreError(f"no index '{collection}' at {source.location} to copy; run `sai` to build it first")
        pending = reader.pending_count()
        if pending:  # all_chunks() holds only chunks with a vector: the copy would lose the rest
            raise StoreError(f"{pending} chunk(s) of the index at {source.location} still wait for a vector; "
                             "run `sai` to finish them, then copy")
        meta = reader.meta()
        files = reader.files()
        rows, matrix, shapes = reader.all_chunks()
        with target.write() as writer:
            if writer.has_index():
                writer.drop()
            writer.create(_meta_for(meta, target.backend))
            for batch in _batches(rows):
                texts = {r.id: r.text for r in reader.chunks([rows[k].id for k in batch])}
                chunks = [_new_chunk(rows[k], texts.get(rows[k].id, ""), files, shapes[k]) for k in batch]
                keys = {rows[k].path for k in batch}
                writer.replace_files([files[key] for key in sorted(keys) if key in files], chunks, matrix[batch])
            held = {row.path for row in rows}
            writer.touch_files([row for key, row in files.items() if key not in held])  # files without chunks
            writer.set_meta({k: v for k, v in meta.items() if k not in _NOT_COPIED})
            if target.references and not source.references:  # the next run reads every file for them
                writer.set_meta({"chunking": without_references(meta.get("chunking", ""))})
    return CopyReport(files=len(files), chunks=len(rows))


def without_references(chunking: str) -> str:
    """A chunking signature saying its index holds no references (sai/project.py writes `refs=N`)."""
    return f"{chunks_part(chunking)}/refs=0"


def _meta_for(meta: dict[str, str], backend: str) -> IndexMeta:
    try:
        return IndexMeta(
            backend=backend, embedder=meta["embedder"], model=meta["model"], prefix_style=meta["prefix_style"],
            vector_dim=int(meta["vector_dim"]), chunker=meta["chunker"],
            chunker_version=int(meta["chunker_version"]),
            schema_version=int(meta.get("schema_version", SCHEMA_VERSION)), chunking=meta.get("chunking", ""),
        )
    except (KeyError, ValueError) as exc:
        raise StoreError(f"the index to copy has incomplete metadata ({exc}); "
                         "rebuild it with `sai --recreate`") from exc


def _batches(rows: list[ChunkRow]) -> Iterator[list[int]]:
    """Row positions in batches of about BATCH, never splitting a file (rows come in key order)."""
    batch: list[int] = []
    for k, row in enumerate(rows):
        if batch and len(batch) >= BATCH and rows[batch[-1]].path != row.path:
            yield batch
            batch = []
        batch.append(k)
    if batch:
        yield batch


def _new_chunk(row: ChunkRow, text: str, files: dict[str, FileRow], shape: bytes | None) -> NewChunk:
    held = files.get(row.path)
    return NewChunk(
        path=row.path, language=row.language, start_line=row.start_line, end_line=row.end_line,
        symbol=row.symbol, text=text, content_hash=row.content_hash, file_hash=held.file_hash if held else "",
        no_duplicate=row.no_duplicate, lexemes=lexemes(text, path=row.path, symbol=row.symbol), shape=shape,
        kind=row.kind,
    )
