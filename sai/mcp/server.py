"""The MCP server (docs/mcp.md): the seven contract tools and two extensions (sai_read_chunk,
sai_find_symbol), thin wrappers over search.py, lookup.py and indexer.py.

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
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, ToolAnnotations
from pydantic import ValidationError

import sai
from sai.errors import OutsideRootError, ReadOnlyError, SaiError, StoreError, UsageError, keep_secret, redact, shown
from sai.indexing import indexer
from sai.indexing.watch import Batch, BatchFailed, Watcher, WatchReport
from sai.mcp.calls import clamp, key_of, no_nul, tool_result
from sai.mcp.lookup import LookupTools
from sai.mcp.schemas import (
    EMBEDDER_ALIASES,
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
)
from sai.mcp.stdio import checked_stdio
from sai.models import BACKENDS, EMBEDDERS, IndexProgress
from sai.output import render
from sai.output.payloads import duplicates_json, hits_json, refresh_json, server_status_json
from sai.project import Project
from sai.query import search
from sai.source.globs import check_glob

log = logging.getLogger("sai.mcp")

SETUP_TIMEOUT_S = 1800.0  # a first install with the local extra downloads ONNX Runtime and the model
TAIL_CHARS = 4000  # how much of the setup script's output a result carries
QUOTED = str.maketrans({c: "\\" + c for c in '\\"$`'})  # escapes inside a "double-quoted" word
SETUP_SCRIPT = Path(sai.__file__).resolve().parent.parent / "mcp-setup" / "setup.sh"
READ_TOOLS = ("sai_search_code", "sai_find_similar", "sai_find_duplicates", "sai_index_status",
              "sai_read_chunk", "sai_find_symbol")
WRITE_TOOLS = ("sai_refresh", "sai_sync", "sai_prepare_mcp_setup")
TOOL_NAMES = READ_TOOLS + WRITE_TOOLS


# ---------------------------------------------------------------- the tools
class SaiTools(LookupTools):
    """The tools over one shared Project; method names are the tool names and their
    docstrings the descriptions agents read (sai_read_chunk and sai_find_symbol: mcp_lookup.py)."""

    def __init__(self, project: Project, *, allow_write: bool, allow_setup: bool) -> None:
        self.project = project
        self.allow_write = allow_write
        self.allow_setup = allow_setup
        self.watcher: Watcher | None = None  # set by serve() with --watch
        self.build: _BackgroundBuild | None = None  # set by serve(): --allow-write and no index yet

    def sai_search_code(
        self, query: Query, limit: Limit = 8, language: Language = None, path_glob: Glob = None,
        include_text: IncludeText = False, mode: Mode = "hybrid", explain: Explain = False,
        group_by: GroupBy = "chunk",
    ) -> Annotated[CallToolResult, HitsOut]:
        """Search the code: the indexed chunks that best answer `query` (words or identifiers).

        Returns {"hits":[{path,start_line,end_line,symbol,score,snippet,rank,stale,...}]}: path
        relative to the project root, score the cosine similarity to the query (BM25 in lexical
        mode), rank the position (hybrid order may differ from score order), stale true when the
        file changed since it was indexed, snippet the chunk's first 8 lines (max 800 bytes)
        unless include_text. mode: hybrid (default: meaning + exact words), semantic, or
        lexical (works without the embedding model). Use it to find where something is
        implemented before opening files. language and path_glob filter the results. Each hit
        has a chunk_id for sai_read_chunk; explain adds why it ranked there. group_by "file"
        answers "which file": each file once (its best chunk), with `chunks` listing the lines
        of its best chunks.
        """
        check_glob(path_glob)
        if self.build is not None:
            self.build.check_started()
        hits = search.search(
            self.project, query, limit=clamp(limit), language=language, path_glob=path_glob,
            mode=mode, explain=explain, group_by=group_by,
        )
        return tool_result(hits_json(hits, include_text=include_text))

    def sai_find_similar(
        self, code: Text = None, path: ChunkPath = None, line: ChunkLine = None,
        limit: Limit = 8, min_score: Score = None, language: Language = None, path_glob: Glob = None,
    ) -> Annotated[CallToolResult, HitsOut]:
        """Code similar to a snippet (`code`) or to the indexed chunk at `path` + `line`.

        Returns {"hits":[...]} as sai_search_code does (snippet always capped); the chunk at
        path:line never lists itself. Give code, or path and line (code wins when both are
        given). min_score 0 shows the raw distribution. language and path_glob restrict the
        chunks compared. Use it to find copies or variants of a function before changing it.
        """
        if code is not None:  # as in the original tool: a snippet overrides a location
            path = line = None
        if path is not None:
            path = key_of(self.project, path)
        hits = search.find_similar(
            self.project, code=code, path=path, line=line, limit=clamp(limit), min_score=min_score,
            language=language, path_glob=path_glob,
        )
        return tool_result(hits_json(hits))

    def sai_find_duplicates(
        self, min_score: DuplicateScore = None, min_cluster_size: Size = None, top_k: TopK = None,
        max_clusters: Count = 50, path_glob: Glob = None, metric: Metric = None,
    ) -> Annotated[CallToolResult, DuplicatesOut]:
        """Clusters of near-duplicate code across the index, largest first.

        Returns {"clusters":[{size,members:[{path,start_line,end_line,symbol}],min_sim,max_sim}]}
        and the thresholds used. With metric "duplicate" (default) min_sim/max_sim are duplicate
        scores (a weighted mean of cosine and token-shape similarity; identical tiny functions score 1);
        metric "cosine" gives the original tool's plain-cosine edges. Needs no embedder (stored
        vectors and shapes only). Use it to find copy-pasted code worth merging, renamed copies
        included.
        """
        check_glob(path_glob)
        params = search.duplicate_params(
            self.project.config, min_score=min_score, min_cluster_size=min_cluster_size, top_k=top_k,
            metric=metric,
        )
        k, size = clamp(params.top_k), max(1, params.min_cluster_size)
        clusters = search.find_duplicates(
            self.project, min_score=params.min_score, min_cluster_size=size, top_k=k,
            max_clusters=max(1, max_clusters), path_glob=path_glob, metric=params.metric,
        )
        return tool_result(duplicates_json(clusters, min_score=params.min_score, min_cluster_size=size, top_k=k,
                                       seeded=False, metric=params.metric))

    def sai_index_status(self) -> Annotated[CallToolResult, ServerStatusOut]:
        """What the index holds: {backend,collection,model,vector_dim,chunk_count,chunker,...}.

        No arguments, no embedder needed. Use it to check that an index exists, how big it is
        and which model built it. watching: whether the server re-indexes files as they change
        (--watch); last_refresh_at: when it last did (ISO time, null before the first time).
        """
        watcher, build = self.watcher, self.build
        return tool_result(server_status_json(
            search.status(self.project), watching=bool(watcher and watcher.watching),
            last_refresh_at=watcher.last_refresh_at if watcher else None,
            indexing=bool(build and build.running),
        ))

    def sai_refresh(self, paths: Paths) -> Annotated[CallToolResult, RefreshOut]:
        """Re-index these files now. Needs the server started with --allow-write.

        Returns {"refreshed":[{path,chunks}],"removed":[path]}: files that exist and pass the
        index filters are re-chunked and re-embedded; gone or excluded files lose their
        chunks. Use it after editing files so that searches see the new code.
        """
        self._check_writable("refresh")
        if not paths:
            raise UsageError("refresh requires at least one path")
        report = indexer.refresh(self.project, self._paths(paths))
        return tool_result(refresh_json(report))

    def sai_sync(
        self, since: Revision = "HEAD~1", staged: Staged = False, paths: MaybePaths = None
    ) -> Annotated[CallToolResult, RefreshOut]:
        """Re-index the files git reports changed. Needs the server started with --allow-write.

        Changed = the working tree against `since` plus untracked files, or the staged files,
        or the given paths. Returns sai_refresh's shape, plus "note":"no changed files" when
        nothing changed. Use it after a checkout, a pull or a batch of edits.
        """
        self._check_writable("sync")
        keys = self._paths(paths) if paths else None
        report = indexer.sync(self.project, since=since, staged=staged, paths=keys)
        return tool_result(refresh_json(report, note_when_empty=True))

    def sai_prepare_mcp_setup(
        self, target_directory: Directory = None, backend: Backend = "duckdb",
        embedder: EmbedderName = "ollama", use_ast_chunker: UseAst = False,
        install_globally: Global = False, execute: Execute = False,
    ) -> Annotated[CallToolResult, SetupOut]:
        """How to set up SAI as an MCP server for a project; runs the setup on request.

        Returns {target_directory, recommended_command, mcp_server_config_example, next_steps,
        notes}. embedder ort is another name for local. execute=true runs mcp-setup/setup.sh
        only when the server was started with --allow-setup and target_directory is inside the
        project root: it writes sai-cfg.yml and .mcp.json.example there and pip-installs SAI
        into SAI's own virtual environment (adding execution_attempted,
        success, stdout, stderr, error, executed, exit_code, stdout_tail, stderr_tail);
        otherwise it adds execution_attempted false, success false, error, execution_blocked and
        execution_blocked_reason.
        """
        target = self._target(target_directory)
        plan = setup_plan(target, backend=backend, embedder=embedder,
                          use_ast_chunker=use_ast_chunker, install_globally=install_globally)
        payload = plan.payload()
        if execute:
            payload.update(self._execute(plan))
        return tool_result(payload)

    def _execute(self, plan: SetupPlan) -> dict[str, Any]:
        blocked = None
        if not self.allow_setup:
            blocked = "the server was not started with --allow-setup; restart it with " \
                      "--allow-setup or run the recommended_command yourself"
        elif not SETUP_SCRIPT.is_file():
            blocked = f"{SETUP_SCRIPT} was not found; run it from a source checkout"
        if blocked:
            return {"execution_attempted": False, "success": False, "stdout": None,
                    "stderr": None, "error": blocked, "execution_blocked": True,
                    "execution_blocked_reason": blocked}
        root = self.project.config.root
        if not plan.target.is_relative_to(root):  # the server never writes outside the root
            raise OutsideRootError(
                f"target_directory {shown(str(plan.target))} is outside the project root {root}; "
                "give a directory inside it, or run the recommended_command yourself")
        if plan.install_globally:
            raise UsageError("install_globally links sai into ~/.local/bin, outside the project root; "
                             "run the recommended_command yourself")
        if not plan.target.is_dir():
            raise UsageError(f"target_directory {plan.target} is not a directory; create it first")
        return run_setup(plan)

    def _target(self, directory: str | None) -> Path:
        """The directory to set up: the project root by default; a relative one is under the root."""
        if directory is None:
            return self.project.config.root
        given = Path(no_nul("target_directory", directory)).expanduser()
        try:
            return (self.project.config.root / given).resolve()  # an absolute `given` wins the join
        except OSError as exc:
            raise UsageError(f"target_directory {shown(directory)} cannot be resolved ({exc.strerror}); "
                             "give an existing directory") from None

    def _check_writable(self, what: str) -> None:
        if not self.allow_write:
            raise ReadOnlyError(f"server is read-only; restart with --allow-write to enable {what}")

    def _paths(self, paths: list[str]) -> list[str]:
        if len(paths) > MAX_PATHS:
            raise UsageError(f"too many paths (max {MAX_PATHS})")
        return [key_of(self.project, p) for p in paths]


# ---------------------------------------------------------------- sai_prepare_mcp_setup
@dataclass(frozen=True)
class SetupPlan:
    """One invocation of mcp-setup/setup.sh (docs/mcp.md): shown as a command, run as argv."""

    target: Path
    backend: str
    embedder: str
    features: str
    install_globally: bool

    def argv(self) -> list[str]:
        argv = [str(SETUP_SCRIPT), "--non-interactive", "--backend", self.backend, "--embedder",
                self.embedder, "--target-dir", str(self.target), "--features", self.features]
        return argv + (["--install-global"] if self.install_globally else [])

    def command(self) -> str:
        command = (
            f"{SETUP_SCRIPT} --non-interactive --backend {self.backend} --embedder {self.embedder}"
            f' --target-dir "{str(self.target).translate(QUOTED)}" --features "{self.features}"'
        )
        return command + (" --install-global" if self.install_globally else "")

    def payload(self) -> SetupOut:
        sai_command = _sai_command()
        # an absolute --config: a client that ignores `cwd` still serves this project
        server = {"command": sai_command, "args": ["mcp", "--config", str(self.target / "sai-cfg.yml")],
                  "cwd": str(self.target)}
        return SetupOut({
            "target_directory": str(self.target),
            "recommended_command": self.command(),
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
            "notes": SETUP_NOTES[SETUP_SCRIPT.is_file()],
        })


SETUP_NOTES = {
    True: "For fully offline use, prefer embedder=local (a longer first install: ONNX Runtime and the "
    "90 MB model). The setup script was found next to this package and the recommended_command is "
    "ready to run.",
    False: f"mcp-setup/setup.sh was not found at {SETUP_SCRIPT} (SAI installed without a source "
    "checkout?); clone the repository and run the recommended_command from there.",
}


def setup_plan(
    target: Path, *, backend: str, embedder: str, use_ast_chunker: bool, install_globally: bool
) -> SetupPlan:
    """The setup.sh invocation that sets up `target`; features follow backend and embedder."""
    embedder = EMBEDDER_ALIASES.get(embedder, embedder)
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")
    if embedder not in EMBEDDERS:
        choices = ", ".join([*EMBEDDERS, *EMBEDDER_ALIASES])
        raise UsageError(f"unknown embedder '{embedder}'; choose one of: {choices}")
    features = ",".join(["mcp", backend, embedder] + (["ast"] if use_ast_chunker else []))
    return SetupPlan(target, backend, embedder, features, install_globally)


def run_setup(plan: SetupPlan) -> dict[str, Any]:
    """Run the setup script as argv, never through a shell: the target comes from the caller."""
    log.warning("running %s", plan.command())
    try:
        done = subprocess.run(
            ["bash", *plan.argv()], cwd=plan.target, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, errors="replace", timeout=SETUP_TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return _ran(None, exc.stdout, exc.stderr)
    except OSError as exc:
        raise SaiError(f"cannot run {SETUP_SCRIPT}: {exc.strerror}; check bash") from exc
    return _ran(done.returncode, done.stdout, done.stderr)


def _ran(
    exit_code: int | None, stdout: str | bytes | None, stderr: str | bytes | None
) -> dict[str, Any]:
    """A run's result: the original tool's fields (success, stdout, error, ...) and SAI's."""
    out, err = _tail(stdout), _tail(stderr)
    if exit_code is None:
        error = f"setup.sh did not finish within {SETUP_TIMEOUT_S:.0f}s; run the " \
                "recommended_command in a terminal instead"
    elif exit_code != 0:
        last = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), "")
        error = f"setup.sh exited with code {exit_code}: {escaped(last) or 'no message'}"
    else:
        error = None
    return {"execution_attempted": True, "success": exit_code == 0, "stdout": out, "stderr": err,
            "error": error, "executed": True, "exit_code": exit_code,
            "timed_out": exit_code is None, "stdout_tail": out, "stderr_tail": err}


