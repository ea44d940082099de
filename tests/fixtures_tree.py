"""Helpers shared by tests: a small multi-language source tree and a project config for it."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from memory_store import MemoryStore
from ollama_standin import OllamaStandIn

from sai.cli.commands import main
from sai.config import Config, load_config
from sai.indexing import indexer
from sai.project import Project
from sai.store.base import Store

STANDIN_MODEL = "nomic-embed-text"  # a model the Ollama stand-in serves

PY_SOURCE = '''\
"""Billing helpers."""

TAX_RATE = 0.2


def total_price(items):
    """Sum the prices of the items."""
    return sum(item.price for item in items)


def apply_tax(amount):
    return amount * (1 + TAX_RATE)


class Cart:
    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)
'''

JS_SOURCE = """\
export function parseDate(text) {
  const [y, m, d] = text.split("-").map(Number);
  return new Date(y, m - 1, d);
}

export function formatDate(date) {
  return date.toISOString().slice(0, 10);
}
"""

GO_SOURCE = """\
package store

import "strings"

func Normalize(name string) string {
\treturn strings.ToLower(strings.TrimSpace(name))
}

func Join(parts []string) string {
\treturn strings.Join(parts, "/")
}
"""

TREE: dict[str, str] = {
    "billing.py": PY_SOURCE,
    "web/dates.js": JS_SOURCE,
    "pkg/store/names.go": GO_SOURCE,
}


def write_tree(root: Path, files: dict[str, str | bytes] | None = None) -> Path:
    """Write `files` (key -> text or bytes; default TREE) under `root`; returns `root`."""
    for key, content in (TREE if files is None else files).items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def write_config(root: Path, url: str, **settings: Any) -> Path:
    """Write `sai-cfg.yml` for the Ollama stand-in at `url`; `settings` override or add keys."""
    # a short back-off: tests that stop the stand-in need not wait out the real 0.5 + 1 + 2 s
    values: dict[str, Any] = {"embedder": "ollama", "model": STANDIN_MODEL,
                              "ollama": {"url": url, "backoff_s": 0.01}}
    values.update(settings)
    path = root / "sai-cfg.yml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


def index_template(tmp_path_factory: Any, files: dict[str, str | bytes], **settings: Any) -> Path:
    """`files` indexed once, with a stand-in of its own, to be copied by `indexed_copy` (for a
    module-scoped fixture: indexing the same tree for every test costs more than copying it)."""
    root = write_tree(tmp_path_factory.mktemp("template"), files)
    with OllamaStandIn() as server:
        write_config(root, server.url, **settings)
        project = open_project(root)
        try:
            indexer.index(project)
        finally:
            project.close()
    return root


def indexed_copy(template: Path, root: Path, url: str, **settings: Any) -> Path:
    """A copy of an indexed template at `root` (mtimes kept, so nothing reads as stale; the index
    records no Ollama url), configured for the stand-in at `url`; returns `root`."""
    shutil.copytree(template, root, dirs_exist_ok=True)
    write_config(root, url, **settings)
    return root


def load(root: Path) -> Config:
    return load_config(cwd=root, env={})


def open_project(root: Path) -> Project:
    """A Project for the config in `root`, as a front end would open it."""
    return Project(load(root))


Snapshot = dict[tuple[str, int, int, str], bytes]  # (path, start, end, text) -> vector bytes


def snapshot(root: Path) -> Snapshot:
    """Every chunk the index of `root` stores (path, start, end, text) -> its vector's bytes."""
    project = open_project(root)
    try:
        with project.store.read() as reader:
            rows, matrix, _ = reader.all_chunks()
            rows = reader.chunks([r.id for r in rows])
    finally:
        project.close()
    return {(r.path, r.start_line, r.end_line, r.text): matrix[i].tobytes() for i, r in enumerate(rows)}


def open_served(root: Path, standin: OllamaStandIn, *, store: Store | None = None) -> Project:
    """A Project for the sai-cfg.yml in `root`, its Ollama the stand-in (by OLLAMA_HOST); its
    index the config's, or `store` (a MemoryStore)."""
    return Project(load_config(config_file=str(root / "sai-cfg.yml"), env={"OLLAMA_HOST": standin.url}),
                   store=store)


def many_functions(count: int, *, per_file: int = 50, prefix: str = "gen") -> dict[str, str]:
    """`count` small, distinct Python functions spread over files of `per_file` each."""
    files: dict[str, str] = {}
    for start in range(0, count, per_file):
        body = "\n\n".join(
            f"def {prefix}_{n}(value):\n    return value * {n} + len('{prefix}{n}')\n"
            for n in range(start, min(start + per_file, count))
        )
        files[f"{prefix}/mod_{start // per_file:03d}.py"] = body
    return files


# A function and an unrelated one of the same size (duplicate and shape tests).
ORIGINAL = '''def merge_intervals(intervals):
    ordered = sorted(intervals, key=lambda pair: pair[0])
    merged = []
    for start, end in ordered:
        if merged and start <= merged[-1][1]:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged
'''
UNRELATED_A = '''def read_config(path):
    settings = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings
'''


