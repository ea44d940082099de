"""The builders of the JSON results, shared by `--json` and the MCP tools
(docs/output-schemas.md); each returns its TypedDict of shapes.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sai.models import (
    ChunkContext,
    Cluster,
    ClusterMember,
    Definition,
    Explain,
    Hit,
    IndexReport,
    IndexStatus,
    RefreshReport,
    Signals,
    StoredChunk,
)
from sai.output.budget import (
    CHUNKS,
    CLUSTERS,
    DEFINITIONS,
    HITS,
    Answer,
    Budget,
    Cut,
    Places,
    context_places,
    fitted,
    head_lines,
    kept_context,
    note,
)
from sai.output.shapes import (
    ChunkOut,
    ClusterOut,
    ConfigAsksPart,
    CopyOut,
    DefinitionOut,
    DryRunOut,
    DuplicatesOut,
    ExcludedOut,
    ExplainOut,
    FileChunkOut,
    FlushOut,
    HitOut,
    HitRankPart,
    HitsOut,
    IndexCountsOut,
    IndexRunOut,
    InitOut,
    MemberOut,
    ReadChunkOut,
    RefreshedOut,
    RefreshOut,
    ServerStatusOut,
    SetupOut,
    SetupRunOut,
    SignalsOut,
    StaleFilesPart,
    StatusOut,
    SymbolsOut,
    TruncatedOut,
    WatchBatchOut,
    WatchFailureOut,
)
from sai.query.ranking import SIGNALS

if TYPE_CHECKING:
    from sai.duplicates.clusters import DuplicateReport
    from sai.indexing.copy import CopyReport
    from sai.indexing.watch import Batch, BatchFailed
    from sai.source.files import WalkResult

SNIPPET_LINES = 8
SNIPPET_BYTES = 800


def json_text(payload: Mapping[str, Any]) -> str:
    """A payload as the one line of JSON `--json` prints and an MCP tool's text content holds."""
    return json.dumps(payload, ensure_ascii=False)


def json_size(payload: Mapping[str, Any]) -> int:
    return len(json_text(payload))


# ---------------------------------------------------------------- the builders


def snippet(text: str, *, full: bool = False, head: int | None = None) -> str:
    """The first 8 lines (`head` if fewer), cut at a character boundary <= 800 bytes with '…'
    when longer; with `full`, the whole text (its first `head` lines)."""
    if full:
        return head_lines(text, head)
    short = head_lines("\n".join(text.split("\n")[:SNIPPET_LINES]), head)
    data = short.encode("utf-8")
    if len(data) <= SNIPPET_BYTES:
        return short
    return data[:SNIPPET_BYTES].decode("utf-8", errors="ignore") + "…"


def truncated_json(cut: Cut, *, count: int, shortened: int, places: Places, budget: Budget) -> TruncatedOut | None:
    """What `cut` left out of `count` places, or None when it left out nothing."""
    hint = note(cut, count=count, shortened=shortened, places=places, budget=budget)
    if not hint:
        return None
    out: TruncatedOut = {"omitted": count - cut.keep, "shortened": shortened, "max_tokens": budget.max_tokens,
                         "hint": hint}
    if shortened:
        out["head"] = cut.head or 0
    if cut.over:
        out["over_budget"] = True
    return out


def hit_json(hit: Hit, *, include_text: bool = False, head: int | None = None) -> HitOut:
    ranked: HitRankPart = {}
    if hit.rank is not None:
        ranked["rank"] = hit.rank
    if hit.score_kind != "cosine":
        ranked["score_kind"] = hit.score_kind
    out: HitOut = {
        "path": hit.path, "start_line": hit.start_line, "end_line": hit.end_line, "symbol": hit.symbol,
        "score": round(hit.score, 4), "snippet": snippet(hit.text, full=include_text, head=head),
        "language": hit.language, "stale": hit.stale, **ranked, "chunk_id": hit.chunk_id,
    }
    if hit.explain is not None:
        out["explain"] = explain_json(hit.explain)
    if hit.chunks is not None:
        out["chunks"] = [FileChunkOut(start_line=c.start_line, end_line=c.end_line, symbol=c.symbol,
                                      chunk_id=c.chunk_id) for c in hit.chunks]
    if hit.copies is not None:
        out["copies"] = [member_json(c) for c in hit.copies]
    return out


