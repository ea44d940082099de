"""What the MCP tools take and return: argument types (inputSchema) and result shapes
(outputSchema), as the SDK derives the tools' JSON schemas from them."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs this one below Python 3.12

MAX_LIMIT = 50  # limit and top_k are clamped to 1..MAX_LIMIT
MAX_PATHS = 200  # paths per sai_refresh / sai_sync call


# ---------------------------------------------------------------- result shapes (outputSchema)
class SignalsOut(TypedDict):
    name_match: float
    definition: float
    path_match: float
    test_penalty: float
    file_support: float
    repeat: float
    kind_factor: float


class ExplainOut(TypedDict):
    semantic_rank: int | None
    cosine: float | None
    lexical_rank: int | None
    bm25: float | None
    rrf: float | None
    signals: SignalsOut | None
    fused: float | None


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


class HitsOut(TypedDict):
    hits: list[HitOut]


class ClusterOut(TypedDict):
    size: int
    members: list[MemberOut]
    min_sim: float
    max_sim: float


class ClustersOut(TypedDict):
    clusters: list[ClusterOut]


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
    watching: bool  # sai mcp --watch: re-indexing files as they change
    last_refresh_at: str | None  # when the watcher last brought the index up to date


class RefreshedOut(TypedDict):
    path: str
    chunks: int


class RefreshOut(TypedDict):
    refreshed: list[RefreshedOut]
    removed: list[str]
    note: NotRequired[str]


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


# ---------------------------------------------------------------- argument types (inputSchema)
def _arg(description: str, **schema: Any) -> Any:
    # Extra schema keys are shown, not enforced: out-of-range limits are clamped, not refused.
    return Field(description=description, json_schema_extra=schema or None)


_RANGE = {"minimum": 1, "maximum": MAX_LIMIT}
Query = Annotated[str, _arg("what the code does, in words or code")]
Limit = Annotated[int, _arg(f"results to return (default 8, clamped to 1-{MAX_LIMIT})", **_RANGE)]
TopK = Annotated[
    int | None, _arg(f"neighbours per chunk (default from config, clamped 1-{MAX_LIMIT})", **_RANGE)
]
Language = Annotated[
    str | None, _arg("only chunks of this language: a name (python, typescript) or an extension (py, ts)")
]
Metric = Annotated[
    Literal["duplicate", "cosine"] | None,
    _arg("edge score: duplicate (cosine and token shape, default) or cosine (the original's plain cosine)"),
]
Glob = Annotated[str | None, _arg(
    "only paths matching this glob, e.g. src/** or *.py; * and ? also match /, ** spans "
    "directories, {a,b} and [a-z] work, no / also matches the file name"
)]
IncludeText = Annotated[bool, _arg("the whole chunk text as snippet, not its first 8 lines")]
Staged = Annotated[bool, _arg("use the staged files (git diff --cached) instead of since")]
UseAst = Annotated[bool, _arg("add the ast feature to the install")]
Global = Annotated[bool, _arg("also link the sai command into ~/.local/bin")]
Execute = Annotated[bool, _arg("run the setup script now (needs --allow-setup)")]
Text = Annotated[str | None, _arg("a code snippet to compare (or give path and line)")]
ChunkPath = Annotated[str | None, _arg("file of an indexed chunk, relative to the project root")]
ChunkLine = Annotated[int | None, _arg("any 1-based line inside that chunk")]
Score = Annotated[float | None, _arg("cosine threshold (default from config)")]
DuplicateScore = Annotated[float | None, _arg(
    "threshold of an edge's duplicate score, the mean of cosine and token-shape similarity "
    "(default from config)"
)]
Size = Annotated[int | None, _arg(
    "smallest cluster to report (default from config); 1 and 2 both mean every cluster",
    minimum=1,
)]
Count = Annotated[int, _arg("clusters to return, largest first (default 50)")]
Paths = Annotated[list[str], _arg(
    f"files relative to the project root (1-{MAX_PATHS})", minItems=1, maxItems=MAX_PATHS
)]
MaybePaths = Annotated[list[str] | None, _arg(f"these files instead of git (max {MAX_PATHS})")]
Revision = Annotated[str, _arg("git revision to compare the working tree with")]
Directory = Annotated[str | None, _arg("project to set up (default: the server's cwd)")]
Backend = Annotated[str, _arg("index backend: duckdb", enum=["duckdb"])]
Mode = Annotated[str, _arg(
    "ranking: hybrid (default), semantic, or lexical (no embedder needed)",
    enum=["hybrid", "semantic", "lexical"],
)]
EmbedderName = Annotated[str, _arg(
    "ollama, or local (offline; ort is another name for it)", enum=["ollama", "local", "ort"]
)]
Explain = Annotated[bool, _arg("add to each hit why it ranked there (ranks, cosine, BM25, signals)")]
GroupBy = Annotated[str, _arg(
    "chunk (default): one hit per chunk; file: each file once, as its best chunk, with its best "
    "chunks' lines in `chunks`",
    enum=["chunk", "file"],
)]
ChunkId = Annotated[str | None, _arg("a chunk_id from a hit (or give path and start_line)")]
ReadPath = Annotated[str | None, _arg("file relative to the project root (with start_line)")]
StartLine = Annotated[int | None, _arg("1-based line the chunk holds", minimum=1)]
EndLine = Annotated[int | None, _arg("last line of the range (default start_line)", minimum=1)]
Neighbours = Annotated[int, _arg("chunks to show before and after it (default 1, clamped 0-5)",
                                 minimum=0, maximum=5)]
Enclosing = Annotated[bool, _arg("also the enclosing unit (the class of a method)")]
SymbolName = Annotated[str, _arg("a name: computeTotal, Cart.computeTotal, or the start of one")]
SymbolLimit = Annotated[int, _arg(f"definitions to return (default 20, clamped to 1-{MAX_LIMIT})", **_RANGE)]
