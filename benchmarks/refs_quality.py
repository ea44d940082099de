"""References against jedi, and what storing them costs.

Quality (per repository given, Python files only): SAI indexes a copy of the tree (a hash
embedder in process: vectors play no part in references) and, for `--targets` definitions drawn
with a fixed seed (functions, methods and classes of the repository, tests included), answers
`sai refs NAME` with the name an agent asks for that one definition: its qualified symbol
(`Class.method`), and for a top-level definition `module.name` (`_api.head`: asked bare, `head`
means every definition's uses, `Client.head`'s too; see asked_name). jedi's
`Script.get_references(scope="project")` on the definition's name is the ground truth. Both sides
leave out definitions (jedi's `is_definition()`) and import statements (jedi counts an imported
name as a definition of the importing module; SAI as a use of kind `import`), and a use is
matched by (path, line, column). Printed:

- precision and recall of every use SAI returns, resolved and ambiguous alike: a use SAI cannot
  tie to one definition is returned marked `resolved: false` (never guessed), and here it counts
  as returned, so an ambiguous use that is not the target's is a false positive;
- the same for the resolved uses only (`resolved: true`): what SAI claims to know;
- the bare name asked (`head`): every use of the name, whatever definition it means;
- resolved precision against jedi's `goto` of the same position (is the definition SAI names the
  one jedi names?), over every resolved call of the repository.

Cost (`--cost DIR`): the tree's Python files indexed twice into fresh directories, with
`index_references` on and off: wall time of index() and the size of the index directory. The
embedder is the hash stand-in, so the time is SAI's own CPU work: the relative cost is the
worst case (a real embedder's time dilutes it).

TypeScript (`--typescript DIR`, its src/) and JavaScript (`--javascript DIR`, its src/ or lib/):
the same comparison against the TypeScript language service's findReferences (benchmarks/ts_refs.js,
the `typescript` npm package: `npm install typescript@5` in the directory --ts-module names).

Latency (`--latency DIR`): an index of DIR built once with references (cached beside the
repositories), then `find_references` and `callers` for 200 names drawn from its definitions:
p50 and p95 in ms, warm.

    STDLIB=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
    .venv/bin/python benchmarks/refs_quality.py /tmp/sai-bench/refs/pallets+click /tmp/sai-bench/refs/encode+httpx \
        --targets 60 --cost /tmp/sai-bench/refs/encode+httpx --latency "$STDLIB"
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import jedi
import numpy as np
from _lsp import LanguageServer

from sai.config import load_config
from sai.indexing.indexer import index
from sai.models import Definition
from sai.project import Project
from sai.query.calls import callers
from sai.query.references import find_references, open_references, uses_of

DIM = 64
_IMPORT_LINE = re.compile(r"^\s*(?:import\s|from\s+\S+\s+import\s|export\s.*\sfrom\s)")
TS_MODULE = "/tmp/sai-bench/ts-tools/node_modules/typescript"


class HashEmbedder:
    """Deterministic vectors from a text's CRC: no model, no CPU to speak of."""

    name = "ollama"
    model = "nomic-embed-text"
    with_chunks = False
    served = False

    def runs_elsewhere(self) -> bool:
        return False

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM) for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), DIM)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def copy_python(source: Path, target: Path) -> int:
    """The .py files of `source` (no .git, no site-packages) into `target`; returns how many."""
    count = 0
    for path in sorted(source.rglob("*.py")):
        rel = path.relative_to(source)
        if ".git" in rel.parts or "site-packages" in rel.parts:
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target / rel)
        count += 1
    return count


def open_project(root: Path, *, references: bool = True, extensions: str = "py") -> Project:
    (root / "sai-cfg.yml").write_text(f"ext: [{extensions}]\nindex_references: {str(references).lower()}\n",
                                      encoding="utf-8")
    return Project(load_config(env={}, cwd=root, config_file=str(root / "sai-cfg.yml")), embedder=HashEmbedder())