def explain_json(explain: Explain) -> ExplainOut:
    """Why a hit ranked where it did; fused parts keep 6 decimals (ties are that close)."""
    signals = explain.signals
    return ExplainOut({
        "semantic_rank": explain.semantic_rank,
        "cosine": _rounded(explain.cosine, 4),
        "lexical_rank": explain.lexical_rank,
        "bm25": _rounded(explain.bm25, 4),
        "rrf": _rounded(explain.rrf, 6),
        "signals": None if signals is None else _signals_json(signals),
        "fused": _rounded(explain.fused, 6),
        "pending_vector": explain.pending_vector,
        "model": explain.model,
    })


def _signals_json(signals: Signals) -> SignalsOut:
    """What a signal adds keeps 6 decimals; a factor shows as it is."""
    additive = {s.name: s.additive for s in SIGNALS}
    return SignalsOut({name: round(value, 6) if additive[name] else value for name, value in signals.values})


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def hits_json(
    hits: list[Hit], *, include_text: bool = False, cut: Cut | None = None, budget: Budget | None = None
) -> HitsOut:
    """The hits; with a cut, its first places with their snippets cut, and what it left out."""
    if cut is None or budget is None:
        return HitsOut(hits=[hit_json(h, include_text=include_text) for h in hits])
    shown = hits[:cut.keep]
    out = HitsOut(hits=[hit_json(h, include_text=include_text, head=cut.head) for h in shown])
    shortened = sum(snippet(h.text, full=include_text, head=cut.head) != snippet(h.text, full=include_text)
                    for h in shown)
    truncated = truncated_json(cut, count=len(hits), shortened=shortened, places=HITS, budget=budget)
    if truncated is not None:
        out["truncated"] = truncated
    return out


def fitted_hits_json(hits: list[Hit], *, budget: Budget, include_text: bool = False) -> HitsOut:
    """The hits that fit the budget, best first, snippets shortened before hits are left out."""
    return fit_hits(hits, lambda cut: hits_json(hits, include_text=include_text, cut=cut, budget=budget),
                    size=json_size, budget=budget, include_text=include_text)


def fit_hits(hits: list[Hit], render: Callable[[Cut], Answer], *, size: Callable[[Answer], int], budget: Budget,
             include_text: bool = False) -> Answer:
    """`render` (JSON or text) of the hits that fit the budget: more hits before longer snippets."""
    return fitted(len(hits), render, size=size, max_tokens=budget.max_tokens,
                  longest=snippet_lines(hits, full=include_text))


def snippet_lines(hits: list[Hit], *, full: bool = False) -> int:
    """The most lines any of the hits' snippets has."""
    return max((snippet(h.text, full=full).count("\n") + 1 for h in hits), default=0)


def member_json(member: ClusterMember) -> MemberOut:
    return MemberOut(path=member.path, start_line=member.start_line, end_line=member.end_line,
                     symbol=member.symbol, chunk_id=member.chunk_id)


def cluster_json(cluster: Cluster, *, head: int | None = None) -> ClusterOut:
    """A cluster; with `head`, its first `head` members only (`size` counts them all)."""
    return ClusterOut(
        size=cluster.size,
        members=[member_json(m) for m in cluster.members[:head]],
        min_sim=round(cluster.min_sim, 4),
        max_sim=round(cluster.max_sim, 4),
    )


def duplicates_json(report: DuplicateReport, *, cut: Cut | None = None, budget: Budget | None = None) -> DuplicatesOut:
    """The clusters; with a cut, the first ones (the first with its first members), and what it
    left out (`count` counts the clusters listed)."""
    params = report.params
    shown = report.clusters if cut is None else report.clusters[:cut.keep]
    head = None if cut is None else cut.head
    out = DuplicatesOut(
        min_score=params.min_score,
        min_cluster_size=params.min_cluster_size,
        top_k=params.top_k,
        seeded=report.seeded,
        count=len(shown),
        clusters=[cluster_json(c, head=head) for c in shown],
        metric=params.metric,  # what min_score, min_sim and max_sim are: a duplicate score or a cosine
    )
    if cut is not None and budget is not None:
        shortened = sum(head is not None and c.size > head for c in shown)
        truncated = truncated_json(cut, count=len(report.clusters), shortened=shortened, places=CLUSTERS,
                                   budget=budget)
        if truncated is not None:
            out["truncated"] = truncated
    return out


def fitted_duplicates_json(report: DuplicateReport, *, budget: Budget) -> DuplicatesOut:
    return fit_clusters(report.clusters, lambda cut: duplicates_json(report, cut=cut, budget=budget),
                        size=json_size, budget=budget)


def fit_clusters(clusters: list[Cluster], render: Callable[[Cut], Answer], *, size: Callable[[Answer], int],
                 budget: Budget) -> Answer:
    """`render` of the largest clusters that fit the budget, whole; the first one's members cut
    only when it alone is over."""
    return fitted(len(clusters), render, size=size, max_tokens=budget.max_tokens,
                  longest=max((c.size for c in clusters), default=0), places_first=False)


