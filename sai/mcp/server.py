"""The MCP server (docs/mcp.md): the seven contract tools and two extensions (sai_read_chunk,
sai_find_symbol), thin wrappers over the core (query/, duplicates/, indexing/); the setup tool's
runner is mcp/installer.py, the threads beside the tools mcp/background.py.

One `Project` (config, store, lazy embedder) serves every call; the SDK runs the sync tools in
worker threads. Failures become JSON-RPC errors in one place, `SaiMCPServer.call_tool`: the
caller's mistakes (bad arguments, missing locations, paths outside the root, read-only refusals)
are -32602, failures while running (Ollama down, index locked) -32603. While serving stdio the
SDK points fd 1 at stderr, so stray prints cannot corrupt the protocol on stdout.

Arguments are taken as the clients of the original tool send them: an explicit `null` for an
argument means its default (`SaiMCPServer.call_tool` drops nulls before validation).
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

import sai
from sai.duplicates.clusters import DuplicateParams, duplicate_report
from sai.errors import ReadOnlyError, SaiError, UsageError, keep_secret, redact, shown
from sai.indexing import indexer
from sai.indexing.watch import Watcher
from sai.mcp import installer
from sai.mcp.background import BackgroundBuild, BackgroundWatch
from sai.mcp.calls import answer_budget, escaped, key_of, tool_result
from sai.mcp.installer import setup_plan, target_of
from sai.mcp.lookup import LookupTools
from sai.mcp.schemas import (
    MAX_PATHS,
    Backend,
    ChunkLine,
    ChunkPath,
    Count,
    Directory,
    DuplicateScore,
    DuplicatesOut,
    EmbedderName,
    Execute,
    Explain,
    Glob,
    Global,
    GroupBy,
    HitsOut,
    IncludeText,
    Language,
    Limit,
    MaxTokens,
    MaybePaths,
    Metric,
    Mode,
    Paths,
    Query,
    RefreshOut,
    Revision,
    Score,
    ServerStatusOut,
    SetupOut,
    Size,
    Staged,
    Text,
    TopK,
    UseAst,
    compact_schema,
)
from sai.mcp.stdio import checked_stdio
from sai.mcp.uses import USE_TOOLS, UseTools
from sai.models import clamped
from sai.output.budget import DEFAULT_TOKENS
from sai.output.payloads import fitted_duplicates_json, fitted_hits_json, refresh_json, server_status_json
from sai.project import Project
from sai.query.search import search
from sai.query.similar import find_similar
from sai.query.status import status

log = logging.getLogger("sai.mcp")

READ_TOOLS = ("sai_search_code", "sai_find_similar", "sai_find_duplicates", "sai_index_status",
              "sai_read_chunk", "sai_find_symbol", *USE_TOOLS)
WRITE_TOOLS = ("sai_refresh", "sai_sync", "sai_prepare_mcp_setup")
TOOL_NAMES = READ_TOOLS + WRITE_TOOLS
SHORT_NAMES = {  # sai mcp --tools search,read,symbol
    "search": "sai_search_code", "similar": "sai_find_similar", "duplicates": "sai_find_duplicates",
    "status": "sai_index_status", "read": "sai_read_chunk", "symbol": "sai_find_symbol",
    "refresh": "sai_refresh", "sync": "sai_sync", "setup": "sai_prepare_mcp_setup",
    "refs": "sai_find_references", "callers": "sai_find_callers", "callees": "sai_find_callees",
    "impact": "sai_impact",
}


SHORT_NAMES_OF = {tool: short for short, tool in SHORT_NAMES.items()}


def served_tools(names: str | None) -> tuple[str, ...]:
    """The tools `sai mcp --tools` names (short or full names, comma-separated), in TOOL_NAMES
    order; None: all of them."""
    if names is None:
        return TOOL_NAMES
    asked = [name.strip() for name in names.split(",") if name.strip()]
    if not asked:
        raise UsageError(f"--tools names no tool; give some of {', '.join(SHORT_NAMES)}")
    full = {SHORT_NAMES.get(name, name) for name in asked}
    unknown = [name for name in asked if SHORT_NAMES.get(name, name) not in TOOL_NAMES]
    if unknown:
        raise UsageError(f"unknown tool '{shown(unknown[0])}' in --tools; choose from {', '.join(SHORT_NAMES)}")
    return tuple(name for name in TOOL_NAMES if name in full)


# ---------------------------------------------------------------- the tools
class SaiTools(LookupTools, UseTools):
    """The tools over one shared Project; method names are the tool names and their
    docstrings the descriptions agents read (sai_read_chunk and sai_find_symbol: mcp_lookup.py)."""

    def __init__(self, project: Project, *, allow_write: bool, allow_setup: bool) -> None:
        self.project = project
        self.allow_write = allow_write
        self.allow_setup = allow_setup
        self.watcher: Watcher | None = None  # set by serve() with --watch
        self.build: BackgroundBuild | None = None  # set by serve(): --allow-write and no index yet

    def sai_search_code(
        self, query: Query, limit: Limit = 8, language: Language = None, path_glob: Glob = None,
        include_text: IncludeText = False, mode: Mode = "hybrid", explain: Explain = False,
        group_by: GroupBy = "file", max_tokens: MaxTokens = DEFAULT_TOKENS["search"],
    ) -> Annotated[CallToolResult, HitsOut]:
        """Search code by meaning and words: find where logic is implemented, how something
        works, which file does it. Hits best first: path, lines, symbol, snippet, chunk_id.
        Use before opening files."""
        budget = answer_budget(max_tokens)
        if self.build is not None:
            self.build.check_started()
        hits = search(
            self.project, query, limit=clamped(limit), language=language, path_glob=path_glob,
            mode=mode, explain=explain, group_by=group_by,
        )
        return tool_result(fitted_hits_json(hits, include_text=include_text, budget=budget))

    def sai_find_similar(
        self, code: Text = None, path: ChunkPath = None, line: ChunkLine = None,
        limit: Limit = 8, min_score: Score = None, language: Language = None, path_glob: Glob = None,
        max_tokens: MaxTokens = DEFAULT_TOKENS["similar"],
    ) -> Annotated[CallToolResult, HitsOut]:
        """Code like a snippet, or like the function at path + line: its copies and variants,
        to check before changing it. Hits as sai_search_code's."""
        budget = answer_budget(max_tokens)
        if path is not None and code is None:  # a snippet overrides a location (prefer_code)
            path = key_of(self.project, path)
        hits = find_similar(
            self.project, code=code, path=path, line=line, limit=clamped(limit), min_score=min_score,
            language=language, path_glob=path_glob, prefer_code=True,
        )
        return tool_result(fitted_hits_json(hits, budget=budget))

    def sai_find_duplicates(
        self, min_score: DuplicateScore = None, min_cluster_size: Size = None, top_k: TopK = None,
        max_clusters: Count = 50, path_glob: Glob = None, metric: Metric = None,
        max_tokens: MaxTokens = DEFAULT_TOKENS["duplicates"],
    ) -> Annotated[CallToolResult, DuplicatesOut]:
        """Clusters of duplicate code across the index, largest first: copy-pasted code worth
        merging, renamed copies included."""
        budget = answer_budget(max_tokens)
        params = DuplicateParams.resolve(self.project.config, min_score=min_score, min_cluster_size=min_cluster_size,
                                         top_k=top_k, metric=metric, max_clusters=max_clusters, clamp=True)
        report = duplicate_report(self.project, params, path_glob=path_glob)
        return tool_result(fitted_duplicates_json(report, budget=budget))

    def sai_index_status(self) -> Annotated[CallToolResult, ServerStatusOut]:
        """What the index holds: files, chunks, languages, the model that built it, when; and
        whether the server is indexing or watching."""
        watcher, build = self.watcher, self.build
        return tool_result(server_status_json(
            status(self.project), watching=bool(watcher and watcher.watching),
            last_refresh_at=watcher.last_refresh_at if watcher else None,
            indexing=bool(build and build.running),
        ))

    def sai_refresh(self, paths: Paths) -> Annotated[CallToolResult, RefreshOut]:
        """Re-index files you edited, so searches see the change. Needs --allow-write."""
        self._check_writable("refresh")
        if not paths:
            raise UsageError("refresh requires at least one path")
        report = indexer.refresh(self.project, self._paths(paths))
        return tool_result(refresh_json(report))

    def sai_sync(
        self, since: Revision = "HEAD~1", staged: Staged = False, paths: MaybePaths = None
    ) -> Annotated[CallToolResult, RefreshOut]:
        """Re-index the changed files git reports (since a revision, or staged), after a pull or
        a checkout. Needs --allow-write."""
        self._check_writable("sync")
        keys = self._paths(paths) if paths else None
        report = indexer.sync(self.project, since=since, staged=staged, paths=keys)
        return tool_result(refresh_json(report, note_when_empty=True))

    def sai_prepare_mcp_setup(
        self, target_directory: Directory = None, backend: Backend = "duckdb",
        embedder: EmbedderName = "ollama", use_ast_chunker: UseAst = False,
        install_globally: Global = False, execute: Execute = False,
    ) -> Annotated[CallToolResult, SetupOut]:
        """Set SAI up as an MCP server for a project: the install command and the client
        config; with execute, runs it (needs --allow-setup)."""
        root = self.project.config.root
        plan = setup_plan(target_of(root, target_directory), backend=backend, embedder=embedder,
                          use_ast_chunker=use_ast_chunker, install_globally=install_globally)
        ran = installer.execute(plan, root=root, allow_setup=self.allow_setup) if execute else {}
        return tool_result({**plan.payload(), **ran})

    def _check_writable(self, what: str) -> None:
        if not self.allow_write:
            raise ReadOnlyError(f"server is read-only; restart with --allow-write to enable {what}")

    def _paths(self, paths: list[str]) -> list[str]:
        if len(paths) > MAX_PATHS:
            raise UsageError(f"too many paths (max {MAX_PATHS})")
        return [key_of(self.project, p) for p in paths]


