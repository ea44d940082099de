"""The JSON shapes of results, shared by `--json` and the MCP tools (docs/output-schemas.md): one
TypedDict per payload, the return type of its builder in payloads.py and, for the MCP tools, the
outputSchema the SDK derives from it (sai/mcp/schemas.py), so the two cannot drift apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired

from typing_extensions import TypedDict  # pydantic needs this one below Python 3.12

from sai.query.ranking import SIGNALS

# One number per ranking signal, named and ordered as sai/query/ranking/signals.py declares them.
if TYPE_CHECKING:
    SignalsOut = dict[str, float]
else:
    SignalsOut = TypedDict("SignalsOut", {signal.name: float for signal in SIGNALS})


class ExplainOut(TypedDict):
    semantic_rank: int | None
    cosine: float | None
    lexical_rank: int | None
    bm25: float | None
    rrf: float | None
    signals: SignalsOut | None
    fused: float | None
    pending_vector: bool  # no vector yet: lexical and symbol evidence alone found the hit
    model: str | None  # the model whose vectors the cosine compares; null in lexical mode



class MemberOut(TypedDict):
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    chunk_id: str


class FileChunkOut(TypedDict):
    start_line: int
    end_line: int
    symbol: str | None
    chunk_id: str


class HitOut(MemberOut):
    score: float
    snippet: str
    language: str | None
    stale: bool
    rank: NotRequired[int]
    score_kind: NotRequired[str]
    explain: NotRequired[ExplainOut]
    chunks: NotRequired[list[FileChunkOut]]
    copies: NotRequired[list[MemberOut]]


class HitRankPart(TypedDict, total=False):  # HitOut's keys between stale and chunk_id
    rank: int
    score_kind: str


class TruncatedOut(TypedDict):
    """What an answer left out to fit its max_tokens, and how to get it (output/budget.py)."""

    omitted: int  # places (hits, chunks, definitions, clusters) left out at the end of the ranking
    shortened: int  # places kept whose text (snippet, chunk text, members) shows only its first `head`
    head: NotRequired[int]
    over_budget: NotRequired[bool]  # too small a budget for one place: the best shown without its text
    max_tokens: int
    hint: str


class HitsOut(TypedDict):
    hits: list[HitOut]
    truncated: NotRequired[TruncatedOut]


class ClusterOut(TypedDict):
    size: int
    members: list[MemberOut]
    min_sim: float
    max_sim: float


class DuplicatesOut(TypedDict):
    min_score: float
    min_cluster_size: int
    top_k: int
    seeded: bool
    count: int
    clusters: list[ClusterOut]
    metric: str
    truncated: NotRequired[TruncatedOut]


class StatusOut(TypedDict):
    backend: str
    collection: str
    model: str | None
    vector_dim: int | None
    chunk_count: int
    chunker: str | None
    embedder: str | None
    file_count: int
    indexed_at: str | None
    stale_files: NotRequired[int]
    languages: dict[str, int]
    pending_vectors: int  # chunks searchable lexically and by symbol that still wait for a vector
    vendored_dirs: list[str]  # vendored directories (indexed, ranked down)
    config_asks: NotRequired[dict[str, str]]  # the file's embedder and model, where the index's answer


class StaleFilesPart(TypedDict, total=False):  # StatusOut's key between indexed_at and languages
    stale_files: int


class ConfigAsksPart(TypedDict, total=False):  # StatusOut's last key
    config_asks: dict[str, str]


class ServerStatusOut(StatusOut):
    watching: bool  # sai mcp --watch: re-indexing files as they change
    last_refresh_at: str | None  # when the watcher last brought the index up to date
    indexing: bool  # this server is building the index (--allow-write, no index at start)


class RefreshedOut(TypedDict):
    path: str
    chunks: int


class RefreshOut(TypedDict):
    refreshed: list[RefreshedOut]
    removed: list[str]
    not_found: NotRequired[list[str]]
    note: NotRequired[str]


class WatchBatchOut(TypedDict):
    at: str
    changes: int
    full_run: bool
    refreshed: list[RefreshedOut]
    removed: list[str]


class WatchFailureOut(TypedDict):
    at: str
    changes: int
    error: str


class IndexCountsOut(TypedDict):
    chunks: int
    files: int
    skipped: int
    embedded: int
    unchanged: int
    removed: int


class IndexRunOut(TypedDict):
    indexed: IndexCountsOut
    collection: str


class ExcludedOut(TypedDict):
    path: str
    reason: str


class DryRunOut(TypedDict):
    root: str
    collection: str
    would_index: list[str]
    excluded: list[ExcludedOut]
    pruned_dirs: list[str]
    vendored_dirs: list[str]


class FlushOut(TypedDict):
    collection: str
    deleted: bool


# "from" is a keyword: the functional form
CopyOut = TypedDict("CopyOut", {"collection": str, "from": str, "to": str, "location": str, "files": int,
                                "chunks": int})


class InitOut(TypedDict):
    wrote: str


class SetupRunOut(TypedDict, total=False):
    """What sai_prepare_mcp_setup adds with execute=true: the run's result, or why it was blocked."""

    execution_attempted: bool
    success: bool
    stdout: str | None
    stderr: str | None
    error: str | None
    execution_blocked: bool
    execution_blocked_reason: str
    executed: bool
    exit_code: int | None
    timed_out: bool
    stdout_tail: str
    stderr_tail: str


class SetupOut(TypedDict):
    target_directory: str
    recommended_command: str
    mcp_server_config_example: dict[str, Any]
    next_steps: list[str]
    notes: str
    execution_blocked: NotRequired[bool]
    execution_blocked_reason: NotRequired[str]
    executed: NotRequired[bool]
    exit_code: NotRequired[int | None]
    timed_out: NotRequired[bool]
    stdout_tail: NotRequired[str]
    stderr_tail: NotRequired[str]
    execution_attempted: NotRequired[bool]
    success: NotRequired[bool]
    stdout: NotRequired[str | None]
    stderr: NotRequired[str | None]
    error: NotRequired[str | None]


class ChunkOut(TypedDict):
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str | None
    language: str | None
    chunk_id: str
    text: str


class ReadChunkMainOut(ChunkOut):
    stale: bool


class ReadChunkOut(TypedDict):
    chunk: ReadChunkMainOut
    before: list[ChunkOut]
    after: list[ChunkOut]
    enclosing: ChunkOut | None
    truncated: NotRequired[TruncatedOut]


class DefinitionOut(TypedDict):
    symbol: str
    kind: str | None
    path: str
    start_line: int
    end_line: int
    language: str | None
    chunk_id: str
    match: str


class SymbolsOut(TypedDict):
    definitions: list[DefinitionOut]
    truncated: NotRequired[TruncatedOut]
