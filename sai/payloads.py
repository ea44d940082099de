"""JSON shapes of results, shared by `--json` and the MCP tools (docs/output-schemas.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sai.models import ChunkContext, Cluster, Definition, Explain, Hit, IndexStatus, RefreshReport, StoredChunk

if TYPE_CHECKING:
    from sai.watch import Batch, BatchFailed

SNIPPET_LINES = 8
SNIPPET_BYTES = 800


def snippet(text: str, *, full: bool = False) -> str:
    """The first 8 lines, cut at a character boundary <= 800 bytes with '…' when longer."""
    if full:
        return text
    short = "\n".join(text.split("\n")[:SNIPPET_LINES])
    data = short.encode("utf-8")
    if len(data) <= SNIPPET_BYTES:
        return short
    return data[:SNIPPET_BYTES].decode("utf-8", errors="ignore") + "…"


def hit_json(hit: Hit, *, include_text: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "symbol": hit.symbol,
        "score": round(hit.score, 4),
        "snippet": snippet(hit.text, full=include_text),
        "language": hit.language,
        "stale": hit.stale,
    }
    if hit.rank is not None:
        out["rank"] = hit.rank
    if hit.score_kind != "cosine":
        out["score_kind"] = hit.score_kind
    out["chunk_id"] = hit.chunk_id
    if hit.explain is not None:
        out["explain"] = explain_json(hit.explain)
    if hit.chunks is not None:
        out["chunks"] = [{"start_line": c.start_line, "end_line": c.end_line, "symbol": c.symbol,
                          "chunk_id": c.chunk_id} for c in hit.chunks]
    return out


def explain_json(explain: Explain) -> dict[str, Any]:
    """Why a hit ranked where it did; fused parts keep 6 decimals (ties are that close)."""
    signals = explain.signals
    return {
        "semantic_rank": explain.semantic_rank,
        "cosine": _rounded(explain.cosine, 4),
        "lexical_rank": explain.lexical_rank,
        "bm25": _rounded(explain.bm25, 4),
        "rrf": _rounded(explain.rrf, 6),
        "signals": None if signals is None else {
            "name_match": round(signals.name_match, 6),
            "definition": round(signals.definition, 6),
            "path_match": round(signals.path_match, 6),
            "test_penalty": signals.test_penalty,
            "file_support": round(signals.file_support, 6),
            "repeat": signals.repeat,
            "kind_factor": signals.kind_factor,
        },
        "fused": _rounded(explain.fused, 6),
    }


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def hits_json(hits: list[Hit], *, include_text: bool = False) -> dict[str, Any]:
    return {"hits": [hit_json(h, include_text=include_text) for h in hits]}


def cluster_json(cluster: Cluster) -> dict[str, Any]:
    return {
        "size": cluster.size,
        "members": [
            {"path": m.path, "start_line": m.start_line, "end_line": m.end_line, "symbol": m.symbol,
             "chunk_id": m.chunk_id}
            for m in cluster.members
        ],
        "min_sim": round(cluster.min_sim, 4),
        "max_sim": round(cluster.max_sim, 4),
    }


def duplicates_json(
    clusters: list[Cluster], *, min_score: float, min_cluster_size: int, top_k: int, seeded: bool,
    metric: str = "duplicate",
) -> dict[str, Any]:
    return {
        "min_score": min_score,
        "min_cluster_size": min_cluster_size,
        "top_k": top_k,
        "seeded": seeded,
        "count": len(clusters),
        "clusters": [cluster_json(c) for c in clusters],
        "metric": metric,  # what min_score, min_sim and max_sim are: a duplicate score or a cosine
    }


def status_json(status: IndexStatus) -> dict[str, Any]:
    out: dict[str, Any] = {
        "backend": status.backend,
        "collection": status.collection,
        "model": status.model,
        "vector_dim": status.vector_dim,
        "chunk_count": status.chunk_count,
        "chunker": status.chunker,
        "embedder": status.embedder,
        "file_count": status.file_count,
        "indexed_at": status.indexed_at,
    }
    if status.stale_files is not None:
        out["stale_files"] = status.stale_files
    out["languages"] = dict(status.languages)  # the values a language filter takes (or extensions)
    return out


def refresh_json(report: RefreshReport, *, note_when_empty: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "refreshed": [{"path": r.path, "chunks": r.chunks} for r in report.refreshed],
        "removed": [r.path for r in report.removed],
    }
    if report.not_found:
        out["not_found"] = list(report.not_found)
    if note_when_empty and not report.refreshed and not report.removed and not report.not_found:
        out["note"] = "no changed files"
    return out


def watch_json(batch: Batch) -> dict[str, Any]:
    """One `sai watch --json` line for a handled batch."""
    return {
        "at": batch.at, "changes": batch.changes, "full_run": batch.full_run,
        "refreshed": [{"path": r.path, "chunks": r.chunks} for r in batch.refreshed],
        "removed": list(batch.removed),
    }


def watch_failure_json(failed: BatchFailed) -> dict[str, Any]:
    """One `sai watch --json` line for a batch that failed (its files are tried again later)."""
    return {"at": failed.at, "changes": failed.changes, "error": str(failed.error)}


def stored_chunk_json(chunk: StoredChunk) -> dict[str, Any]:
    return {
        "path": chunk.path, "start_line": chunk.start_line, "end_line": chunk.end_line,
        "symbol": chunk.symbol, "kind": chunk.kind, "language": chunk.language,
        "chunk_id": chunk.chunk_id, "text": chunk.text,
    }


def chunk_context_json(context: ChunkContext) -> dict[str, Any]:
    """sai_read_chunk / `sai read --json`: the chunk, its neighbours and its enclosing unit."""
    return {
        "chunk": stored_chunk_json(context.chunk) | {"stale": context.stale},
        "before": [stored_chunk_json(c) for c in context.before],
        "after": [stored_chunk_json(c) for c in context.after],
        "enclosing": None if context.enclosing is None else stored_chunk_json(context.enclosing),
    }


def definitions_json(definitions: list[Definition]) -> dict[str, Any]:
    """sai_find_symbol / `sai symbol --json`."""
    return {"definitions": [
        {"symbol": d.symbol, "kind": d.kind, "path": d.path, "start_line": d.start_line,
         "end_line": d.end_line, "language": d.language, "chunk_id": d.chunk_id, "match": d.match}
        for d in definitions
    ]}
