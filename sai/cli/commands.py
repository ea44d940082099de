"""The `sai` command: parse, load config once, call the core, print; errors become one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from sai.cli.exits import interrupted, interrupts_redelivered, log_to_stderr, reader_gone
from sai.cli.options import check_options
from sai.cli.parser import build_parser
from sai.config import load_config
from sai.duplicates.clusters import DuplicateParams, duplicate_report
from sai.errors import SaiError, UsageError, keep_secret, redact
from sai.impact import impact
from sai.indexing import indexer
from sai.output import payloads, render, uses
from sai.output.budget import DEFAULT_TOKENS, Budget, Cut, Spelling
from sai.output.progress import ProgressReporter
from sai.output.render import printable
from sai.project import Project, built_with, file_asks
from sai.query import calls, lookup
from sai.query.references import find_references
from sai.query.search import check_query, search
from sai.query.similar import Spelling as SimilarSpelling
from sai.query.similar import check_threshold, find_similar, similar_request
from sai.query.status import status
from sai.source.files import key_for
from sai.store import open_store

__all__ = ["build_parser", "main"]
FLAGS = SimilarSpelling(code="--code", location="--path with --line", min_score="--min-score")  # sai similar's
BUDGET = Spelling(budget="--max-tokens", read="`sai read CHUNK_ID`", follow="`sai {direction} SYMBOL`")


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
        with interrupts_redelivered():
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
        check_query(query, name="--query")
    if getattr(args, "code", None) is not None:
        _check_utf8("the --code snippet", args.code)
    if args.command == "similar" and args.min_score is not None:
        check_threshold(args.min_score, name=FLAGS.min_score)


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
    keep_secret(config.qdrant.api_key)
    if config.config_path is None and not getattr(args, "silent", False):
        print(f"note: no sai-cfg.yml found; using built-in defaults (root {printable(config.root)})",
              file=sys.stderr)
    store = open_store(config)
    # --recreate builds with the config's; --dry-run reads no index
    built = {} if getattr(args, "recreate", False) or getattr(args, "dry_run", False) else built_with(store)
    if built and (built.get("embedder"), built.get("model")) != (config.embedder, config.model):
        asked = config
        config = load_config(config_file=getattr(args, "config", None), flags=flags, env=os.environ,
                             cwd=Path.cwd(), index=built)
        config = replace(config, config_asks=file_asks(asked, config))
        if config.config_asks and not getattr(args, "silent", False):
            print(render.model_mismatch_note(config, config.config_asks), file=sys.stderr)
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
    sys.stdout.write(payloads.json_text(payload) + "\n" if as_json else text)
    sys.stdout.flush()
    return 0


def _budget(args: argparse.Namespace, what: str) -> Budget:
    """The command's --max-tokens (its default from output/budget.py)."""
    return Budget(getattr(args, "max_tokens", None) or DEFAULT_TOKENS[what], BUDGET)


def _emit_fitted(as_json: bool, payload: Callable[[], Any], text: Callable[[], str]) -> int:
    """Print the answer fitted to its budget: as JSON or as text, whichever is printed."""
    return _emit(True, payload(), "") if as_json else _emit(False, None, text())