def _tail(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        output = output.decode("utf-8", errors="replace")
    return (output or "")[-TAIL_CHARS:]


def _sai_command() -> str:
    """The `sai` executable: beside this Python, else on PATH, else how this process started."""
    beside = Path(sys.executable).parent / "sai"
    if beside.is_file():
        return str(beside)
    return shutil.which("sai") or str(Path(sys.argv[0]).resolve())


# ---------------------------------------------------------------- the server and its errors
def instructions(*, allow_write: bool, allow_setup: bool) -> str:
    setup = "can run" if allow_setup else "describes (running it needs --allow-setup)"
    return (
        "SAI: semantic search over this project's code index. Read tools: sai_search_code (find "
        "code by meaning), sai_find_similar (neighbours of a snippet or of path:line), "
        "sai_find_duplicates (near-duplicate clusters), sai_index_status (what the index holds), "
        "sai_read_chunk (a hit's full text and the chunks around it, by chunk_id), sai_find_symbol "
        "(where a name is defined). "
        "Write tools, which need the server started with --allow-write: sai_refresh (re-index "
        "given files) and sai_sync (re-index the files git reports changed). "
        f"sai_prepare_mcp_setup {setup} the setup of SAI for a project. "
        f"This server is {_mode(allow_write)}. Paths are relative to the project root."
    )


def _mode(allow_write: bool) -> str:
    return "writable" if allow_write else "read-only"


class SaiMCPServer(MCPServer):
    """An MCPServer whose tool failures are JSON-RPC errors (docs/mcp.md, "Errors"), not isError
    results, and whose stdio answers every frame (mcp/stdio.py)."""

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
            raise protocol_error(name, exc) from exc


def protocol_error(tool: str, exc: ToolError) -> MCPError:
    """-32602 for the caller's mistakes, -32603 for failures while running, with the cause."""
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return MCPError(INVALID_PARAMS, escaped(_invalid_arguments(tool, cause)))
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


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escaped(message: str) -> str:
    """The message on one line: control characters (a path's newline, NUL, ...) as escapes, and
    no secret (sai/errors.py `redact`)."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], redact(message))


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
    watcher: Watcher | None = None, build: _BackgroundBuild | None = None,
) -> SaiMCPServer:
    """The `sai` MCP server with its tools over `project` (`watcher`: its --watch state)."""
    server = SaiMCPServer(
        "sai", version=sai.__version__, log_level="WARNING",
        instructions=instructions(allow_write=allow_write, allow_setup=allow_setup),
    )
    tools = SaiTools(project, allow_write=allow_write, allow_setup=allow_setup)
    tools.watcher = watcher
    tools.build = build
    for name in TOOL_NAMES:
        annotations = READ_ONLY if name in READ_TOOLS else WRITES
        fn = getattr(tools, name)
        server.add_tool(fn, name=name, description=inspect.getdoc(fn), annotations=annotations)
    return server


def serve(
    project: Project, *, allow_write: bool = False, allow_setup: bool = False,
    http: str | None = None, watch: bool = False, token_file: str | None = None,
    allow_unauthenticated: bool = False,
) -> None:
    """Serve the tools over stdio until stdin closes, or over Streamable HTTP at /mcp (with the
    bearer token of `token_file` or $SAI_MCP_TOKEN, sai/mcp/http.py); with `watch`, a background
    thread keeps the index fresh meanwhile."""
    if not log.handlers:  # its own prefix, whatever the CLI configured for the root logger
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_RedactingFormatter("sai mcp: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO)
    keep_secret(project.config.qdrant_api_key)  # a library caller may serve without the CLI
    watching = _BackgroundWatch(project) if watch else None
    building = _BackgroundBuild(project) if allow_write and not watch and not _has_index(project) else None
    server = build_server(project, allow_write=allow_write, allow_setup=allow_setup,
                          watcher=watching.watcher if watching else None, build=building)
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


# ---------------------------------------------------------------- no index yet
class _BuildStopped(Exception):
    """Raised from the progress callback to end the build when the server stops."""


class _BackgroundBuild:
    """`sai mcp --allow-write` on a project with no index: an index run in a thread. The tools
    answer meanwhile: lexically and by symbol once the chunks are stored (seconds), with more
    vectors as they are computed; a stop (or a kill) keeps what was written, for the next run."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.stop_event = threading.Event()
        self.running = False
        self.thread = threading.Thread(target=self._run, name="sai-build", daemon=True)

    def start(self) -> None:
        log.info("no index yet: building it in the background; the tools answer meanwhile")
        self.running = True
        self.thread.start()

    def check_started(self) -> None:
        """Before the first chunks are stored there is nothing to search: say so, not 'no index'."""
        if self.running and not self.project.store.exists:
            raise StoreError("the index is being built (this server started it); its first chunks "
                             "are searchable within seconds: ask again shortly")

    def _run(self) -> None:
        try:
            report = indexer.index(self.project, progress=self._progress,
                                   on_searchable=lambda pending: log.info(
                                       "index: chunks stored and searchable; %d wait for a vector", pending))
            log.info("index built: %d chunks from %d files", report.chunks, report.files)
        except _BuildStopped:
            log.info("index build stopped; the next run goes on from where it stopped")
        except SaiError as exc:
            log.warning("building the index failed: %s", escaped(str(exc)))
        finally:
            self.running = False

    def _progress(self, step: IndexProgress) -> None:
        if self.stop_event.is_set():
            raise _BuildStopped

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=30.0)