def status_json(status: IndexStatus) -> StatusOut:
    stale: StaleFilesPart = {} if status.stale_files is None else {"stale_files": status.stale_files}
    return {
        "backend": status.backend, "collection": status.collection, "model": status.model,
        "vector_dim": status.vector_dim, "chunk_count": status.chunk_count, "chunker": status.chunker,
        "embedder": status.embedder, "file_count": status.file_count, "indexed_at": status.indexed_at,
        **stale,
        "languages": dict(status.languages),  # the values a language filter takes (or extensions)
        "pending_vectors": status.pending_vectors,
        "vendored_dirs": list(status.vendored_dirs),
        **_config_asks(status),
    }


def _config_asks(status: IndexStatus) -> ConfigAsksPart:
    if status.config_asks is None:
        return {}
    embedder, model = status.config_asks
    return {"config_asks": {"embedder": embedder, "model": model}}


def server_status_json(
    status: IndexStatus, *, watching: bool, last_refresh_at: str | None, indexing: bool = False
) -> ServerStatusOut:
    """sai_index_status: the status, the server's --watch state and its own index build."""
    return {**status_json(status), "watching": watching, "last_refresh_at": last_refresh_at, "indexing": indexing}


def index_json(report: IndexReport) -> IndexCountsOut:
    """An index run's counts (`sai --json`, docs/output-schemas.md "CLI-only JSON")."""
    return IndexCountsOut(chunks=report.chunks, files=report.files, skipped=report.skipped,
                          embedded=report.embedded, unchanged=report.unchanged, removed=report.removed)


def index_run_json(report: IndexReport, *, collection: str) -> IndexRunOut:
    """`sai --json` without --query: the run's counts and the collection."""
    return IndexRunOut(indexed=index_json(report), collection=collection)


def dry_run_json(walk: WalkResult, *, root: str, collection: str) -> DryRunOut:
    """`sai --dry-run --json`: the keys a run would index, those it leaves out and why."""
    return DryRunOut(
        root=root, collection=collection, would_index=[s.key for s in walk.included],
        excluded=[ExcludedOut(path=key, reason=reason) for key, reason in walk.excluded],
        pruned_dirs=list(walk.pruned_dirs), vendored_dirs=list(walk.vendored),
    )


def flush_json(collection: str, *, deleted: bool) -> FlushOut:
    return FlushOut(collection=collection, deleted=deleted)


def copy_json(report: CopyReport, *, collection: str) -> CopyOut:
    """`sai copy --json`: where the index went (the location: a file, a directory or a URL)."""
    return CopyOut({"collection": collection, "from": report.source, "to": report.target,
                    "location": report.location, "files": report.files, "chunks": report.chunks})


def init_json(wrote: str) -> InitOut:
    return InitOut(wrote=wrote)


def refresh_json(report: RefreshReport, *, note_when_empty: bool = False) -> RefreshOut:
    out = RefreshOut(
        refreshed=[RefreshedOut(path=r.path, chunks=r.chunks or 0) for r in report.refreshed],
        removed=[r.path for r in report.removed],
    )
    if report.not_found:
        out["not_found"] = list(report.not_found)
    if note_when_empty and not report.refreshed and not report.removed and not report.not_found:
        out["note"] = "no changed files"
    return out


def watch_json(batch: Batch) -> WatchBatchOut:
    """One `sai watch --json` line for a handled batch."""
    return WatchBatchOut(
        at=batch.at, changes=batch.changes, full_run=batch.full_run,
        refreshed=[RefreshedOut(path=r.path, chunks=r.chunks or 0) for r in batch.refreshed],
        removed=list(batch.removed),
    )


def watch_failure_json(failed: BatchFailed) -> WatchFailureOut:
    """One `sai watch --json` line for a batch that failed (its files are tried again later)."""
    return WatchFailureOut(at=failed.at, changes=failed.changes, error=str(failed.error))


def stored_chunk_json(chunk: StoredChunk, *, head: int | None = None) -> ChunkOut:
    return ChunkOut(
        path=chunk.path, start_line=chunk.start_line, end_line=chunk.end_line,
        symbol=chunk.symbol, kind=chunk.kind, language=chunk.language,
        chunk_id=chunk.chunk_id, text=head_lines(chunk.text, head),
    )


