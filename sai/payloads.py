"""JSON shapes of results, shared by `--json` and the MCP tools (docs/output-schemas.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sai.models import Cluster, Hit, IndexStatus, RefreshReport

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
    return out


def hits_json(hits: list[Hit], *, include_text: bool = False) -> dict[str, Any]:
    return {"hits": [hit_json(h, include_text=include_text) for h in hits]}


def cluster_json(cluster: Cluster) -> dict[str, Any]:
    return {
        "size": cluster.size,
        "members": [
            {"path": m.path, "start_line": m.start_line, "end_line": m.end_line, "symbol": m.symbol}
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