def definitions(reader: object) -> list[Definition]:
    """Every stored unit with a symbol, its first chunk's lines (a window's are enough to find its name)."""
    rows, _, _ = reader.all_chunks()  # type: ignore[attr-defined]
    first: dict[tuple[str, str], Definition] = {}
    for row in rows:
        if row.symbol and (row.path, row.symbol) not in first:
            first[(row.path, row.symbol)] = Definition(row.symbol, row.kind, row.path, row.start_line, row.end_line,
                                                       row.language, row.chunk_id, "exact")
    _HOMES.clear()
    for found in first.values():
        _HOMES.setdefault(found.symbol.rsplit(".", 1)[-1], []).append(found)
    return list(first.values())


def targets_of(project: Project, count: int) -> list[Definition]:
    """`count` definitions (function, method, class), fixed seed, one per symbol."""
    with open_references(project) as reader:
        every = definitions(reader)
    chosen = {d.symbol: d for d in every if d.kind in ("function", "method", "class", "constructor")}
    picked = sorted(chosen.values(), key=lambda d: (d.path, d.start_line))
    random.Random(20261204).shuffle(picked)
    return picked[:count]


def jedi_uses(root: Path, project: jedi.Project, target: Definition) -> set[tuple[str, int, int]]:
    """jedi's references of the name `target` defines, without definitions and import lines."""
    path = root / target.path
    lines = path.read_text(encoding="utf-8").split("\n")
    name = target.symbol.rsplit(".", 1)[-1]
    for number in range(target.start_line, min(target.end_line, len(lines)) + 1):
        text = lines[number - 1]
        at = _name_column(text, name)
        if at is not None:
            break
    else:
        return set()
    script = jedi.Script(path=str(path), project=project)
    found = set()
    for ref in script.get_references(number, at, scope="project"):
        if ref.is_definition() or ref.module_path is None:
            continue
        key = Path(ref.module_path).resolve().relative_to(root.resolve()).as_posix()
        if not _import_line(root / key, ref.line):
            found.add((key, ref.line, ref.column))
    return found


def _name_column(text: str, name: str) -> int | None:
    for keyword in ("def ", "class "):
        at = text.find(keyword + name)
        if at >= 0 and not text[at + len(keyword) + len(name):][:1].isidentifier():
            return at + len(keyword)
    return None


_LINES: dict[Path, set[int]] = {}
# a statement importing or re-exporting names, over as many lines as its braces or parentheses take
_IMPORT_STATEMENT = re.compile(r"^[ \t]*(?:(?:import|export)\b[^;'\"]*?\bfrom\s*['\"][^'\"]*['\"]"
                               r"|from\s+\S+\s+import\s*\([^)]*\)|import\s+\{[^}]*\})", re.M)


def _import_line(path: Path, line: int) -> bool:
    """Whether `line` of `path` belongs to an import statement (a multi-line one too)."""
    if path not in _LINES:
        text = path.read_text(encoding="utf-8")
        lines = {number for number, row in enumerate(text.split("\n"), start=1) if _IMPORT_LINE.match(row)}
        for found in _IMPORT_STATEMENT.finditer(text):
            first = text.count("\n", 0, found.start()) + 1
            lines.update(range(first, first + found.group().count("\n") + 1))
        _LINES[path] = lines
    return line in _LINES[path]


def asked_name(target: Definition, homes: list[str]) -> str:
    """The name an agent asks for `target`: its symbol (`Class.method`), and for a top-level
    definition its module's path before it, as many trailing segments as tell its file from the
    other files (`homes`) defining the name (`_api.head`; `aws-lambda.types.Handler`). C has one
    namespace for functions: a name is asked bare there, unless two source files define it
    (`static` functions of the same name)."""
    if "." in target.symbol:
        return target.symbol
    if target.language in ("c", "cpp"):  # one namespace: `add` is asked as is, unless two .c files define it
        sources = [home for home in homes if home.endswith((".c", ".cc", ".cpp"))]
        if len(sources) < 2:
            return target.symbol
    mine = _module_path(target.path)
    others = [_module_path(home) for home in homes if home != target.path]
    for depth in range(1, len(mine) + 1):
        tail = mine[-depth:]
        if not any(other[-depth:] == tail for other in others):
            return ".".join(tail + [target.symbol])
    return ".".join(mine + [target.symbol])