def chunk_context_json(context: ChunkContext, *, cut: Cut | None = None, budget: Budget | None = None) -> ReadChunkOut:
    """sai_read_chunk / `sai read --json`: the chunk, its neighbours and its enclosing unit; with a
    cut, the nearest context chunks only (the chunk's text cut when it alone is over)."""
    shown = context if cut is None else kept_context(context, cut.keep)
    head = None if cut is None else cut.head
    out = ReadChunkOut(
        chunk={**stored_chunk_json(shown.chunk, head=head), "stale": shown.stale},
        before=[stored_chunk_json(c) for c in shown.before],
        after=[stored_chunk_json(c) for c in shown.after],
        enclosing=None if shown.enclosing is None else stored_chunk_json(shown.enclosing),
    )
    if cut is not None and budget is not None:
        shortened = int(head_lines(context.chunk.text, head) != context.chunk.text)
        truncated = truncated_json(cut, count=context_places(context), shortened=shortened, places=CHUNKS,
                                   budget=budget)
        if truncated is not None:
            out["truncated"] = truncated
    return out


def fitted_chunk_context_json(context: ChunkContext, *, budget: Budget) -> ReadChunkOut:
    return fit_context(context, lambda cut: chunk_context_json(context, cut=cut, budget=budget),
                       size=json_size, budget=budget)


def fit_context(context: ChunkContext, render: Callable[[Cut], Answer], *, size: Callable[[Answer], int],
                budget: Budget) -> Answer:
    """`render` of the chunk and the nearest context chunks that fit the budget, whole; the
    chunk's own text cut only when it alone is over."""
    return fitted(context_places(context), render, size=size, max_tokens=budget.max_tokens,
                  longest=context.chunk.text.count("\n") + 1, places_first=False)


def definitions_json(
    definitions: list[Definition], *, cut: Cut | None = None, budget: Budget | None = None
) -> SymbolsOut:
    """sai_find_symbol / `sai symbol --json`; with a cut, the first definitions and what it left out."""
    shown = definitions if cut is None else definitions[:cut.keep]
    out = SymbolsOut(definitions=[
        DefinitionOut(symbol=d.symbol, kind=d.kind, path=d.path, start_line=d.start_line,
                      end_line=d.end_line, language=d.language, chunk_id=d.chunk_id, match=d.match)
        for d in shown
    ])
    if cut is not None and budget is not None:
        truncated = truncated_json(cut, count=len(definitions), shortened=0, places=DEFINITIONS, budget=budget)
        if truncated is not None:
            out["truncated"] = truncated
    return out


def fitted_definitions_json(definitions: list[Definition], *, budget: Budget) -> SymbolsOut:
    return fit_definitions(definitions, lambda cut: definitions_json(definitions, cut=cut, budget=budget),
                           size=json_size, budget=budget)


def fit_definitions(definitions: list[Definition], render: Callable[[Cut], Answer], *,
                    size: Callable[[Answer], int], budget: Budget) -> Answer:
    """`render` of the first definitions that fit the budget (they carry no text to shorten)."""
    return fitted(len(definitions), render, size=size, max_tokens=budget.max_tokens, longest=0)


def setup_json(*, target: str, command: str, sai_command: str, config_file: str, notes: str) -> SetupOut:
    """sai_prepare_mcp_setup: how to set SAI up for `target` (the command, the client config)."""
    # an absolute --config: a client that ignores `cwd` still serves this project
    server = {"command": sai_command, "args": ["mcp", "--config", config_file], "cwd": target}
    return {
        "target_directory": target,
        "recommended_command": command,
        "mcp_server_config_example": {"mcpServers": {"sai": server}},
        "next_steps": [
            "1. Run the recommended_command in a terminal "
            "(it can take 5-20 minutes the first time).",
            "2. After it finishes, index your project: "
            f"cd <your-project> && {sai_command} --dry-run",
            "3. Then run without --dry-run to actually build the index.",
            "4. Add the mcp_server_config_example to your agent's MCP settings.",
            "5. Restart your agentic tool.",
        ],
        "notes": notes,
    }


def setup_blocked_json(reason: str) -> SetupRunOut:
    return {"execution_attempted": False, "success": False, "stdout": None, "stderr": None, "error": reason,
            "execution_blocked": True, "execution_blocked_reason": reason}


def setup_ran_json(exit_code: int | None, *, stdout: str, stderr: str, error: str | None) -> SetupRunOut:
    """A run's result: the original tool's fields (success, stdout, error, ...) and SAI's."""
    return {"execution_attempted": True, "success": exit_code == 0, "stdout": stdout, "stderr": stderr,
            "error": error, "executed": True, "exit_code": exit_code,
            "timed_out": exit_code is None, "stdout_tail": stdout, "stderr_tail": stderr}