# Projects the fixtures hold open. DuckDB attaches a file once per process, so the CLI (which
# opens its own Project) runs only after their idle read leases are closed; they reopen lazily.
OPEN: list[Project] = []


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    for held in OPEN:
        held.store.close()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- a tree of copies (similar, duplicates)
TOTAL = '''def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return round(subtotal + tax, 2)
'''
COMMENTED = TOTAL.replace("    subtotal = 0\n", "    subtotal = 0\n    # prices include discounts\n")
MARKED = TOTAL.replace("    subtotal = 0\n", "    subtotal = 0  # sai-noduplicate: kept on purpose\n")
SLUG = '''def slugify(title):
    words = title.lower().split()
    return "-".join(w.strip(".,!?") for w in words if w)
'''
PAIR = '''def parse_pair(text, separator):
    left, _, right = text.partition(separator)
    return left.strip(), right.strip()
'''
SESSION = '''import secrets


class Session:
    def create(self, user):
        token = secrets.token_hex(16)
        self.tokens[user.name] = token
        return token

    def close(self, user):
        self.tokens.pop(user.name, None)


def create_session(tokens, user):
    token = secrets.token_hex(16)
    tokens[user.name] = token
    return token
'''
# A class whose own lines (body statements and a trailing attribute) repeat its method: the
# class chunk spans 1-12 and contains the method's chunk 6-10, and the two score about 0.81.
TOTALS = '''class Totals:
    subtotal = 0
    for item in ITEMS:
        subtotal += item.price * item.quantity

    def total(self, items):
        subtotal = 0
        for item in items:
            subtotal += item.price * item.quantity
        return subtotal

    rate = TAX_RATE
'''
CODE_TREE = {
    "src/billing.py": '"""Billing helpers."""\n\n\n' + TOTAL + "\n\n" + SLUG,
    "src/legacy/billing_v1.py": "import math\n\n\n" + TOTAL,
    "src/commented.py": COMMENTED,
    "src/marked.py": MARKED,
    "src/text_utils.py": SLUG,
    "src/helpers.py": PAIR,
    "src/session.py": SESSION,
    "lib/vendor_billing.py": TOTAL,
    "lib/helpers.py": PAIR,
}

# Copied and adapted: the function, its parameter and its accumulator renamed. MiniLM scores
# the pair 0.83 (a renamed copy of a 13-line function), under the original tool's 0.93 threshold.
RENAMED = (
    ORIGINAL.replace("merge_intervals(intervals)", "merge_ranges(ranges)")
    .replace("sorted(intervals", "sorted(ranges")
    .replace("merged", "result")
)
UNRELATED_B = '''def send_report(smtp, recipients, subject, rows):
    body = "\\n".join(f"{name}: {count}" for name, count in rows)
    message = f"Subject: {subject}\\n\\n{body}"
    for address in recipients:
        smtp.sendmail("reports@example.com", address, message)
    return len(recipients)
'''


def index_tree(root: Path, url: str, files: dict[str, str] = CODE_TREE, **settings: Any) -> Project:
    """`files` written under `root` and indexed with the stand-in at `url`; the project stays open."""
    write_tree(root, files)
    write_config(root, url, **settings)
    project = Project(load(root))
    indexer.index(project)
    return project


# ---------------------------------------------------------------- indexes held in memory (tests/memory_store.py)
@dataclass(frozen=True)
class HeldTemplate:
    """A tree on disk and its index in a MemoryStore, built once and copied by `held_copy`."""

    root: Path
    store: MemoryStore


def index_held(root: Path, url: str, files: dict[str, str] = CODE_TREE, **settings: Any) -> Project:
    """`files` written under `root` and indexed with the stand-in at `url` into a MemoryStore:
    index_tree for a test whose subject is not the store."""
    write_tree(root, files)
    write_config(root, url, **settings)
    project = Project(load(root), store=MemoryStore())
    indexer.index(project)
    return project


def held_template(tmp_path_factory: Any, files: dict[str, str | bytes], **settings: Any) -> HeldTemplate:
    """`files` indexed once into a MemoryStore, with a stand-in of its own (index_template in memory)."""
    root = write_tree(tmp_path_factory.mktemp("template"), files)
    store = MemoryStore()
    with OllamaStandIn() as server:
        write_config(root, server.url, **settings)
        indexer.index(Project(load(root), store=store))
    return HeldTemplate(root, store)


def held_copy(template: HeldTemplate, root: Path, url: str, **settings: Any) -> Project:
    """A project over a copy of the template's tree at `root` (mtimes kept, so nothing reads as
    stale) and a copy of its index, configured for the stand-in at `url` (indexed_copy in memory)."""
    shutil.copytree(template.root, root, dirs_exist_ok=True)
    write_config(root, url, **settings)
    return Project(load(root), store=template.store.copy())