def _module_path(key: str) -> list[str]:
    if key.endswith(".go") and "/" in key:  # a Go package is its folder
        return key.split("/")[:-1]
    parts = key.rsplit(".", 1)[0].split("/")
    return parts[:-1] if parts[-1] in ("__init__", "index", "mod") and len(parts) > 1 else parts


def sai_uses(reader: object, target: Definition, root: Path, *, bare: bool = False
             ) -> tuple[set[tuple[str, int, int]], set[tuple[str, int, int]]]:
    """(every use, the uses resolved to `target`) SAI gives for asked_name(target) (`bare`: for its
    last name alone), import uses and import lines left out."""
    every, resolved = set(), set()
    last = target.symbol.rsplit(".", 1)[-1]
    homes = [d.path for d in _HOMES.get(last, ()) if "." not in d.symbol]
    asked = last if bare else asked_name(target, homes)
    for use in uses_of(reader, asked):  # type: ignore[arg-type]
        ref = use.reference
        if ref.kind == "import" or _import_line(root / ref.path, ref.line):
            continue
        every.add((ref.path, ref.line, ref.column))
        if use.target is not None and (use.target.path, use.target.symbol) == (target.path, target.symbol):
            resolved.add((ref.path, ref.line, ref.column))
    return every, resolved


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.3f}" if whole else "n/a"


def quality(source: Path, work: Path, count: int) -> None:
    root = work / source.name
    files = copy_python(source, root)
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    project = open_project(root)
    index(project)
    targets = targets_of(project, count)
    # a src/ layout's package is imported by its name: jedi must look there too
    jproject = jedi.Project(path=str(root), added_sys_path=[str(root / "src")] if (root / "src").is_dir() else [])
    totals = dict.fromkeys(("jedi", "sai", "hit", "resolved", "resolved_hit", "bare", "bare_hit"), 0)
    started = time.perf_counter()
    with open_references(project) as reader:
        for target in targets:
            _add(totals, jedi_uses(root, jproject, target), target, reader, root)
        goto = resolved_against_goto(root, jproject, reader)
    project.close()
    print(f"{source.name} @ {commit.strip()[:12]}: {files} .py files, {len(targets)} targets "
          f"(jedi {time.perf_counter() - started:.0f} s)")
    print_totals(totals, "jedi")
    print(f"  resolved calls vs jedi goto: {goto[0]} of {goto[1]} name the same definition "
          f"({ratio(goto[0], goto[1])}; {goto[2]} where jedi finds none in the repository left out)")


def print_totals(totals: dict[str, int], truth: str) -> None:
    print(f"  uses: {truth} {totals['jedi']}, SAI {totals['sai']} (resolved to the target {totals['resolved']})")
    print(f"  all SAI uses:      precision {ratio(totals['hit'], totals['sai'])}  "
          f"recall {ratio(totals['hit'], totals['jedi'])}")
    print(f"  bare name asked:   precision {ratio(totals['bare_hit'], totals['bare'])}  "
          f"recall {ratio(totals['bare_hit'], totals['jedi'])}")
    print(f"  resolved only:     precision {ratio(totals['resolved_hit'], totals['resolved'])}  "
          f"recall {ratio(totals['resolved_hit'], totals['jedi'])}")


