"""The `sai` command: parse, load config once, call the core, print; errors become one line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sai.cli.exits import interrupted, log_to_stderr, reader_gone
from sai.cli.options import check_options, count
from sai.config import load_config
from sai.errors import SaiError, UsageError, keep_secret, redact
from sai.indexing import indexer
from sai.models import CHUNKERS, EMBEDDERS, METRICS, MODES
from sai.output import render
from sai.output.payloads import (
    chunk_context_json,
    definitions_json,
    duplicates_json,
    hits_json,
    index_json,
    refresh_json,
    status_json,
)
from sai.output.progress import ProgressReporter
from sai.output.render import printable
from sai.project import Project, built_with
from sai.query import lookup, search
from sai.source.files import key_for
from sai.source.globs import check_glob
from sai.store import open_store

S = argparse.SUPPRESS


def _common() -> argparse.ArgumentParser:
    """Options valid before or after any subcommand (defaults suppressed so neither overrides)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--config", default=S, metavar="PATH", help="config file (default: sai-cfg.yml)")
    p.add_argument("--root", default=S, metavar="DIR", help="directory to index")
    p.add_argument("--ext", default=S, metavar="LIST", help="comma list of extensions")
    p.add_argument("--chunker", default=S, choices=CHUNKERS)
    p.add_argument("--embedder", default=S, choices=EMBEDDERS)
    p.add_argument("--model", default=S, metavar="NAME")
    p.add_argument("--collection", default=S, metavar="NAME")
    p.add_argument("--backend", default=S, choices=["duckdb", "qdrant"], help="where the index lives (duckdb)")
    p.add_argument("--json", action="store_true", default=S, help="machine output on stdout")
    p.add_argument("--silent", action="store_true", default=S, help="errors only on stderr")
    p.add_argument("-v", "--verbose", action="store_true", default=S)
    return p


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="sai", parents=[common],
        description="Semantic code search: index a tree, then search, find similar code and duplicates.",
    )
    parser.add_argument("--dry-run", action="store_true", help="report what would be indexed")
    parser.add_argument("--recreate", action="store_true", help="index anew (searches keep the old one meanwhile)")
    parser.add_argument("--query", metavar="Q", help="search after indexing")
    parser.add_argument("--query-only", action="store_true", help="skip the index step")
    parser.add_argument("--limit", type=count, default=5, metavar="N", help="hits to show (5)")
    parser.add_argument("--mode", choices=MODES, default="hybrid",
                        help="ranking: hybrid (default), semantic or lexical (no embedder needed)")
    parser.add_argument("--language", metavar="L", help="search only this language (name or extension: ts, py)")
    parser.add_argument("--path-glob", metavar="G", help="search only files whose key matches this glob")
    parser.add_argument("--explain", action="store_true", help="say why each hit ranked where it did")
    parser.add_argument("--files", action="store_true",
                        help="one hit per file (its best chunk), with the lines of its best chunks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_duplicates(sub.add_parser("duplicates", parents=[common], help="near-duplicate clusters"))
    _add_similar(sub.add_parser("similar", parents=[common], help="code similar to a snippet or chunk"))
    sub.add_parser("status", parents=[common], help="what the index holds")
    _add_seed(sub.add_parser("sync", parents=[common], help="re-index files git reports changed"))
    refresh = sub.add_parser("refresh", parents=[common], help="re-index the given files")
    refresh.add_argument("paths", nargs="+", metavar="PATH")
    sub.add_parser("flush", parents=[common], help="delete the collection")
    copy = sub.add_parser("copy", parents=[common], help="copy the index to the other backend (no embedding)")
    copy.add_argument("--to", required=True, choices=["duckdb", "qdrant"], help="the backend to copy into")
    init = sub.add_parser("init", parents=[common], help="write a commented sai-cfg.yml")
    init.add_argument("--yes", action="store_true", help="do not ask")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument("--output", default="sai-cfg.yml", metavar="PATH")
    _add_lookups(sub, common)
    mcp = sub.add_parser("mcp", parents=[common], help="serve the MCP tools (stdio or --http)")
    mcp.add_argument("--allow-write", action="store_true", help="enable sai_refresh and sai_sync")
    mcp.add_argument("--allow-setup", action="store_true", help="let sai_prepare_mcp_setup run")
    mcp.add_argument("--http", metavar="HOST:PORT", help="Streamable HTTP at /mcp instead of stdio")
    mcp.add_argument("--token-file", metavar="PATH",
                     help="--http: require this file's bearer token (default: $SAI_MCP_TOKEN)")
    mcp.add_argument("--allow-unauthenticated", action="store_true",
                     help="--http: serve a non-loopback address without a token (warns)")
    _add_watch(sub, common, mcp)
    return parser


def _add_watch(sub: argparse._SubParsersAction, common: argparse.ArgumentParser,
               mcp: argparse.ArgumentParser) -> None:
    sub.add_parser("watch", parents=[common], help="index, then re-index files as they change")
    mcp.add_argument("--watch", action="store_true", help="re-index files as they change (needs --allow-write)")


def _add_seed(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--since", metavar="REV", help="files changed since REV (default HEAD~1)")
    group.add_argument("--staged", action="store_true", help="files staged in git")
    group.add_argument("--file", nargs="+", metavar="PATH", dest="files", help="these files")


def _add_duplicates(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-score", type=float, metavar="F")
    p.add_argument("--min-cluster-size", type=count, metavar="N")
    p.add_argument("--top-k", type=count, metavar="N")
    p.add_argument("--max-clusters", type=count, default=50, metavar="N")
    p.add_argument("--path-glob", metavar="G")
    p.add_argument("--metric", choices=METRICS,
                   help="edge score: duplicate (cosine and token shape, default) or cosine (the original's)")
    _add_seed(p)


def _add_lookups(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`sai read` and `sai symbol`: what an agent does after a hit (lookup.py)."""
    read = sub.add_parser("read", parents=[common], help="a chunk in full, with the chunks around it")
    read.add_argument("chunk_id", nargs="?", metavar="CHUNK_ID", help="a hit's chunk_id")
    read.add_argument("--path", metavar="P", help="file of the chunk (with --start-line)")
    read.add_argument("--start-line", type=int, metavar="N", help="a line the chunk holds")
    read.add_argument("--end-line", type=int, metavar="N", help="last line of the range (default --start-line)")
    read.add_argument("--neighbours", type=int, default=1, metavar="N",
                      help="chunks to show before and after it (default 1, clamped 0-5)")
    read.add_argument("--enclosing", action="store_true", help="also the enclosing unit (a method's class)")
    symbol = sub.add_parser("symbol", parents=[common], help="where a name is defined")
    symbol.add_argument("name", metavar="NAME", help="computeTotal, Cart.computeTotal, or the start of a name")
    symbol.add_argument("--language", metavar="L", help="only this language (name or extension)")
    symbol.add_argument("--path-glob", metavar="G", help="only files whose key matches this glob")
    symbol.add_argument("--limit", type=count, default=20, metavar="N", help="definitions to show (20)")


def _add_similar(p: argparse.ArgumentParser) -> None:
    p.add_argument("--code", metavar="TEXT", help="snippet to compare")
    p.add_argument("--path", metavar="P", help="file of an indexed chunk")
    p.add_argument("--line", type=int, metavar="N", help="any line inside that chunk")
    p.add_argument("--limit", type=count, default=8, metavar="N")
    p.add_argument("--min-score", type=float, metavar="F")


def main(argv: list[str] | None = None, *, serve_mcp: Callable[..., None] | None = None) -> int:
    """Run one `sai` command; `serve_mcp` is what `sai mcp` runs (sai/app.py passes the MCP
    server in: the command line never imports it)."""
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        check_options(parser, sys.argv[1:] if argv is None else argv)
        args = parser.parse_args(argv)
        args.serve_mcp = serve_mcp
        opts = {k: getattr(args, k, None) for k in ("config", "json", "silent", "verbose")}
        log_to_stderr(verbose=bool(opts["verbose"]))
        return _dispatch(args, opts)
    except SaiError as exc:
        print(f"error: {printable(redact(str(exc)))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return reader_gone()
    except KeyboardInterrupt:
        return interrupted(writes_batches=args is not None and _writes_batches(args))


def _writes_batches(args: argparse.Namespace) -> bool:
    """Whether the command was an index run, which commits in batches (`sai`, sync, refresh)."""
    if args.command is None:
        return not (args.query_only or args.dry_run)
    return args.command in ("sync", "refresh")


def _check_args(args: argparse.Namespace) -> None:
    """Refuse text arguments the core would only see after indexing or loading a model."""
    query = getattr(args, "query", None)
    if query is not None:
        _check_utf8("the query", query)
        if not query.strip():
            raise UsageError("--query is empty; give a few words describing the code you want")
    if getattr(args, "code", None) is not None:
        _check_utf8("the --code snippet", args.code)
    min_score = getattr(args, "min_score", None)
    if args.command == "similar" and min_score is not None and not -1.0 <= min_score <= 1.0:
        raise UsageError(f"--min-score {min_score} is not a cosine similarity; give a value in [-1, 1]")


def _check_utf8(what: str, text: str) -> None:
    """Bytes that are not UTF-8 reach argv as lone surrogates (surrogateescape): refuse them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = printable(text[exc.start:exc.end])
        raise UsageError(
            f"{what} is not valid UTF-8 text (it holds the bytes {bad}); pass it in UTF-8"
        ) from None


def _load(args: argparse.Namespace) -> Project:
    root = getattr(args, "root", None)
    flags = {
        # a --root typed on the command line means a directory relative to where it was typed
        "root": str(Path.cwd() / root) if root else None, "ext": getattr(args, "ext", None),
        "chunker": getattr(args, "chunker", None), "embedder": getattr(args, "embedder", None),
        "model": getattr(args, "model", None), "collection": getattr(args, "collection", None),
        "backend": getattr(args, "backend", None),
    }
    config = load_config(config_file=getattr(args, "config", None), flags=flags, env=os.environ, cwd=Path.cwd())
    keep_secret(config.qdrant_api_key)
    if config.config_path is None and not getattr(args, "silent", False):
        print(f"note: no sai-cfg.yml found; using built-in defaults (root {printable(config.root)})",
              file=sys.stderr)
    store = open_store(config)
    # --recreate builds with the config's; --dry-run reads no index
    built = {} if getattr(args, "recreate", False) or getattr(args, "dry_run", False) else built_with(store)
    if built and (built.get("embedder"), built.get("model")) != (config.embedder, config.model):
        config = load_config(config_file=getattr(args, "config", None), flags=flags, env=os.environ,
                             cwd=Path.cwd(), index=built)
    return Project(config, store=store)


def _dispatch(args: argparse.Namespace, opts: dict[str, Any]) -> int:
    _check_args(args)
    if args.command == "init":
        return _init(args)
    project = _load(args)
    try:
        handler = _HANDLERS.get(args.command or "", _default)
        return handler(project, args, bool(opts["json"]))
    finally:
        project.close()


def _emit(as_json: bool, payload: Any, text: str) -> int:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n" if as_json else text)
    sys.stdout.flush()
    return 0


def _default(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    if args.query_only and not args.query:
        raise UsageError("--query-only needs --query")
    if args.explain and not args.query:
        raise UsageError("--explain needs --query; it says why each search hit ranked where it did")
    if args.files and not args.query:
        raise UsageError("--files needs --query; it groups the search hits by file")
    if args.dry_run:
        from sai.source.files import walk

        walked = walk(project.config)
        payload = {
            "root": str(project.config.root), "collection": project.config.collection,
            "would_index": [s.key for s in walked.included],
            "excluded": [{"path": key, "reason": reason} for key, reason in walked.excluded],
            "pruned_dirs": list(walked.pruned_dirs),
        }
        return _emit(as_json, payload, render.dry_run(walked, project.config))
    if not args.query_only:
        silent = bool(getattr(args, "silent", False))
        answered = []
        with ProgressReporter(sys.stderr, enabled=not silent) as progress:
            def answer_early(pending: int) -> None:
                # many texts to embed: answer from lexical and symbol evidence now, vectors after
                if args.query and args.mode != "semantic" and pending >= EARLY_ANSWER_PENDING:
                    progress.finish()
                    answered.append(_answer(project, args, as_json))
                    if not silent:
                        sys.stderr.write(f"answered while {pending} chunk(s) wait for a vector; embedding them now\n")

            report = indexer.index(project, recreate=args.recreate, progress=progress.update,
                                   on_searchable=answer_early)
        if not args.query:
            payload = {"indexed": index_json(report), "collection": project.config.collection}
            return _emit(as_json, payload, render.index_summary(report, project.config))
        if not silent and not as_json:
            sys.stderr.write(render.index_summary(report, project.config))
        if answered:
            return answered[0]
    return _answer(project, args, as_json)


EARLY_ANSWER_PENDING = 256  # `sai --query` answers before embedding when this many chunks wait (~10 s on a CPU)


def _answer(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    hits = search.search(project, args.query, limit=args.limit, mode=args.mode,
                         language=args.language, path_glob=args.path_glob, explain=args.explain,
                         group_by="file" if args.files else "chunk")
    text = render.query_results(args.query, hits, explain=args.explain)
    return _emit(as_json, hits_json(hits), text)


def _duplicates(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    check_glob(args.path_glob)
    seeds = _seed_paths(project, args)
    params = search.duplicate_params(
        project.config, min_score=args.min_score, min_cluster_size=args.min_cluster_size,
        top_k=args.top_k, metric=args.metric,
    )
    min_score, size, top_k = params.min_score, params.min_cluster_size, params.top_k
    clusters = search.find_duplicates(
        project, min_score=min_score, min_cluster_size=size, top_k=top_k,
        max_clusters=args.max_clusters, path_glob=args.path_glob, seed_paths=seeds, metric=params.metric,
    )
    payload = duplicates_json(clusters, min_score=min_score, min_cluster_size=size, top_k=top_k,
                              seeded=seeds is not None, metric=params.metric)
    text = render.duplicate_clusters(clusters, min_score=min_score, min_cluster_size=size, top_k=top_k)
    return _emit(as_json, payload, text)


def _seed_paths(project: Project, args: argparse.Namespace) -> list[str] | None:
    from sai.source.git import changed_files

    if args.files:
        return _file_keys(project, args.files)
    if args.since or args.staged:
        return changed_files(project.config.root, since=args.since, staged=args.staged)
    return None


def _similar(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    if args.code is not None and (args.path is not None or args.line is not None):
        raise UsageError("give either --code or --path with --line, not both")
    min_score = project.config.find_similar_min_score if args.min_score is None else args.min_score
    path = args.path
    if path is not None:
        path = key_for(project.config, path, root_relative=True, indexed=_IndexedKeys(project))
    hits = search.find_similar(project, code=args.code, path=path, line=args.line,
                               limit=args.limit, min_score=min_score)
    return _emit(as_json, hits_json(hits), render.similar_results(hits, min_score=min_score))


def _status(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    payload = status_json(search.status(project))
    return _emit(as_json, payload, render.status_lines(payload, location=project.config.index_location))


def _sync(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    paths = _file_keys(project, args.files) if args.files else None
    report = indexer.sync(project, since=args.since, staged=args.staged, paths=paths)
    return _emit(as_json, refresh_json(report, note_when_empty=True), render.sync_report(report))


def _refresh(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    report = indexer.refresh(project, _file_keys(project, args.paths))
    return _emit(as_json, refresh_json(report), render.sync_report(report))


def _file_keys(project: Project, paths: list[str]) -> list[str]:
    """Keys of the files the user named, relative to the cwd or to the root (as hits name them)."""
    indexed = _IndexedKeys(project)
    keys = []
    for path in paths:
        key = key_for(project.config, path, root_relative=True, indexed=indexed)
        if (project.config.root / key).is_dir():
            raise UsageError(f"path {path} is a directory; give files")
        keys.append(key)
    return keys


class _IndexedKeys:
    """The keys of the indexed files, read on first use: a path present on disk never needs them."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.keys: set[str] | None = None

    def __contains__(self, key: object) -> bool:
        if self.keys is None:
            store = self.project.store
            self.keys = set()
            if store.exists:
                with store.read() as reader:
                    self.keys = set(reader.files())
        return key in self.keys


def _read(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    path = args.path
    if path is not None:
        path = key_for(project.config, path, root_relative=True, indexed=_IndexedKeys(project))
    context = lookup.read_chunk(
        project, chunk_id=args.chunk_id, path=path, start_line=args.start_line, end_line=args.end_line,
        neighbours=args.neighbours, enclosing=args.enclosing,
    )
    return _emit(as_json, chunk_context_json(context), render.chunk_context(context))


def _symbol(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    found = lookup.find_symbol(project, args.name, language=args.language, path_glob=args.path_glob,
                               limit=args.limit)
    return _emit(as_json, definitions_json(found), render.definitions(args.name, found))


def _flush(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    existed = indexer.flush(project)
    name = project.config.collection
    text = f"deleted collection '{name}'\n" if existed else f"no collection '{name}' to delete\n"
    return _emit(as_json, {"collection": name, "deleted": existed}, text)


def _copy(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    from sai.indexing.copy import copy_index

    config = project.config
    if args.to == config.backend:
        raise UsageError(f"the index already lives on backend {args.to}; give --to with the other backend")
    source, target = project.store, open_store(config, backend=args.to)  # a local Qdrant opens once
    try:
        report = copy_index(source, target, collection=config.collection)
    finally:
        target.close()
    payload = {"collection": config.collection, "from": config.backend, "to": args.to,
               "location": target.location, "files": report.files, "chunks": report.chunks}
    text = (f"copied collection '{config.collection}' ({report.chunks} chunks of {report.files} files) "
            f"from {config.backend} to {args.to} at {printable(target.location)}\n")
    return _emit(as_json, payload, text)


def _mcp(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    if args.http is None and (args.token_file or args.allow_unauthenticated):
        raise UsageError("--token-file and --allow-unauthenticated apply to --http only; add --http HOST:PORT")
    if args.watch and not args.allow_write:
        raise UsageError("--watch re-indexes changed files, which needs --allow-write; add --allow-write")
    if not project.store.exists and not args.allow_write:
        raise SaiError(
            f"no index at {project.config.index_location}; run `sai` in the project first "
            "or start the server with --allow-write"
        )
    if args.serve_mcp is None:
        raise SaiError("this entry point has no MCP server; run `sai mcp` or `python -m sai mcp`")
    args.serve_mcp(project, allow_write=args.allow_write, allow_setup=args.allow_setup, http=args.http,
                   watch=args.watch, token_file=args.token_file, allow_unauthenticated=args.allow_unauthenticated)
    return 0


# ---------------------------------------------------------------- sai watch
def _watch(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    """Index, then keep the index fresh until Ctrl-C (exit 130) or SIGTERM (exit 0)."""
    import signal
    import threading

    from sai.indexing.watch import Watcher

    silent = bool(getattr(args, "silent", False))
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with ProgressReporter(sys.stderr, enabled=not silent) as progress:

            def report(event: Any) -> None:
                progress.finish()
                _watch_report(event, project=project, as_json=as_json, silent=silent)

            Watcher(project, report=report, stop=stop, progress=progress.update).run()
    except KeyboardInterrupt:
        print("watch: stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _watch_report(event: Any, *, project: Project, as_json: bool, silent: bool) -> None:
    """A watch report: text on stderr (errors even when --silent), JSON lines on stdout."""
    from sai.indexing.watch import BatchFailed, Indexed
    from sai.output.payloads import watch_failure_json, watch_json

    if isinstance(event, Indexed):
        if not silent:
            sys.stderr.write(render.index_summary(event.report, project.config))
            sys.stderr.write(f"watch: watching {printable(project.config.root)} for changes (Ctrl-C to stop)\n")
    elif isinstance(event, BatchFailed):
        sys.stderr.write(f"watch: error: {printable(event.error)}; its files are tried again with the next change\n")
        if as_json:
            _emit(True, watch_failure_json(event), "")
    else:
        if not silent:
            sys.stderr.write(render.watch_batch(event))
        if as_json:
            _emit(True, watch_json(event), "")
    sys.stderr.flush()


def _init(args: argparse.Namespace) -> int:
    from sai.cfg_template import TEMPLATE

    target = Path(args.output)
    if target.exists() and not args.force:
        raise SaiError(f"{target} already exists; pass --force to overwrite it")
    if not args.yes and sys.stdin.isatty():
        answer = input(f"write {target}? [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            raise SaiError(f"nothing written; answer y to write {target}, or pass --yes")
    try:
        target.write_text(TEMPLATE, encoding="utf-8")
    except OSError as exc:
        raise SaiError(f"cannot write {target}: {exc.strerror}; choose another --output") from exc
    except ValueError:  # an embedded NUL byte
        raise UsageError(f"--output {target} contains a NUL byte; choose another path") from None
    return _emit(bool(getattr(args, "json", False)), {"wrote": str(target)}, f"wrote {target}\n")


_HANDLERS = {
    "duplicates": _duplicates, "similar": _similar, "status": _status, "sync": _sync,
    "refresh": _refresh, "flush": _flush, "mcp": _mcp, "watch": _watch,
}
_HANDLERS.update({"read": _read, "symbol": _symbol, "copy": _copy})