# ---------------------------------------------------------------- --watch
class _BackgroundWatch:
    """`sai mcp --watch`: a Watcher in a thread, reporting to the server log, stopped on exit.

    Readers stay consistent meanwhile: every write is one transaction that readers wait for.
    """

    def __init__(self, project: Project) -> None:
        self.stop_event = threading.Event()
        self.watcher = Watcher(project, report=_log_watch, stop=self.stop_event)
        self.thread = threading.Thread(target=self._run, name="sai-watch", daemon=True)

    def start(self) -> None:
        log.info("watching %s for changes", self.watcher.root)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.watcher.run()
        except SaiError as exc:
            log.warning("watching stopped: %s", escaped(str(exc)))

    def stop(self) -> None:
        """Stop watching; an index run in progress ends at its next file, a refresh when done."""
        self.stop_event.set()
        self.thread.join(timeout=2.0)
        if self.thread.is_alive():
            log.info("waiting for the re-index in progress to finish")
            self.thread.join()


def _log_watch(event: WatchReport) -> None:
    if isinstance(event, Batch):
        log.info("%s", escaped(render.watch_batch(event).rstrip("\n")))
    elif isinstance(event, BatchFailed):
        log.warning("watch: error: %s; its files are tried again with the next change", escaped(str(event.error)))
    else:
        log.info("watch: index up to date (%d chunks from %d files)", event.report.chunks, event.report.files)