def ts_quality(source: Path, work: Path, count: int, module: str, *, language: str = "typescript") -> None:
    """The same comparison on TypeScript (its src/) or JavaScript (its src/, else lib/), against
    the language service's findReferences (which reads JavaScript too: allowJs)."""
    root = work / source.name
    keys = []
    ext = "ts" if language == "typescript" else "js"
    folder = source / "src" if (source / "src").is_dir() or ext == "ts" else source / "lib"
    for path in sorted(folder.rglob(f"*.{ext}")):
        if path.name.endswith((".test.ts", ".d.ts", ".test.js", ".spec.js", ".min.js")):
            continue
        key = path.relative_to(source).as_posix()
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, root / key)
        keys.append(key)
    project = open_project(root, extensions=ext)
    index(project)
    wanted = ("function", "method", "class", "interface", "type")
    with open_references(project) as reader:
        every = [d for d in definitions(reader) if d.kind in wanted]
    random.Random(20261204).shuffle(every)
    placed = [(d, at) for d in every for at in [_ts_name(root, d)] if at is not None][:count]
    request = {"root": str(root), "files": keys, "typescript": module,
               "targets": [{"file": d.path, "line": line, "column": column} for d, (line, column) in placed]}
    started = time.perf_counter()
    answer = json.loads(subprocess.run(["node", str(Path(__file__).with_name("ts_refs.js"))], input=json.dumps(request),
                                       capture_output=True, text=True, check=True).stdout)
    totals = dict.fromkeys(("jedi", "sai", "hit", "resolved", "resolved_hit", "bare", "bare_hit"), 0)
    with open_references(project) as reader:
        for (target, _), found in zip(placed, answer, strict=True):
            truth = {(f, line, col) for f, line, col, definition in found
                     if not definition and not _import_line(root / f, line)}
            _add(totals, truth, target, reader, root)
    project.close()
    print(f"{source.name} ({language}, {folder.name}/ without tests): {len(keys)} files, {len(placed)} targets "
          f"(language service {time.perf_counter() - started:.0f} s)")
    print_totals(totals, "TypeScript")


_HOMES: dict[str, list[Definition]] = {}  # every definition by its last name: where a top-level name lives
_MISSES: list[dict[str, object]] = []  # with --misses: every false positive and negative, for reading


def lsp_quality(source: Path, work: Path, count: int, language: str) -> None:
    """The same comparison on Go (against gopls) or C (against clangd), test files left out: every
    file opened in the server, then references of each target's name (declaration left out)."""
    root = work / source.name
    suffixes, command = {"go": ((".go",), ["gopls"]),
                         "c": ((".c", ".h"), ["clangd", "--background-index=false"])}[language]
    keys = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        tests = {"test", "tests", "testdata"} & set(rel.parts) or path.name.endswith("_test.go")
        if path.suffix not in suffixes or ".git" in rel.parts or tests or not path.is_file():
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, root / rel)
        keys.append(rel.as_posix())
    if language == "go":
        shutil.copy2(source / "go.mod", root / "go.mod")
    else:
        (root / "compile_flags.txt").write_text("-xc\n-std=gnu11\n-I.\n", encoding="utf-8")
    project = open_project(root, extensions=",".join(s.lstrip(".") for s in suffixes))
    index(project)
    wanted = ("function", "method", "class", "interface", "type", "struct", "enum")
    with open_references(project) as reader:
        every = [d for d in definitions(reader) if d.kind in wanted and d.path.endswith(suffixes)]
    random.Random(20261204).shuffle(every)
    placed = [(d, at) for d in every for at in [_ts_name(root, d)] if at is not None][:count]
    started = time.perf_counter()
    answers, broken = _server_answers(command, root, keys, placed, wait=language == "c")
    failed = sum(answer is None for answer in answers)
    placed_kept = [(d, at) for (d, at), answer in zip(placed, answers, strict=True)
                   if d.path not in broken and answer is not None]
    totals = dict.fromkeys(("jedi", "sai", "hit", "resolved", "resolved_hit", "bare", "bare_hit"), 0)
    with open_references(project) as reader:
        for (target, _), found in zip(placed, answers, strict=True):
            if target.path not in broken and found is not None:
                _add(totals, {f for f in found if not _import_line(root / f[0], f[1])}, target, reader, root,
                     left_out=broken)
    project.close()
    truth = {"go": "gopls", "c": "clangd"}[language]
    print(f"{source.name} ({language}, tests left out): {len(keys)} files ({len(broken)} that do not compile here "
          f"left out on both sides), {len(placed_kept)} targets ({failed} more the server failed on left out; "
          f"{truth} {time.perf_counter() - started:.0f} s)")
    print_totals(totals, truth)