def _default(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    if args.query_only and not args.query:
        raise UsageError("--query-only needs --query")
    if args.explain and not args.query:
        raise UsageError("--explain needs --query; it says why each search hit ranked where it did")
    if (args.files or args.chunks) and not args.query:
        flag = "--files" if args.files else "--chunks"
        raise UsageError(f"{flag} needs --query; it says how the search hits are grouped")
    if args.dry_run:
        from sai.source.files import walk

        walked, config = walk(project.config.walk), project.config
        plan = payloads.dry_run_json(walked, root=str(config.root), collection=config.collection)
        return _emit(as_json, plan, render.dry_run(walked, config))
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
            counts = payloads.index_run_json(report, collection=project.config.collection)
            return _emit(as_json, counts, render.index_summary(report, project.config))
        if not silent and not as_json:
            sys.stderr.write(render.index_summary(report, project.config))
        if answered:
            return answered[0]
    return _answer(project, args, as_json)


EARLY_ANSWER_PENDING = 256  # `sai --query` answers before embedding when this many chunks wait (~10 s on a CPU)


def _answer(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    hits = search(project, args.query, limit=args.limit, mode=args.mode,
                         language=args.language, path_glob=args.path_glob, explain=args.explain,
                         group_by="chunk" if args.chunks else "file")
    budget = _budget(args, "search")
    return _emit_fitted(as_json, lambda: payloads.fitted_hits_json(hits, budget=budget), lambda: payloads.fit_hits(
        hits, lambda cut: render.query_results(args.query, hits, explain=args.explain, cut=cut, budget=budget),
        size=len, budget=budget))


def _duplicates(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    params = DuplicateParams.resolve(project.config, min_score=args.min_score, min_cluster_size=args.min_cluster_size,
                                     top_k=args.top_k, metric=args.metric, max_clusters=args.max_clusters)
    report = duplicate_report(project, params, path_glob=args.path_glob, seed_paths=_seed_paths(project, args))
    budget = _budget(args, "duplicates")

    def text(cut: Cut) -> str:
        return render.duplicate_clusters(report.clusters, min_score=params.min_score, cut=cut, budget=budget,
                                         min_cluster_size=params.min_cluster_size, top_k=params.top_k)

    return _emit_fitted(as_json, lambda: payloads.fitted_duplicates_json(report, budget=budget),
                        lambda: payloads.fit_clusters(report.clusters, text, size=len, budget=budget))


def _seed_paths(project: Project, args: argparse.Namespace) -> list[str] | None:
    from sai.source.git import changed_files

    if args.files:
        return _file_keys(project, args.files)
    if args.since or args.staged:
        return changed_files(project.config.root, since=args.since, staged=args.staged)
    return None


def _similar(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    asked = similar_request(project.config, code=args.code, path=args.path, line=args.line,
                            min_score=args.min_score, spelling=FLAGS)
    path = None
    if asked.path is not None:
        path = key_for(project.config.root, asked.path, root_relative=True, indexed=_IndexedKeys(project))
    hits = find_similar(project, code=asked.code, path=path, line=asked.line,
                        limit=args.limit, min_score=asked.min_score)
    budget = _budget(args, "similar")
    return _emit_fitted(as_json, lambda: payloads.fitted_hits_json(hits, budget=budget), lambda: payloads.fit_hits(
        hits, lambda cut: render.similar_results(hits, min_score=asked.min_score, cut=cut, budget=budget),
        size=len, budget=budget))


def _status(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    payload = payloads.status_json(status(project))
    return _emit(as_json, payload, render.status_lines(payload, location=project.config.index_location))


def _sync(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    paths = _file_keys(project, args.files) if args.files else None
    report = indexer.sync(project, since=args.since, staged=args.staged, paths=paths)
    return _emit(as_json, payloads.refresh_json(report, note_when_empty=True), render.sync_report(report))


def _refresh(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    report = indexer.refresh(project, _file_keys(project, args.paths))
    return _emit(as_json, payloads.refresh_json(report), render.sync_report(report))


def _file_keys(project: Project, paths: list[str]) -> list[str]:
    """Keys of the files the user named, relative to the cwd or to the root (as hits name them)."""
    indexed = _IndexedKeys(project)
    keys = []
    for path in paths:
        key = key_for(project.config.root, path, root_relative=True, indexed=indexed)
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
        path = key_for(project.config.root, path, root_relative=True, indexed=_IndexedKeys(project))
    context = lookup.read_chunk(
        project, chunk_id=args.chunk_id, path=path, start_line=args.start_line, end_line=args.end_line,
        neighbours=args.neighbours, enclosing=args.enclosing,
    )
    budget = _budget(args, "read")
    return _emit_fitted(as_json, lambda: payloads.fitted_chunk_context_json(context, budget=budget),
                        lambda: payloads.fit_context(context, lambda cut: render.chunk_context(
                            context, cut=cut, budget=budget), size=len, budget=budget))


def _symbol(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    found = lookup.find_symbol(project, args.name, language=args.language, path_glob=args.path_glob,
                               limit=args.limit)
    budget = _budget(args, "symbol")
    return _emit_fitted(as_json, lambda: payloads.fitted_definitions_json(found, budget=budget),
                        lambda: payloads.fit_definitions(found, lambda cut: render.definitions(
                            args.name, found, cut=cut, budget=budget), size=len, budget=budget))


def _flush(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    existed = indexer.flush(project)
    name = project.config.collection
    text = f"deleted collection '{name}'\n" if existed else f"no collection '{name}' to delete\n"
    return _emit(as_json, payloads.flush_json(name, deleted=existed), text)


def _copy(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    from sai.indexing.copy import copy_to

    report = copy_to(project, args.to)
    text = (f"copied collection '{project.config.collection}' ({report.chunks} chunks of {report.files} files) "
            f"from {report.source} to {report.target} at {printable(report.location)}\n")
    return _emit(as_json, payloads.copy_json(report, collection=project.config.collection), text)


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
                   watch=args.watch, token_file=args.token_file, allow_unauthenticated=args.allow_unauthenticated,
                   tools=args.tools, output_schemas=args.output_schemas)
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

    if isinstance(event, Indexed):
        if not silent:
            sys.stderr.write(render.index_summary(event.report, project.config))
            sys.stderr.write(f"watch: watching {printable(project.config.root)} for changes (Ctrl-C to stop)\n")
    elif isinstance(event, BatchFailed):
        sys.stderr.write(f"watch: error: {printable(event.error)}; its files are tried again with the next change\n")
        if as_json:
            _emit(True, payloads.watch_failure_json(event), "")
    else:
        if not silent:
            sys.stderr.write(render.watch_batch(event))
        if as_json:
            _emit(True, payloads.watch_json(event), "")
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
    return _emit(bool(getattr(args, "json", False)), payloads.init_json(str(target)), f"wrote {target}\n")


_HANDLERS = {
    "duplicates": _duplicates, "similar": _similar, "status": _status, "sync": _sync,
    "refresh": _refresh, "flush": _flush, "mcp": _mcp, "watch": _watch,
}
_HANDLERS.update({"read": _read, "symbol": _symbol, "copy": _copy})


def _refs(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    found = find_references(project, args.name, limit=args.limit, kinds=args.kinds, language=args.language,
                            path_glob=args.path_glob)
    budget = _budget(args, "refs")
    return _emit_fitted(as_json, lambda: uses.fitted_uses_json(found, budget=budget),
                        lambda: uses.fitted_uses_text(found, budget=budget))


def _calls(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    follow = calls.callers if args.command == "callers" else calls.callees
    tree = follow(project, args.name, depth=args.depth, limit=args.limit)
    budget = _budget(args, "calls")
    return _emit_fitted(as_json, lambda: uses.fitted_call_tree_json(tree, budget=budget),
                        lambda: uses.fitted_call_tree_text(tree, budget=budget))


def _impact(project: Project, args: argparse.Namespace, as_json: bool) -> int:
    found = impact(project, since=args.since, limit=args.limit)
    budget = _budget(args, "impact")
    return _emit_fitted(as_json, lambda: uses.fitted_impact_json(found, budget=budget),
                        lambda: uses.fitted_impact_text(found, budget=budget))


_HANDLERS.update({"refs": _refs, "callers": _calls, "callees": _calls, "impact": _impact})