# ---------------------------------------------------------------- the server and its errors
_ROLES = {  # what instructions say of each served tool
    "sai_search_code": "find code by meaning", "sai_find_similar": "code like a snippet",
    "sai_find_duplicates": "duplicate clusters", "sai_index_status": "what the index holds",
    "sai_read_chunk": "a hit's full text by chunk_id", "sai_find_symbol": "where a name is defined",
    "sai_refresh": "re-index given files", "sai_sync": "re-index what git reports changed",
    "sai_prepare_mcp_setup": "set SAI up for a project",
    "sai_find_references": "where a name is used", "sai_find_callers": "who calls a name",
    "sai_find_callees": "what a name calls", "sai_impact": "what the uncommitted change touches",
}


def instructions(*, allow_write: bool, allow_setup: bool, tools: tuple[str, ...] = TOOL_NAMES) -> str:
    """What the server says of itself at initialize: its tools, which need a flag, its mode."""
    named = "; ".join(f"{name} ({_ROLES[name]})" for name in tools)
    writes = [name for name in tools if name in WRITE_TOOLS[:2]]
    needs = f" {' and '.join(writes)} need --allow-write." if writes else ""
    if "sai_prepare_mcp_setup" in tools and not allow_setup:
        needs += " sai_prepare_mcp_setup runs nothing without --allow-setup."
    return (f"SAI: search over this project's code index. Tools: {named}.{needs} "
            f"This server is {_mode(allow_write)}. Paths are relative to the project root.")