def _server_answers(command: list[str], root: Path, keys: list[str], placed: list[tuple[Definition, tuple[int, int]]],
                    *, wait: bool) -> tuple[list[set[tuple[str, int, int]] | None], set[str]]:
    """The server's references of each placed target (None where it died on one: gopls 0.5 panics
    on some; it is started again for the next), and the files it could not compile."""
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off", GO111MODULE="on", HOME=str(root.parent))
    answers: list[set[tuple[str, int, int]] | None] = []
    broken: set[str] = set()
    server = None
    for target, (line, column) in placed:
        if server is None:
            server = LanguageServer(command, root, env=env)
            server.open(keys)
            if wait:
                server.wait_parsed(keys)
        try:
            answers.append(server.references(target.path, line, column))
            broken |= server.broken_keys()
        except (RuntimeError, OSError, TimeoutError):
            answers.append(None)
            server.process.kill()
            server = None
    if server is not None:
        server.close()
    return answers, broken


def _add(totals: dict[str, int], truth: set[tuple[str, int, int]], target: Definition, reader: object,
         root: Path, *, left_out: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    every, resolved = sai_uses(reader, target, root)
    every = {u for u in every if u[0] not in left_out}
    resolved = {u for u in resolved if u[0] not in left_out}
    for label, places in (("fp", every - truth), ("fn", truth - every)):
        for path, line, column in sorted(places):
            text = (root / path).read_text(encoding="utf-8").split("\n")[line - 1]
            _MISSES.append({"repo": root.name, "target": f"{target.path}:{target.symbol}", "miss": label,
                            "asked": asked_name(target, [d.path for d in _HOMES.get(target.symbol, ())]),
                            "place": f"{path}:{line}:{column}", "text": text.strip()[:160]})
    bare = {u for u in sai_uses(reader, target, root, bare=True)[0] if u[0] not in left_out}
    totals["jedi"] += len(truth)
    totals["sai"] += len(every)
    totals["hit"] += len(every & truth)
    totals["resolved"] += len(resolved)
    totals["resolved_hit"] += len(resolved & truth)
    totals["bare"] += len(bare)
    totals["bare_hit"] += len(bare & truth)


def _ts_name(root: Path, target: Definition) -> tuple[int, int] | None:
    """Where a definition's name is written: its first whole-word occurrence in its first lines."""
    name = target.symbol.rsplit(".", 1)[-1]
    lines = (root / target.path).read_text(encoding="utf-8").split("\n")
    pattern = re.compile(rf"(?<![\w.$]){re.escape(name)}(?![\w$])")
    for number in range(target.start_line, min(target.end_line, target.start_line + 4, len(lines)) + 1):
        found = pattern.search(lines[number - 1])
        if found:
            return number, found.start()
    return None


def resolved_against_goto(root: Path, jproject: jedi.Project, reader: object) -> tuple[int, int, int]:
    """Over every resolved call SAI stores: does jedi's goto land in SAI's target's lines?"""
    agree = total = unknown = 0
    names = {u.reference.name for u in _all_calls(reader)}
    scripts: dict[str, jedi.Script] = {}
    for name in sorted(names):
        for use in uses_of(reader, name):  # type: ignore[arg-type]
            ref, target = use.reference, use.target
            if ref.kind != "call" or target is None:
                continue
            script = scripts.setdefault(ref.path, jedi.Script(path=str(root / ref.path), project=jproject))
            places = [d for d in script.goto(ref.line, ref.column, follow_imports=True) if d.module_path]
            inside = [d for d in places if Path(d.module_path).resolve().is_relative_to(root.resolve())]
            if not inside:
                unknown += 1
                continue
            total += 1
            key = Path(inside[0].module_path).resolve().relative_to(root.resolve()).as_posix()
            agree += key == target.path and target.start_line <= inside[0].line <= target.end_line
    return agree, total, unknown


def _all_calls(reader: object) -> list:  # type: ignore[type-arg]
    names = {d.symbol.rsplit(".", 1)[-1] for d in definitions(reader)}
    return [u for u in (use for name in sorted(names) for use in uses_of(reader, name))  # type: ignore[arg-type]
            if u.reference.kind == "call" and u.resolved]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def cost(source: Path, work: Path) -> None:
    figures = {}
    for references in (False, True):
        root = work / f"cost-{references}"
        copy_python(source, root)
        project = open_project(root, references=references)
        start = time.perf_counter()
        report = index(project)
        wall = time.perf_counter() - start
        if references:
            with open_references(project) as reader:
                blocks = reader.conn.con.execute(  # type: ignore[attr-defined]
                    "SELECT count(DISTINCT block_id), (SELECT count(*) FROM source_code__refs) "
                    "FROM pragma_storage_info('source_code__refs') WHERE block_id >= 0").fetchone()
        project.close()
        figures[references] = (wall, du(root / ".index"), report.chunks)
    (off_s, off_b, chunks), (on_s, on_b, _) = figures[False], figures[True]
    print(f"cost on {source.name} ({chunks} chunks, hash embedder):")
    print(f"  index time: {off_s:.2f} s without references, {on_s:.2f} s with (+{100 * (on_s / off_s - 1):.1f}%)")
    print(f"  index size: {off_b / 1e6:.2f} MB without, {on_b / 1e6:.2f} MB with (+{100 * (on_b / off_b - 1):.1f}%)")
    print(f"  the references table: {blocks[1]} rows in {blocks[0]} blocks of 256 KiB "
          f"({blocks[0] * 262144 / 1e6:.2f} MB, {100 * blocks[0] * 262144 / on_b:.1f}% of the index directory)")


def latency(source: Path, cache: Path, samples: int) -> None:
    root = cache / f"latency-{source.name}"
    if not (root / ".index").is_dir():
        copy_python(source, root)
    project = open_project(root)
    index(project)
    with open_references(project) as reader:
        chunks = reader.chunk_count()
        every = definitions(reader)
    names = sorted({d.symbol.rsplit(".", 1)[-1] for d in every if d.kind in ("function", "method")})
    random.Random(7).shuffle(names)
    chosen = names[:samples]
    find_references(project, chosen[0])  # the symbol table built once, as a server holds it
    timings: dict[str, list[float]] = {"refs": [], "callers": []}
    for name in chosen:
        for label, run in (("refs", find_references), ("callers", callers)):
            start = time.perf_counter()
            run(project, name)
            timings[label].append(1000 * (time.perf_counter() - start))
    project.close()
    print(f"latency on {source} ({chunks} chunks, {len(chosen)} names):")
    for label, values in timings.items():
        p95 = float(np.percentile(values, 95))
        print(f"  {label:8} p50 {statistics.median(values):6.1f} ms  p95 {p95:6.1f} ms  max {max(values):6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("repos", nargs="*", type=Path, help="Python repositories (checkouts)")
    parser.add_argument("--targets", type=int, default=80, help="definitions per repository")
    parser.add_argument("--cost", type=Path, metavar="DIR", help="index time and size with and without references")
    parser.add_argument("--latency", type=Path, metavar="DIR", help="p50/p95 of refs and callers over DIR")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--typescript", type=Path, metavar="DIR", help="a TypeScript repository (its src/)")
    parser.add_argument("--javascript", type=Path, metavar="DIR", help="a JavaScript repository (its src/ or lib/)")
    parser.add_argument("--go", type=Path, metavar="DIR", help="a Go repository (against gopls)")
    parser.add_argument("--c", type=Path, metavar="DIR", help="a C repository (against clangd)")
    parser.add_argument("--ts-module", default=TS_MODULE, help="the typescript npm package's directory")
    parser.add_argument("--misses", type=Path, metavar="FILE", help="write every false positive and negative (JSONL)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sai-bench/refs-cache"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for repo in args.repos:
            quality(repo, work, args.targets)
        if args.typescript:
            ts_quality(args.typescript, work, args.targets, args.ts_module)
        if args.javascript:
            ts_quality(args.javascript, work, args.targets, args.ts_module, language="javascript")
        if args.go:
            lsp_quality(args.go, work, args.targets, "go")
        if args.c:
            lsp_quality(args.c, work, args.targets, "c")
        if args.cost:
            cost(args.cost, work)
    if args.misses:
        args.misses.write_text("".join(json.dumps(m) + "\n" for m in _MISSES), encoding="utf-8")
    if args.latency:
        args.cache.mkdir(parents=True, exist_ok=True)
        latency(args.latency, args.cache, args.samples)


if __name__ == "__main__":
    main()
