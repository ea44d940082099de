"""The `sai` command line's options: every command and flag, their choices from sai/models.py."""

from __future__ import annotations

import argparse

from sai.chunking.reference_tables import REFERENCE_KINDS
from sai.cli.options import count
from sai.duplicates.clusters import MAX_CLUSTERS
from sai.models import BACKENDS, CHUNKERS, EMBEDDERS, METRICS, MODES
from sai.output.budget import DEFAULT_TOKENS
from sai.query.calls import MAX_DEPTH

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
    p.add_argument("--backend", default=S, choices=BACKENDS, help="where the index lives (duckdb)")
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
    grouping = parser.add_mutually_exclusive_group()
    grouping.add_argument("--chunks", action="store_true",
                          help="one hit per chunk: a file's other chunks take places of their own")
    grouping.add_argument("--files", action="store_true",
                          help="one hit per file, its best chunk with the lines of its others (the default)")
    _add_budget(parser, "search")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_duplicates(sub.add_parser("duplicates", parents=[common], help="near-duplicate clusters"))
    _add_similar(sub.add_parser("similar", parents=[common], help="code similar to a snippet or chunk"))
    sub.add_parser("status", parents=[common], help="what the index holds")
    _add_seed(sub.add_parser("sync", parents=[common], help="re-index files git reports changed"))
    refresh = sub.add_parser("refresh", parents=[common], help="re-index the given files")
    refresh.add_argument("paths", nargs="+", metavar="PATH")
    sub.add_parser("flush", parents=[common], help="delete the collection")
    copy = sub.add_parser("copy", parents=[common], help="copy the index to the other backend (no embedding)")
    copy.add_argument("--to", required=True, choices=BACKENDS, help="the backend to copy into")
    init = sub.add_parser("init", parents=[common], help="write a commented sai-cfg.yml")
    init.add_argument("--yes", action="store_true", help="do not ask")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument("--output", default="sai-cfg.yml", metavar="PATH")
    _add_lookups(sub, common)
    _add_uses(sub, common)
    mcp = sub.add_parser("mcp", parents=[common], help="serve the MCP tools (stdio or --http)")
    mcp.add_argument("--allow-write", action="store_true", help="enable sai_refresh and sai_sync")
    mcp.add_argument("--allow-setup", action="store_true", help="let sai_prepare_mcp_setup run")
    mcp.add_argument("--http", metavar="HOST:PORT", help="Streamable HTTP at /mcp instead of stdio")
    mcp.add_argument("--token-file", metavar="PATH",
                     help="--http: require this file's bearer token (default: $SAI_MCP_TOKEN)")
    mcp.add_argument("--allow-unauthenticated", action="store_true",
                     help="--http: serve a non-loopback address without a token (warns)")
    mcp.add_argument("--tools", metavar="LIST",
                     help="serve only these tools: search,similar,duplicates,status,read,symbol,refresh,sync,setup")
    mcp.add_argument("--output-schemas", action="store_true",
                     help="publish each tool's outputSchema in tools/list (for clients that validate results)")
    _add_watch(sub, common, mcp)
    return parser


def _add_watch(sub: argparse._SubParsersAction, common: argparse.ArgumentParser,
               mcp: argparse.ArgumentParser) -> None:
    sub.add_parser("watch", parents=[common], help="index, then re-index files as they change")
    mcp.add_argument("--watch", action="store_true", help="re-index files as they change (needs --allow-write)")


def _add_budget(p: argparse.ArgumentParser, what: str) -> None:
    # suppressed: `sai --max-tokens N similar` keeps N (a subcommand's default would replace it)
    p.add_argument("--max-tokens", type=count, default=S, metavar="N",
                   help=f"answer budget in tokens, 4 characters each ({DEFAULT_TOKENS[what]})")


def _add_seed(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--since", metavar="REV", help="files changed since REV (default HEAD~1)")
    group.add_argument("--staged", action="store_true", help="files staged in git")
    group.add_argument("--file", nargs="+", metavar="PATH", dest="files", help="these files")


def _add_duplicates(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-score", type=float, metavar="F")
    p.add_argument("--min-cluster-size", type=count, metavar="N")
    p.add_argument("--top-k", type=count, metavar="N")
    p.add_argument("--max-clusters", type=count, default=MAX_CLUSTERS, metavar="N")
    p.add_argument("--path-glob", metavar="G")
    p.add_argument("--metric", choices=METRICS,
                   help="edge score: duplicate (copies: cosine and token shape, default), cosine (the "
                   "original's) or semantic (the same behaviour, however named)")
    _add_seed(p)
    _add_budget(p, "duplicates")


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
    _add_budget(read, "read")
    symbol = sub.add_parser("symbol", parents=[common], help="where a name is defined")
    symbol.add_argument("name", metavar="NAME", help="computeTotal, Cart.computeTotal, or the start of a name")
    symbol.add_argument("--language", metavar="L", help="only this language (name or extension)")
    symbol.add_argument("--path-glob", metavar="G", help="only files whose key matches this glob")
    symbol.add_argument("--limit", type=count, default=20, metavar="N", help="definitions to show (20)")
    _add_budget(symbol, "symbol")


def _add_uses(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`sai refs`, `sai callers`, `sai callees`, `sai impact`: following the code (query/references.py)."""
    refs = sub.add_parser("refs", parents=[common], help="where a name is used (calls, imports, types, ...)")
    refs.add_argument("name", metavar="NAME", help="total, Cart.total or pkg.func")
    refs.add_argument("--kind", action="append", choices=REFERENCE_KINDS, dest="kinds",
                      help="only uses of this kind (repeatable)")
    refs.add_argument("--language", metavar="L", help="only this language (name or extension)")
    refs.add_argument("--path-glob", metavar="G", help="only files whose key matches this glob")
    refs.add_argument("--limit", type=count, default=20, metavar="N", help="uses to show (20)")
    _add_budget(refs, "refs")
    for direction, what in (("callers", "the units calling a name"), ("callees", "what a name's definitions call")):
        calls = sub.add_parser(direction, parents=[common], help=what)
        calls.add_argument("name", metavar="NAME", help="total or Cart.total")
        calls.add_argument("--depth", type=count, default=1, metavar="N", help=f"levels (1, at most {MAX_DEPTH})")
        calls.add_argument("--limit", type=count, default=10, metavar="N", help="entries per level (10)")
        _add_budget(calls, "calls")
    impact = sub.add_parser("impact", parents=[common], help="units a git diff changes, their callers and copies")
    impact.add_argument("--since", metavar="REV", help="diff against REV (default HEAD: the working tree's edits)")
    impact.add_argument("--limit", type=count, default=10, metavar="N", help="changed units to show (10)")
    _add_budget(impact, "impact")


def _add_similar(p: argparse.ArgumentParser) -> None:
    p.add_argument("--code", metavar="TEXT", help="snippet to compare")
    p.add_argument("--path", metavar="P", help="file of an indexed chunk")
    p.add_argument("--line", type=int, metavar="N", help="any line inside that chunk")
    p.add_argument("--limit", type=count, default=8, metavar="N")
    p.add_argument("--min-score", type=float, metavar="F")
    _add_budget(p, "similar")