def _mode(allow_write: bool) -> str:
    return "writable" if allow_write else "read-only"


class SaiMCPServer(MCPServer):
    """An MCPServer whose tool failures are JSON-RPC errors (docs/mcp.md, "Errors"), not isError
    results, whose stdio answers every frame (mcp/stdio.py), and whose tools/list is compact
    (the outputSchemas only when asked for: `sai mcp --output-schemas`)."""

    served: tuple[str, ...] = TOOL_NAMES
    output_schemas: bool = False

    async def list_tools(self) -> list[MCPTool]:
        return [tool.model_copy(update={
            "input_schema": compact_schema(tool.input_schema),
            "output_schema": compact_schema(tool.output_schema) if self.output_schemas else None,
        }) for tool in await super().list_tools()]

    async def run_stdio_async(self) -> None:
        async with checked_stdio() as (read_stream, write_stream):
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        # An explicit null means "the default", as the original tool's clients expect; for a
        # required argument, dropping it gives the usual "Field required".
        given = {key: value for key, value in (arguments or {}).items() if value is not None}
        try:
            return await super().call_tool(name, given, context)
        except ToolError as exc:
            raise protocol_error(name, exc, served=self.served) from exc


def protocol_error(tool: str, exc: ToolError, *, served: tuple[str, ...] = TOOL_NAMES) -> MCPError:
    """-32602 for the caller's mistakes, -32603 for failures while running, with the cause."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return MCPError(INVALID_PARAMS, escaped(_invalid_arguments(tool, cause)))
    if cause is None and tool in TOOL_NAMES and tool not in served:
        return MCPError(INVALID_PARAMS, escaped(
            f"tool '{tool}' is not served here (sai mcp --tools {','.join(SHORT_NAMES_OF[t] for t in served)}); "
            "tools/list names the tools served"))
    if cause is None and tool not in TOOL_NAMES:
        return MCPError(INVALID_PARAMS, escaped(f"unknown tool '{tool}'; tools/list names the sai_ tools"))
    if isinstance(cause, SaiError):  # each error class carries its JSON-RPC code
        if cause.rpc_code == INVALID_PARAMS:
            log.info("%s refused: %s", tool, escaped(str(cause)))
        else:
            log.warning("%s failed: %s", tool, escaped(str(cause)))
        return MCPError(cause.rpc_code, escaped(str(cause)))
    log.error("%s crashed", tool, exc_info=cause or exc)
    what = f"{type(cause).__name__}: {cause}" if cause else str(exc)
    return MCPError(INTERNAL_ERROR, escaped(f"{tool} failed unexpectedly ({what}); see the server log"))


class _RedactingFormatter(logging.Formatter):
    """The server's log lines, with no secret whatever a library or a server said."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def _invalid_arguments(tool: str, exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(part) for part in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors()
    ]
    return f"invalid arguments for {tool}: {'; '.join(problems)}; see the tool's inputSchema"


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)


