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
# The descriptions agents read on every turn: short, the details in docs/mcp.md.
Query = Annotated[str, _arg("what the code does, in words or identifiers")]
Limit = Annotated[int, _arg("most hits", **_RANGE)]
TopK = Annotated[int | None, _arg("neighbours per chunk (config default)", **_RANGE)]
Language = Annotated[str | None, _arg("only this language: python or py, ...")]
Metric = Annotated[DuplicateMetric | None, _arg("edge score: duplicate (copies), cosine or semantic")]
Glob = Annotated[str | None, _arg("only paths matching, e.g. src/** or *.py")]
IncludeText = Annotated[bool, _arg("whole chunk as snippet")]
Staged = Annotated[bool, _arg("the staged files instead")]
UseAst = Annotated[bool, _arg("add the ast feature")]
Global = Annotated[bool, _arg("link sai into ~/.local/bin")]
Execute = Annotated[bool, _arg("run the setup (needs --allow-setup)")]
Text = Annotated[str | None, _arg("a code snippet (or give path and line)")]
ChunkPath = Annotated[str | None, _arg("file of an indexed chunk")]
ChunkLine = Annotated[int | None, _arg("a line in that chunk")]
Score = Annotated[float | None, _arg("score floor (config default; -1: all)")]
DuplicateScore = Annotated[float | None, _arg("edge score floor (config default)")]
Size = Annotated[int | None, _arg("smallest cluster (config default)", minimum=1)]
Count = Annotated[int, _arg("most clusters")]
Paths = Annotated[list[str], _arg(f"files (1-{MAX_PATHS})", minItems=1, maxItems=MAX_PATHS)]
MaybePaths = Annotated[list[str] | None, _arg("these files instead of git")]
Revision = Annotated[str, _arg("git revision to compare with")]
Directory = Annotated[str | None, _arg("directory inside the root (default: the root)")]
Backend = Annotated[str, _arg("index backend", enum=list(BACKENDS))]
Mode = Annotated[str, _arg("lexical needs no embedder", enum=list(MODES))]
EmbedderName = Annotated[str, _arg("local: offline (ort is the same)", enum=[*EMBEDDERS, *EMBEDDER_ALIASES])]
Explain = Annotated[bool, _arg("add why each hit ranked there")]
GroupBy = Annotated[str, _arg("chunk: a file's chunks apart", enum=list(GROUPS))]
ChunkId = Annotated[str | None, _arg("a hit's chunk_id (or give path and start_line)")]
ReadPath = Annotated[str | None, _arg("file (with start_line)")]
StartLine = Annotated[int | None, _arg("a line the chunk holds", minimum=1)]
EndLine = Annotated[int | None, _arg("last line of a range", minimum=1)]
Neighbours = Annotated[int, _arg("chunks before and after", minimum=0, maximum=5)]
Enclosing = Annotated[bool, _arg("add the enclosing unit (a method's class)")]
SymbolName = Annotated[str, _arg("Cart.total, total, or the start of a name")]
SymbolLimit = Annotated[int, _arg("most definitions", **_RANGE)]
MaxTokens = Annotated[int, _arg("budget, 4 chars a token", minimum=1)]


# ---------------------------------------------------------------- the schemas as published
def compact_schema(schema: Any) -> Any:
    """A JSON schema as tools/list publishes it: no titles, `null` as one more type instead of
    an anyOf, no `"default": null`; what a value may be is unchanged."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs"):  # a name -> schema map: the names are not keywords
            out[key] = {name: compact_schema(item) for name, item in value.items()}
        elif key != "title" and not (key == "default" and value is None):
            out[key] = compact_schema(value)
    return _nullable(out)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": "string"}, {"type": "null"}]}` as `{"type": ["string", "null"]}`."""
    options = schema.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return schema
    other = next(option for option in options if option != {"type": "null"})
    if set(other) != {"type"} or not isinstance(other["type"], str):
        return schema
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return {"type": [other["type"], "null"], **rest}
