"""What the MCP tools take and return: argument types (inputSchema) and result shapes
(outputSchema), as the SDK derives the tools' JSON schemas from them. The result shapes are the
payload TypedDicts of sai/output/shapes.py, re-exported here."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from sai.models import BACKENDS, EMBEDDERS, GROUPS, MAX_LIMIT, MODES, DuplicateMetric
from sai.output.shapes import DuplicatesOut as DuplicatesOut  # the outputSchemas, re-exported
from sai.output.shapes import HitsOut as HitsOut
from sai.output.shapes import ReadChunkOut as ReadChunkOut
from sai.output.shapes import RefreshOut as RefreshOut
from sai.output.shapes import ServerStatusOut as ServerStatusOut
from sai.output.shapes import SetupOut as SetupOut
from sai.output.shapes import SymbolsOut as SymbolsOut

MAX_PATHS = 200  # paths per sai_refresh / sai_sync call
EMBEDDER_ALIASES = {"ort": "local"}  # the original tool's name for its offline embedder


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
    DuplicateMetric | None,
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
    "threshold of an edge's duplicate score, a weighted mean of cosine and token-shape similarity "
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
Directory = Annotated[str | None, _arg("directory to set up, inside the project root (default: the root)")]
Backend = Annotated[str, _arg(f"index backend: {', '.join(BACKENDS)}", enum=list(BACKENDS))]
Mode = Annotated[str, _arg(
    "ranking: hybrid (default), semantic, or lexical (no embedder needed)",
    enum=list(MODES),
)]
EmbedderName = Annotated[str, _arg(
    "ollama, or local (offline; ort is another name for it)", enum=[*EMBEDDERS, *EMBEDDER_ALIASES]
)]
Explain = Annotated[bool, _arg("add to each hit why it ranked there (ranks, cosine, BM25, signals)")]
GroupBy = Annotated[str, _arg(
    "chunk (default): one hit per chunk; file: each file once, as its best chunk, with its best "
    "chunks' lines in `chunks`",
    enum=list(GROUPS),
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
