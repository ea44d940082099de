"""What SAI's MCP surface costs an agent: the size of `tools/list` and of a default search answer.

An agent pays for every tool definition on every turn, and for every answer it reads. This starts
the real server (`python -m sai mcp`, stdio, a real client session) over a snapshot of a small tree
(default: this repository's `sai/` package) indexed with the Ollama stand-in of
tests/ollama_standin.py (`--embedder local` uses all-MiniLM-L6-v2 instead), and prints:

- per tool and in total, the characters and tokens (4 characters a token) of the JSON tool
  definitions `tools/list` returns, split into description, inputSchema and outputSchema;
- a lexical routing check over benchmarks/data/mcp_routing.json: for each task prompt, the
  intended tool's description must hold every cue word of the prompt and more of them than any
  other tool's description. A proxy for "the description leads to the right tool", not a test
  with a model;
- the size of `sai_search_code` answers (the JSON text an agent reads), with default arguments
  with include_text, and with limit 50, over queries made from the tree's function names.

    .venv/bin/python benchmarks/mcp_surface.py [--tree DIR] [--tools search,read,symbol]
        [--queries 20] [--embedder ollama|local]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent
ROUTING = Path(__file__).resolve().parent / "data" / "mcp_routing.json"
from mcp_load import build_index, corpus_queries, standin, write_config  # noqa: E402  (mcp_load.py's stand-in, config, index)

from sai.models import EMBEDDERS  # noqa: E402

CHARS_PER_TOKEN = 4


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="sai-mcp-surface-") as tmp, standin(args.embedder) as url:
        tree = Path(shutil.copytree(args.tree.resolve(), Path(tmp) / "tree",
                                    ignore=shutil.ignore_patterns("__pycache__", ".index")))
        config = write_config(Path(tmp), tree, args.embedder)
        env = {"OLLAMA_HOST": url} if url else {}
        build_index(config, env)
        queries = corpus_queries(tree, args.queries)
        flags = (["--tools", args.tools] if args.tools else []) + (["--output-schemas"] if args.output_schemas else [])
        tools, answers = anyio.run(session, config, env, flags, queries)
    report_tools(tools)
    failures = report_routing(tools)
    report_answers(answers)
    return 1 if failures else 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO / "sai")
    parser.add_argument("--tools", help="passed to `sai mcp --tools` (default: all tools)")
    parser.add_argument("--output-schemas", action="store_true", help="passed to `sai mcp` (if it knows it)")
    parser.add_argument("--queries", type=int, default=20, help="default searches measured")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="ollama")
    return parser.parse_args()


async def session(
    config: Path, env: dict[str, str], flags: list[str], queries: list[str]
) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """The tool definitions as tools/list sends them, and the text length of each search answer
    (default arguments, and with include_text)."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "sai", "mcp", "--config", str(config), *flags],
                                   env={**env, "PYTHONPATH": str(REPO)})
    with _server_log(Path(config).parent / "server.log") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            listed = await client.list_tools()
            tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
            print(f"initialize instructions: {len(client.instructions or ''):,} characters")
            answers: dict[str, list[int]] = {"default": [], "include_text": [], "limit 50": []}
            if any(t["name"] == "sai_search_code" for t in tools):
                for query in queries:
                    for kind, extra in (("default", {}), ("include_text", {"include_text": True}),
                                        ("limit 50", {"limit": 50})):
                        result = await client.call_tool("sai_search_code", {"query": query, **extra})
                        answers[kind].append(len(result.content[0].text))
    return tools, answers


@contextlib.contextmanager
def _server_log(path: Path) -> Iterator[Any]:
    """The server's stderr, printed when the session fails (the temporary directory goes)."""
    with path.open("w+", encoding="utf-8") as log:
        try:
            yield log
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read())
            raise


def _chars(value: Any) -> int:
    return 0 if value is None else len(json.dumps(value, ensure_ascii=False))


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def report_tools(tools: list[dict[str, Any]]) -> None:
    total = _chars(tools)
    print(f"\ntools/list: {len(tools)} tools, {total:,} characters = {_tokens(total):,} tokens "
          f"(JSON of the tools array, {CHARS_PER_TOKEN} characters a token)")
    print(f"  {'tool':<24} {'chars':>7} {'tokens':>7}   {'descr':>6} {'input':>6} {'output':>6}")
    for tool in tools:
        whole = _chars(tool)
        print(f"  {tool['name']:<24} {whole:>7,} {_tokens(whole):>7,}   "
              f"{len(tool.get('description') or ''):>6,} {_chars(tool.get('inputSchema')):>6,} "
              f"{_chars(tool.get('outputSchema')):>6,}")
    facing = sum(_chars({k: t.get(k) for k in ("name", "description", "inputSchema")}) for t in tools)
    print(f"  name+description+inputSchema only (what an API tool definition holds): "
          f"{facing:,} characters = {_tokens(facing):,} tokens")


def report_routing(tools: list[dict[str, Any]]) -> int:
    """Each prompt's cues against every description; returns the number of prompts routed wrong."""
    descriptions = {t["name"]: t.get("description") or "" for t in tools}
    prompts = json.loads(ROUTING.read_text(encoding="utf-8"))["prompts"]
    failures = 0
    print(f"\nrouting (lexical proxy, {ROUTING.name}): ", end="")
    lines = []
    for item in prompts:
        if item["tool"] not in descriptions:
            continue
        hits = {name: sum(_holds(text, cue) for cue in item["cues"]) for name, text in descriptions.items()}
        mine = hits[item["tool"]]
        rival = max((n for name, n in hits.items() if name != item["tool"]), default=0)
        missing = [cue for cue in item["cues"] if not _holds(descriptions[item["tool"]], cue)]
        if missing or mine <= rival:
            failures += 1
            best = max(hits, key=lambda name: hits[name])
            lines.append(f"  MISS {item['prompt']!r} -> {item['tool']}: missing {missing}, "
                         f"{mine} cue(s) against {rival} ({best})")
    checked = sum(item["tool"] in descriptions for item in prompts)
    print(f"{checked - failures}/{checked} prompts lead to their tool")
    print("\n".join(lines) if lines else "", end="\n" if lines else "")
    return failures


def _holds(text: str, cue: str) -> bool:
    return re.search(r"\b" + re.escape(cue.lower()), text.lower()) is not None


def report_answers(answers: dict[str, list[int]]) -> None:
    if not answers["default"]:
        print("\nsearch answers: sai_search_code is not served")
        return
    print()
    for kind, sizes in answers.items():
        mean, top = statistics.mean(sizes), max(sizes)
        print(f"sai_search_code answer, {kind}, over {len(sizes)} queries (JSON text): mean "
              f"{mean:,.0f} characters = {_tokens(round(mean)):,} tokens, max {top:,} = {_tokens(top):,} tokens")


if __name__ == "__main__":
    raise SystemExit(main())