def build_server(
    project: Project, *, allow_write: bool = False, allow_setup: bool = False,
    watcher: Watcher | None = None, build: BackgroundBuild | None = None,
    tools: tuple[str, ...] = TOOL_NAMES, output_schemas: bool = False,
) -> SaiMCPServer:
    """The `sai` MCP server with `tools` over `project` (`watcher`: its --watch state)."""
    server = SaiMCPServer(
        "sai", version=sai.__version__, log_level="WARNING",
        instructions=instructions(allow_write=allow_write, allow_setup=allow_setup, tools=tools),
    )
    server.served, server.output_schemas = tools, output_schemas
    calls = SaiTools(project, allow_write=allow_write, allow_setup=allow_setup)
    calls.watcher = watcher
    calls.build = build
    for name in tools:
        annotations = READ_ONLY if name in READ_TOOLS else WRITES
        fn = getattr(calls, name)
        description = " ".join((inspect.getdoc(fn) or "").split())  # one line: the docstring's wrapping costs
        server.add_tool(fn, name=name, description=description, annotations=annotations)
    return server


def serve(
    project: Project, *, allow_write: bool = False, allow_setup: bool = False,
    http: str | None = None, watch: bool = False, token_file: str | None = None,
    allow_unauthenticated: bool = False, tools: str | None = None, output_schemas: bool = False,
) -> None:
    """Serve the tools over stdio until stdin closes, or over Streamable HTTP at /mcp (with the
    bearer token of `token_file` or $SAI_MCP_TOKEN, sai/mcp/http.py); with `watch`, a background
    thread keeps the index fresh meanwhile; `tools`: the --tools list (default: all)."""
    served = served_tools(tools)
    if not log.handlers:  # its own prefix, whatever the CLI configured for the root logger
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_RedactingFormatter("sai mcp: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO)
    keep_secret(project.config.qdrant.api_key)  # a library caller may serve without the CLI
    watching = BackgroundWatch(project) if watch else None
    building = BackgroundBuild(project) if allow_write and not watch and not _has_index(project) else None
    server = build_server(project, allow_write=allow_write, allow_setup=allow_setup,
                          watcher=watching.watcher if watching else None, build=building,
                          tools=served, output_schemas=output_schemas)
    if watching:
        watching.start()
    if building:
        building.start()
    try:
        if http is None:
            log.info("serving %s over stdio (%s)", project.config.root, _mode(allow_write))
            server.run("stdio")
        else:
            from sai.mcp.http import bearer_token, serve_http  # imports uvicorn: HTTP mode only

            serve_http(server, http, mode=_mode(allow_write), token=bearer_token(os.environ, token_file),
                       allow_unauthenticated=allow_unauthenticated)
    finally:
        if watching:
            watching.stop()
        if building:
            building.stop()
        project.close()


def _has_index(project: Project) -> bool:
    if not project.store.exists:
        return False
    with project.store.read() as reader:
        return reader.has_index()
