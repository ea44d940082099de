"""Callers and callees as trees (depth, cycles), `sai impact` on a planted change, a one-file
refresh replacing only that file's references, the migration that adds them, the Qdrant
refusal, and the four MCP tools over a real stdio session."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from anyio.from_thread import BlockingPortal
from fixtures_tree import open_served, run_cli, write_tree
from mcp_sessions import mcp_session, standin_env
from memory_store import MemoryStore
from ollama_standin import OllamaStandIn

from sai.duplicates.copies import near_copies
from sai.duplicates.edges import cosine_floor
from sai.duplicates.score import duplicate_score
from sai.errors import SaiError
from sai.indexing import indexer
from sai.models import CallNode, ChunkRow
from sai.project import Project, chunks_part
from sai.query import references
from sai.query.calls import callees, callers, callers_of
from sai.query.references import KnownUses, find_references, open_references
from sai.store.uses import as_columns
from sai.text.shape import signatures, similarity

PINGPONG = '''\
def ping(n):
    return pong(n - 1) if n else 0


def pong(n):
    return ping(n)


def start():
    return ping(3)
'''
TAX = '''\
def net_price(amount, rate, discount):
    """The price after tax and discount, rounded to cents."""
    taxed = amount * (1 + rate)
    if discount > 0:
        taxed = taxed - taxed * discount
    lines = [taxed, rate, discount]
    return round(sum(lines[:1]), 2)
'''
LEGACY = TAX.replace("net_price", "price_after_tax").replace("taxed", "total").replace("amount", "value")
EXPORT = TAX.replace("net_price", "gross").replace("taxed", "result").replace("discount", "rebate")
CART = "from billing.tax import net_price\n\n\ndef checkout(items):\n    return net_price(sum(items), 0.2, 0)\n"
CONFIG = "root: .\next: [py]\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Path:
    tree = {"game/pingpong.py": PINGPONG, "billing/tax.py": TAX, "legacy/pricing.py": LEGACY,
            "export/rates.py": EXPORT, "shop/cart.py": CART, "sai-cfg.yml": CONFIG, ".gitignore": ".index/\n"}
    root = write_tree(tmp_path_factory.mktemp("calls") / "project", tree)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    project = open_served(root, standin)
    indexer.index(project)
    project.close()
    return root


@pytest.fixture(scope="module")
def project(root: Path, standin: OllamaStandIn) -> Iterator[Project]:
    opened = open_served(root, standin)
    yield opened
    opened.close()


def shape(nodes: tuple[CallNode, ...]) -> list[tuple[str | None, bool, list]]:  # type: ignore[type-arg]
    return [(n.symbol, n.cycle, shape(n.children)) for n in nodes]


def test_callers_to_depth_two_mark_the_cycle_and_stop_there(project: Project) -> None:
    tree = callers(project, "ping", depth=2)
    assert shape(tree.roots) == [("pong", False, [("ping", True, [])]), ("start", False, [])]
    assert all(n.resolved for n in tree.roots) and tree.roots[0].lines == (6,)


def test_callees_follow_resolved_definitions_until_the_cycle(project: Project) -> None:
    tree = callees(project, "start", depth=3)
    assert shape(tree.roots) == [("ping", False, [("pong", False, [("ping", True, [])])])]
    assert tree.roots[0].path == "game/pingpong.py" and tree.roots[0].chunk_id


def test_callers_read_with_other_names_in_one_query_are_those_read_alone(project: Project) -> None:
    names = ["ping", "pong", "net_price", "start", "nowhere", "Cart.checkout"]
    with open_references(project) as reader:
        known = KnownUses(reader, names)
        together = [callers_of(reader, name, limit=5, known=known) for name in names]
        alone = [callers_of(reader, name, limit=5) for name in names]
    assert together == alone and together[2][0][0].path == "shop/cart.py"


# Functions of three structures over five vocabularies: a vocabulary's functions share their
# words (a docstring, which has no shape, repeats them: high cosine) and not their shape, a
# structure's share their shape and not their words.
DOC = "    \"\"\"{a} {b} {c}: the {a} of {b} past {c}; {a} {b} {c} {a} {b} {c}.\"\"\"\n"
STRUCTURES = (
    "def {a}_{n}({b}, {c}):\n    total = 0\n    for item in {b}:\n        if item > {c}:\n"
    "            total += item * {c}\n        else:\n            total -= item\n    return total\n",
    "def {a}_{n}({b}, {c}):\n    found = [x for x in {b} if x]\n    while found and found[-1] < {c}:\n"
    "        found.pop()\n    return {{'{a}': len(found), '{c}': sum(found)}}\n",
    "def {a}_{n}({b}, {c}):\n    try:\n        value = {b}[{c}]\n    except KeyError:\n"
    "        value = None\n    if value is None:\n        raise ValueError('{a} {b} {c}')\n    return value\n",
)
WORDS = (("invoice", "lines", "rate"), ("packet", "frames", "limit"), ("sensor", "samples", "threshold"),
         ("ledger", "entries", "cutoff"), ("player", "scores", "bonus"))


@pytest.mark.parametrize("min_score", [0.25, 0.75])
def test_copies_left_behind_are_those_a_score_of_every_pair_finds(
        tmp_path: Path, standin: OllamaStandIn, min_score: float) -> None:
    """near_copies reads only the candidates its rule admits (the nearest by cosine, and every
    chunk of a shape alike); scoring every stored pair finds the same copies."""
    tree = {f"pkg/{a}_{n}.py": STRUCTURES[n].replace(":\n", ":\n" + DOC, 1).format(a=a, b=b, c=c, n=n)
            for a, b, c in WORDS for n in range(3)}
    root = write_tree(tmp_path, {**tree, "sai-cfg.yml": CONFIG})
    project = open_served(root, standin)
    pairs = by_cosine = 0
    try:
        indexer.index(project)
        with open_references(project) as reader:
            rows, matrix, blobs = reader.all_chunks()
            sigs, sizes, known = signatures(blobs)
            floor = cosine_floor(min_score)
            for t, target in enumerate(rows):
                def keep(row: ChunkRow, target: ChunkRow = target) -> bool:
                    return row.path != target.path
                others = np.array([j for j, row in enumerate(rows) if j != t and known[j] and keep(row)], np.int64)
                if not known[t] or not len(others):
                    continue
                cosine = matrix[others] @ matrix[t]
                alike = similarity(sigs, np.full(len(others), t), others)
                score = duplicate_score(cosine, alike, np.minimum(sizes[others], sizes[t]))
                passing = sorted((-float(s), rows[j].path, rows[j].start_line, rows[j].chunk_id)
                                 for s, j in zip(score, others, strict=True) if s >= min_score)
                found = near_copies(reader, [target], keep=keep, min_score=min_score, limit=8).get(target.id, [])
                assert [c.chunk_id for c in found] == [p[3] for p in passing[:8]]
                assert [c.score for c in found] == pytest.approx([-p[0] for p in passing[:8]], abs=1e-5)
                pairs += len(passing)
                by_cosine += int(np.count_nonzero((score >= min_score) & (alike < 2 * min_score - floor)))
    finally:
        project.close()
    assert pairs >= 10 and (by_cosine >= 10 or min_score > 0.5)  # both of the rule's sides are exercised


def test_a_depth_beyond_the_limit_is_refused(project: Project) -> None:
    with pytest.raises(SaiError, match="depth 9 is out of range"):
        callers(project, "ping", depth=9)


def test_impact_of_an_edited_function_names_both_renamed_copies_and_its_caller(
    root: Path, standin: OllamaStandIn, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / "billing/tax.py").write_text(TAX.replace("round(", "int(").replace(", 2)", ")"), encoding="utf-8")
    project = open_served(root, standin)
    try:
        indexer.refresh(project, ["billing/tax.py"])
    finally:
        project.close()
    code, out, _ = run_cli(capsys, "--config", str(root / "sai-cfg.yml"), "impact", "--json")
    assert code == 0
    found = json.loads(out)
    assert found["changed_files"] == ["billing/tax.py"]
    (unit,) = found["units"]
    assert unit["symbol"] == "net_price"
    assert {c["symbol"] for c in unit["copies"]} == {"price_after_tax", "gross"}
    assert [c["symbol"] for c in unit["callers"]] == ["checkout"]
    code, text, _ = run_cli(capsys, "--config", str(root / "sai-cfg.yml"), "impact")
    assert "copy left behind" in text and "legacy/pricing.py" in text and "called from shop/cart.py:5" in text


def test_refreshing_one_file_replaces_its_references_only(tmp_path: Path, standin: OllamaStandIn) -> None:
    root = write_tree(tmp_path, {"a.py": "def f():\n    return g()\n", "b.py": "def h():\n    return g()\n",
                            "sai-cfg.yml": CONFIG})
    project = open_served(root, standin, store=MemoryStore())
    try:
        indexer.index(project)
        before = [u.reference for u in find_references(project, "g").uses if u.reference.path == "b.py"]
        (root / "a.py").write_text("def f():\n    return k()\n", encoding="utf-8")
        indexer.refresh(project, ["a.py"])
        after = find_references(project, "g")
        assert [u.reference for u in after.uses] == before  # b.py's rows untouched, a.py's gone
        assert [u.reference.path for u in find_references(project, "k").uses] == ["a.py"]
        (root / "a.py").unlink()
        indexer.refresh(project, ["a.py"])
        assert find_references(project, "k").total == 0
    finally:
        project.close()


def test_imports_resolve_into_a_file_a_refresh_added(tmp_path: Path, standin: OllamaStandIn) -> None:
    """The file keys' module tables are kept while a write leaves the set of files as it was,
    and read again when it adds one (resolution would otherwise miss the new file)."""
    app = "from shop.pricing import discount\n\n\ndef checkout(total):\n    return discount(total)\n"
    root = write_tree(tmp_path, {"shop/__init__.py": "", "shop/app.py": app, "sai-cfg.yml": CONFIG})
    project = open_served(root, standin)
    try:
        indexer.index(project)
        assert [u.resolved for u in find_references(project, "discount", kinds=["call"]).uses] == [False]
        keys = next(iter(references._FILE_KEYS.values()))[0]
        (root / "shop/app.py").write_text(app + "\n\ndef refund(total):\n    return discount(-total)\n")
        indexer.refresh(project, ["shop/app.py"])
        assert [u.resolved for u in find_references(project, "discount", kinds=["call"]).uses] == [False, False]
        assert next(iter(references._FILE_KEYS.values()))[0] is keys  # the same files: the same tables
        (root / "shop/pricing.py").write_text("def discount(total):\n    return total * 0.9\n")
        indexer.refresh(project, ["shop/pricing.py"])
        found = find_references(project, "discount", kinds=["call"]).uses
        assert [(u.resolved, u.target and u.target.path) for u in found] == [(True, "shop/pricing.py")] * 2
    finally:
        project.close()


def test_an_index_of_format_5_gains_references_without_embedding(tmp_path: Path, standin: OllamaStandIn) -> None:
    root = write_tree(tmp_path, {"a.py": "def f():\n    return g()\n", "sai-cfg.yml": CONFIG})
    project = open_served(root, standin)
    try:
        indexer.index(project)
        with project.store.write() as writer:  # what SAI left before references: no table, no refs= part
            writer.conn.con.execute("DROP TABLE source_code__refs")  # type: ignore[attr-defined]
            chunking = writer.meta()["chunking"].rsplit("/refs=", 1)[0]
            writer.set_meta({"schema_version": "5", "chunking": chunking})
    finally:
        project.close()
    standin.reset_counts()
    project = open_served(root, standin)
    try:
        indexer.index(project)
        assert standin.inputs_embedded == 0
        assert [u.reference.line for u in find_references(project, "g").uses] == [2]
    finally:
        project.close()


def test_an_older_reference_extraction_reads_the_uses_again_and_leaves_the_chunks(
        tmp_path: Path, standin: OllamaStandIn) -> None:
    """Only the references' version changed: every file's uses are read again, no chunk row is
    rewritten (their ids stay) and nothing is embedded; a file edited meanwhile is indexed whole."""
    files = {"a.py": "def f():\n    return g()\n", "b.py": "def h():\n    return g()\n"}
    root = write_tree(tmp_path, {**files, "sai-cfg.yml": CONFIG})

    def written() -> dict[str, list[object]]:  # each file's chunk rows as written: their ids and times
        with project.store.read() as reader:
            rows = reader.conn.con.execute(  # type: ignore[attr-defined]
                "SELECT path, id, indexed_at FROM source_code ORDER BY path, id").fetchall()
        return {key: [row[1:] for row in rows if row[0] == key] for key in files}

    project = open_served(root, standin)
    try:
        indexer.index(project)
        before = written()
        with project.store.write() as writer:  # as an older extraction left it: other uses, another version
            writer.replace_references({key: as_columns([]) for key in files})
            writer.set_meta({"chunking": chunks_part(writer.meta()["chunking"]) + "/refs=1"})
    finally:
        project.close()
    (root / "b.py").write_text("def h():\n    return g() + g()\n", encoding="utf-8")
    standin.reset_counts()
    project = open_served(root, standin)
    try:
        report = indexer.index(project)
        after = written()
        assert after["a.py"] == before["a.py"] and after["b.py"] != before["b.py"]  # b.py was edited
        assert standin.inputs_embedded == 1 and report.embedded == 1  # b.py's new text alone
        assert sorted((u.reference.path, u.reference.column) for u in find_references(project, "g").uses) == [
            ("a.py", 11), ("b.py", 11), ("b.py", 17)]
        with project.store.read() as reader:
            assert reader.meta()["chunking"] == project.chunking_signature()
        assert indexer.index(project).embedded == 0  # settled
    finally:
        project.close()


def test_the_qdrant_backend_refuses_references_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path, {"sai-cfg.yml": "root: .\nbackend: qdrant\nqdrant:\n  path: .index/qdrant\n"})
    code, _, err = run_cli(capsys, "--config", str(tmp_path / "sai-cfg.yml"), "refs", "f")
    assert code == 1 and err == "error: the qdrant backend does not support references yet; " \
        "use backend: duckdb for sai refs, callers, callees and impact\n"


def test_references_switched_off_are_refused_in_one_line(tmp_path: Path, standin: OllamaStandIn,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    write_tree(tmp_path, {"a.py": "def f():\n    return g()\n", "sai-cfg.yml": CONFIG + "index_references: false\n"})
    project = open_served(tmp_path, standin)
    try:
        indexer.index(project)
    finally:
        project.close()
    code, _, err = run_cli(capsys, "--config", str(tmp_path / "sai-cfg.yml"), "callers", "g")
    assert code == 1 and err.startswith("error: references are not indexed (index_references: false)")


def test_the_mcp_tools_answer_in_their_declared_shapes(portal: BlockingPortal, root: Path,
                                                       standin: OllamaStandIn) -> None:
    with mcp_session(portal, root, standin_env(standin)) as session:
        refs = session.call("sai_find_references", name="ping", kinds=["call"])
        assert {(r["path"], r["line"], r["resolved"]) for r in refs["references"]} == {
            ("game/pingpong.py", 6, True), ("game/pingpong.py", 10, True)}
        tree = session.call("sai_find_callers", name="ping", depth=2)["tree"]
        assert [n["symbol"] for n in tree] == ["pong", "start"] and tree[0]["children"][0]["cycle"]
        assert session.call("sai_find_callees", name="start")["tree"][0]["symbol"] == "ping"
        assert session.call("sai_impact")["since"] == "HEAD"
