"""find_duplicates: the contract's text and JSON, clustering semantics, seeding, the metrics.

Most tests run on the Ollama stand-in, whose hashed bag-of-words vectors make identical texts
score 1.0 and lightly edited copies a little less; the test that needs a real notion of "the
same code" (a renamed copy) uses the session's local MiniLM model.
"""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest
from fixtures_tree import (
    CODE_TREE,
    COMMENTED,
    OPEN,
    ORIGINAL,
    PAIR,
    RENAMED,
    SESSION,
    SLUG,
    TOTAL,
    TOTALS,
    index_held,
    index_template,
    index_tree,
    indexed_copy,
    load,
    run_cli,
    write_tree,
)

from sai.config import load_config
from sai.duplicates import edges, exact, units
from sai.duplicates import score as duplicates
from sai.duplicates.clusters import find_duplicates
from sai.duplicates.edges import Nesting, Shapes
from sai.indexing import indexer
from sai.project import Project
from sai.query.similar import find_similar

TOTAL_MEMBERS = [
    "  lib/vendor_billing.py:1-6  total_price",
    "  src/billing.py:4-9  total_price",
    "  src/commented.py:1-7  total_price",
    "  src/legacy/billing_v1.py:4-9  total_price",
]
SUMMARY_RE = re.compile(
    r"^(\d+) near-duplicate cluster\(s\) \(min_score ([\d.]+), min_cluster_size (\d+), top_k (\d+)\):$"
)
HEADER_RE = re.compile(r"^cluster \(size (\d+), sim (\d\.\d{4})\.\.(\d\.\d{4})\):$")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return index_template(tmp_path_factory, CODE_TREE)


@pytest.fixture
def project(template, tmp_path, ollama_server, monkeypatch):
    """The standard tree indexed with the stand-in; the cwd is its root, as for a CLI user."""
    monkeypatch.chdir(tmp_path)
    project = Project(load(indexed_copy(template, tmp_path, ollama_server.url)))
    OPEN.append(project)
    yield project
    OPEN.remove(project)
    project.close()



def blocks(text: str) -> list[list[str]]:
    """Cluster blocks of duplicates text: [header, member rows...] each."""
    found: list[list[str]] = []
    for line in text.splitlines()[1:]:
        if line.startswith("cluster ("):
            found.append([line])
        else:
            found[-1].append(line)
    return found



# --- duplicates: text and JSON --------------------------------------------------------------


def test_duplicates_text_reproduces_the_contract_layout(project, capsys):
    code, out, err = run_cli(capsys, "duplicates", "--min-score", "0.93", "--top-k", "8")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "3 near-duplicate cluster(s) (min_score 0.93, min_cluster_size 2, top_k 8):"
    assert out.endswith("\n") and not out.endswith("\n\n")
    first, second, third = blocks(out)
    size, lo, hi = HEADER_RE.match(first[0]).groups()
    assert size == "4" and float(lo) < float(hi) == 1.0
    assert 0.93 <= float(lo)
    assert first[1:] == TOTAL_MEMBERS
    assert second == [
        "cluster (size 2, sim 1.0000..1.0000):",
        "  lib/helpers.py:1-3  parse_pair",
        "  src/helpers.py:1-3  parse_pair",
    ]
    assert third == [
        "cluster (size 2, sim 1.0000..1.0000):",
        "  src/billing.py:12-14  slugify",
        "  src/text_utils.py:1-3  slugify",
    ]


def test_duplicates_summary_prints_thresholds_in_shortest_form(project, capsys):
    _, out, _ = run_cli(capsys, "duplicates", "--min-score", "1.0", "--min-cluster-size", "3")
    assert out.splitlines()[0].endswith("(min_score 1, min_cluster_size 3, top_k 10)") or (
        SUMMARY_RE.match(out.splitlines()[0]).group(2, 3) == ("1", "3")
    )
    _, out, _ = run_cli(capsys, "duplicates", "--min-score", "0.985", "--top-k", "3")
    assert SUMMARY_RE.match(out.splitlines()[0]).group(2, 4) == ("0.985", "3")


def test_duplicates_nothing_found_is_one_line(project, capsys):
    code, out, _ = run_cli(
        capsys, "duplicates", "--min-score", "0.93", "--min-cluster-size", "5", "--top-k", "8"
    )
    assert code == 0
    assert out == "no near-duplicate clusters (min_score 0.93, min_cluster_size 5, top_k 8)\n"


def test_symbol_less_member_rows_end_with_two_spaces(tmp_path, ollama_server, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {"a.py": TOTAL, "b.py": TOTAL, "c.py": SLUG}
    index_tree(tmp_path, ollama_server.url, files, chunker="lines").close()
    _, out, _ = run_cli(capsys, "duplicates", "--min-score", "0.93", "--top-k", "8")
    assert out == (
        "1 near-duplicate cluster(s) (min_score 0.93, min_cluster_size 2, top_k 8):\n"
        "cluster (size 2, sim 1.0000..1.0000):\n"
        "  a.py:1-6  \n"
        "  b.py:1-6  \n"
    )
    _, out, _ = run_cli(capsys, "similar", "--path", "a.py", "--line", "3", "--min-score", "0.99")
    assert out == "1 similar (min_score 0.99):\n  1.0000  b.py:1-6  \n"


def test_duplicates_json_has_the_contract_shape(project, capsys):
    code, out, _ = run_cli(capsys, "duplicates", "--json", "--min-score", "0.93", "--top-k", "8")
    assert code == 0 and out.count("\n") == 1
    payload = json.loads(out)
    assert list(payload) == ["min_score", "min_cluster_size", "top_k", "seeded", "count", "clusters", "metric"]
    assert payload["metric"] == "duplicate"
    assert payload["min_score"] == 0.93 and payload["min_cluster_size"] == 2
    assert payload["top_k"] == 8 and payload["seeded"] is False and payload["count"] == 3
    first = payload["clusters"][0]
    assert list(first) == ["size", "members", "min_sim", "max_sim"]
    assert first["size"] == len(first["members"]) == 4
    member = dict(first["members"][0])
    assert re.fullmatch(r"[0-9a-f]{16}", member.pop("chunk_id"))  # extra: for sai_read_chunk
    assert member == {
        "path": "lib/vendor_billing.py", "start_line": 1, "end_line": 6, "symbol": "total_price"
    }
    assert first["max_sim"] == 1.0 and first["min_sim"] == round(first["min_sim"], 4) < 1.0


def test_duplicates_json_symbol_is_null_for_line_chunks(tmp_path, ollama_server, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    index_tree(tmp_path, ollama_server.url, {"a.py": TOTAL, "b.py": TOTAL}, chunker="lines").close()
    _, out, _ = run_cli(capsys, "duplicates", "--json")
    members = json.loads(out)["clusters"][0]["members"]
    assert [m["symbol"] for m in members] == [None, None]


# --- duplicates: semantics ------------------------------------------------------------------


def test_clusters_are_ordered_by_size_then_max_sim_then_first_member(tmp_path, ollama_server):
    files = {
        "z/one.py": SLUG, "z/two.py": SLUG,  # size 2, sim 1.0, first member z/one.py
        "a/one.py": PAIR, "a/two.py": PAIR,  # size 2, sim 1.0, first member a/one.py
        "m/one.py": TOTAL, "m/two.py": TOTAL, "m/three.py": TOTAL,  # size 3
        "b/session.py": SESSION,  # size 2: the method and the function (cosine 0.93, shape 0.56)
    }
    project = index_held(tmp_path, ollama_server.url, files)
    clusters = find_duplicates(project, min_score=0.65)
    assert [(c.size, c.members[0].path) for c in clusters] == [
        (3, "m/one.py"), (2, "a/one.py"), (2, "z/one.py"), (2, "b/session.py")
    ]
    assert [round(c.max_sim, 4) for c in clusters[:3]] == [1.0, 1.0, 1.0]
    # its cosine and its shape similarity, the shape weighing a little more than half (a small shape)
    assert 0.65 <= clusters[3].max_sim < 0.72
    for c in clusters:
        keys = [(m.path, m.start_line) for m in c.members]
        assert keys == sorted(keys)
    assert find_duplicates(project, min_score=0.65) == clusters
    assert find_duplicates(project, min_score=0.65, max_clusters=2) == clusters[:2]


def test_min_cluster_size_drops_smaller_groups(project):
    clusters = find_duplicates(project, min_score=0.93, min_cluster_size=3)
    assert [c.size for c in clusters] == [4]


def test_path_glob_keeps_only_pairs_with_both_ends_inside(project, capsys):
    # lib/helpers.py and src/helpers.py are an exact pair: with one end outside, no cluster.
    clusters = find_duplicates(project, min_score=0.93)
    assert {"lib/helpers.py", "src/helpers.py"} in [{m.path for m in c.members} for c in clusters]
    _, out, _ = run_cli(capsys, "duplicates", "--min-score", "0.93", "--path-glob", "src/**")
    members = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert all(m.startswith("src/") for m in members)
    assert "src/helpers.py:1-3  parse_pair" not in members
    assert "src/billing.py:4-9  total_price" in members
    assert HEADER_RE.match(blocks(out)[0][0]).group(1) == "3"


def test_noduplicate_marked_chunk_never_joins_a_cluster(project):
    every = [m.path for c in find_duplicates(project, min_score=0.5) for m in c.members]
    assert "src/marked.py" not in every
    # ... although it is as close to the originals as the commented copy that does join
    similar = find_similar(project, path="src/billing.py", line=5, min_score=0.93)
    assert "src/marked.py" in [h.path for h in similar]


def test_chunk_is_never_paired_with_the_chunk_that_contains_it(tmp_path, ollama_server, monkeypatch):
    monkeypatch.chdir(tmp_path)
    project = index_held(tmp_path, ollama_server.url, {"src/totals.py": TOTALS})
    # the class chunk spans its method: `similar` leaves it out (sai/query/likeness.py), and their
    # duplicate score is 0.70 (cosine 0.81, shape 0.64): only the nesting keeps them apart
    neighbours = find_similar(project, path="src/totals.py", line=8, min_score=0.0)
    assert (1, 12) not in [(h.start_line, h.end_line) for h in neighbours]
    assert find_duplicates(project, min_score=0.65) == []


def test_nested_exclusion_is_per_file(tmp_path, ollama_server):
    # The same class in two files: the copies pair across files, never within one file.
    files = {"a/totals.py": TOTALS, "b/totals.py": TOTALS}
    project = index_held(tmp_path, ollama_server.url, files)
    clusters = find_duplicates(project, min_score=0.99)
    assert sorted((c.members[0].start_line, c.members[1].start_line) for c in clusters) == [
        (1, 1), (6, 6)
    ]
    assert all({m.path for m in c.members} == {"a/totals.py", "b/totals.py"} for c in clusters)
    # At 0.65 the class of one file and the method of the other (0.70) join the two pairs.
    assert [c.size for c in find_duplicates(project, min_score=0.65)] == [4]


def test_seeding_with_file_keeps_only_clusters_of_that_file(project, capsys):
    code, out, _ = run_cli(capsys, "duplicates", "--json", "--min-score", "0.93",
                           "--file", "src/text_utils.py")
    payload = json.loads(out)
    assert code == 0 and payload["seeded"] is True and payload["count"] == 1
    assert [m["path"] for m in payload["clusters"][0]["members"]] == [
        "src/billing.py", "src/text_utils.py"
    ]
    _, out, _ = run_cli(capsys, "duplicates", "--min-score", "0.93", "--file", "src/session.py")
    assert out == "no near-duplicate clusters (min_score 0.93, min_cluster_size 2, top_k 10)\n"


def test_seeding_with_since_uses_the_files_git_reports(project, capsys, tmp_path):
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t",
                                                 "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    (tmp_path / "src/text_utils.py").write_text(SLUG + "\n# touched\n")
    _, out, _ = run_cli(capsys, "duplicates", "--json", "--min-score", "0.93", "--since", "HEAD")
    payload = json.loads(out)
    assert payload["seeded"] is True
    assert [c["members"][1]["path"] for c in payload["clusters"]] == ["src/text_utils.py"]


@pytest.mark.parametrize(
    "settings",
    [
        {},  # small: every pair in full
        {"SCREEN_FROM": 10, "HEAD_DIMS": 4, "DENSE": 1.0},  # the screen, never falling back
        {"SCREEN_FROM": 10, "HEAD_DIMS": 4, "DENSE": 0.0},  # the screen, every tile in full
        {"CUT_AT": 0},  # every tile cut to its rows' and columns' best first (low thresholds)
        {"COMPACT_AT": 5},  # candidates cut to the top k as they pile up
    ],
)
def test_neighbour_edges_match_brute_force(monkeypatch, settings):
    # Tiles of 7 over 50 rows visit diagonal, off-diagonal and ragged tiles, and seeded blocks.
    monkeypatch.setattr(exact, "TILE", 7)
    for name, value in settings.items():
        monkeypatch.setattr(edges if name == "COMPACT_AT" else exact, name, value)
    rng = np.random.default_rng(3)
    base = rng.standard_normal((10, 24))
    matrix = np.repeat(base, 5, axis=0) + 0.35 * rng.standard_normal((50, 24))
    matrix = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)
    # rows 0-1 and 12-14 share a file; 0 holds 1 and 12 holds 13 (14 sits beside them)
    files = list(range(50))
    files[1], files[13], files[14] = 0, 12, 12
    starts, ends = [1] * 50, [9] * 50
    starts[1], ends[1], starts[13], ends[13], starts[14], ends[14] = 2, 5, 3, 4, 10, 12
    nesting = Nesting.of([f"f{f}.py" for f in files], starts, ends)
    banned = {(0, 1), (1, 0), (12, 13), (13, 12)}

    sims = matrix.astype(np.float64) @ matrix.T.astype(np.float64)
    for min_score in (0.6, -1.0):
        for queries in (None, np.array([0, 7, 8, 12, 21, 49])):
            got = duplicates.neighbour_edges(matrix, top_k=3, min_score=min_score,
                                             queries=queries, nesting=nesting)
            want = set()
            for i in range(50) if queries is None else queries.tolist():
                order = [j for j in np.argsort(-sims[i], kind="stable")
                         if j != i and (i, j) not in banned]
                want |= {(i, int(j)) for j in order[:3] if sims[i, j] >= min_score}
            pairs = list(zip(got.i.tolist(), got.j.tolist(), strict=True))
            assert set(pairs) == want and len(pairs) == len(want)
            np.testing.assert_allclose(got.s, [sims[i, j] for i, j in pairs], atol=1e-5)


# --- the local model: does "near-duplicate" mean what it says? --------------------------------

def test_renamed_copy_clusters_with_its_original_and_unrelated_code_does_not(local_project, monkeypatch):
    monkeypatch.chdir(local_project.config.root)
    clusters = find_duplicates(local_project)
    assert [[m.path for m in c.members] for c in clusters] == [["a/intervals.py", "b/ranges.py"]]
    # MiniLM gives the pair a cosine of about 0.83; their token shapes are the same, which lifts
    # the duplicate score (the mean of the two) above the cosine
    cosine = find_similar(local_project, path="a/intervals.py", line=5)[0].score
    assert cosine < 0.9 < clusters[0].min_sim


# Records of distinct fields, laid out alike: their blind shapes are one (sai/text/shape.py)
RECORDS = "from dataclasses import dataclass\n" + "".join(f'''

@dataclass(frozen=True)
class {name}:
    """{doc}"""

    {fields[0]}: str
    {fields[1]}: str | None
    {fields[2]}: int
    {fields[3]}: int
    {fields[4]}: str | None = None
''' for name, doc, fields in [
    ("NewChunk", "A chunk as an index run writes it.", ["path", "language", "start_line", "end_line", "symbol"]),
    ("PathResult", "One file's outcome of a refresh.", ["key", "reason", "chunks", "removed", "error"]),
    ("ClusterMember", "One member of a duplicate cluster.", ["chunk_id", "symbol", "start", "end", "note"]),
    ("Lease", "Who holds the writer lock and until when.", ["owner", "token", "pid", "expires", "host"]),
])
ROW = RECORDS.split("\n\n\n")[1]  # NewChunk


def test_records_of_distinct_fields_never_cluster_and_copied_logic_and_records_still_do(tmp_path, local_embedder):
    root = write_tree(tmp_path, {"a/intervals.py": ORIGINAL, "b/ranges.py": RENAMED, "models.py": RECORDS,
                                 "legacy/models.py": "from dataclasses import dataclass\n\n\n" + ROW})
    project = Project(load_config(cwd=root, env={}, flags={"embedder": "local", "root": str(root)}),
                      embedder=local_embedder)
    indexer.index(project)
    clusters = find_duplicates(project)
    project.close()
    # the verbatim record copy first (score 1), then the renamed function and its original
    assert [[(m.path, m.symbol) for m in c.members] for c in clusters] == [
        [("legacy/models.py", "NewChunk"), ("models.py", "NewChunk")],
        [("a/intervals.py", "merge_intervals"), ("b/ranges.py", "merge_ranges")],
    ]


# --- duplicates: the original's metric, tiny identical copies --------------------------------

TINY = "def is_ready(self):\n    return self.ready\n"


def test_identical_functions_too_small_for_a_shape_form_a_cluster_of_score_1(tmp_path, ollama_server):
    files = {"a.py": TINY, "b.py": TINY, "c/d.py": "class Box:\n    " + TINY.replace("\n", "\n    "),
             "e.py": "def is_done(self):\n    return self.done\n"}
    project = index_held(tmp_path, ollama_server.url, files)
    clusters = find_duplicates(project)
    seeded = find_duplicates(project, seed_paths=["b.py"])
    unrelated = find_duplicates(project, seed_paths=["e.py"])
    project.close()
    assert [[m.path for m in c.members] for c in clusters] == [["a.py", "b.py", "c/d.py"]]
    assert (clusters[0].min_sim, clusters[0].max_sim) == (1.0, 1.0)
    assert [c.size for c in seeded] == [3] and unrelated == []


def test_metric_cosine_gives_the_original_plain_cosine_edges(tmp_path, ollama_server, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {"a.py": TOTAL, "b.py": COMMENTED, "c.py": TINY, "d.py": TINY, "e.py": SLUG}
    project = index_tree(tmp_path, ollama_server.url, files)
    with project.store.read() as reader:
        rows, matrix, _ = reader.all_chunks()
    project.close()
    code, out, _ = run_cli(capsys, "duplicates", "--metric", "cosine", "--min-score", "0.9", "--json")
    payload = json.loads(out)
    assert code == 0 and payload["metric"] == "cosine"
    cosine = matrix @ matrix.T
    expected = {frozenset((rows[i].path, rows[j].path)) for i in range(len(rows)) for j in range(i)
                if cosine[i, j] >= 0.9}
    found = {frozenset(m["path"] for m in c["members"]) for c in payload["clusters"]}
    assert found == expected and frozenset({"c.py", "d.py"}) in found
    low = min(float(cosine[i, j]) for i in range(len(rows)) for j in range(i) if cosine[i, j] >= 0.9)
    assert min(c["min_sim"] for c in payload["clusters"]) == round(low, 4)


def test_metric_semantic_scores_cosine_and_shape_and_leaves_tiny_identical_chunks_to_copies(
    tmp_path, ollama_server, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    files = {"a.py": TOTAL, "b.py": COMMENTED, "c.py": TINY, "d.py": TINY, "e.py": SLUG}
    index_tree(tmp_path, ollama_server.url, files).close()
    code, out, _ = run_cli(capsys, "duplicates", "--metric", "semantic", "--json")
    payload = json.loads(out)
    assert code == 0 and (payload["metric"], payload["min_score"]) == ("semantic", 0.85)
    found = [sorted(m["path"] for m in c["members"]) for c in payload["clusters"]]
    assert found == [["a.py", "b.py"]]  # the tiny identical pair (c, d) is the copy detector's
    _, out, _ = run_cli(capsys, "duplicates", "--json")
    assert ["c.py", "d.py"] in [sorted(m["path"] for m in c["members"]) for c in json.loads(out)["clusters"]]


# --- duplicates: long units compared whole ---------------------------------------------------


def _long_function(name: str, words: list[str]) -> str:
    """A function of ~90 lines (cut into windows at 2,000 bytes), its locals named from `words`."""
    lines = [f"def {name}({words[0]}, {words[1]}):"]
    for k in range(30):
        a, b = words[k % len(words)], words[(k + 3) % len(words)]
        lines += [f"    {a}_{k} = {b} if {k} > len({words[0]}) else {words[1]}",
                  f"    if {a}_{k} is not None and {k} % 3 == {k % 2}:",
                  f"        {words[1]}.append(({a}_{k}, {k}))"]
    lines.append(f"    return {words[1]}")
    return "\n".join(lines) + "\n"


def test_a_long_function_cut_into_windows_pairs_whole_with_its_renamed_copy(tmp_path, ollama_server):
    original = _long_function("collect", ["items", "out", "row", "cell", "key", "val"])
    # longer names: the copy's windows are cut at other lines than the original's
    renamed = _long_function("gather_all_entries", ["entries_list", "results_acc", "current_record",
                                                   "table_cell_value", "lookup_key_name", "stored_value"])
    project = index_held(tmp_path, ollama_server.url, {"a.py": original, "b.py": renamed})
    with project.store.read() as reader:
        rows, _, _ = reader.all_chunks()
    windows = {path: [(r.start_line, r.end_line) for r in rows if r.path == path] for path in ("a.py", "b.py")}
    assert len(windows["a.py"]) >= 2 and len(windows["b.py"]) > len(windows["a.py"])
    clusters = find_duplicates(project)
    project.close()
    assert len(clusters) == 1
    members = clusters[0].members
    # each function is one member, spanning all its windows, named by its first window's chunk_id
    assert [(m.path, m.start_line, m.end_line) for m in members] == [("a.py", 1, 92), ("b.py", 1, 92)]
    first = {r.path: r.chunk_id for r in rows if r.start_line == 1}
    assert [m.chunk_id for m in members] == [first["a.py"], first["b.py"]]


def test_unit_members_join_overlapping_windows_of_one_symbol_and_nothing_else():
    paths = ["a.py", "a.py", "a.py", "a.py", "a.py", "b.py"]
    starts = [1, 50, 95, 130, 10, 52]
    ends = [58, 100, 120, 140, 20, 60]
    symbols = ["f", "f", "f", "f", None, "f"]
    # 1-58, 50-100, 95-120 overlap: one unit; 130-140 is another `f` (an overload) that touches none;
    # the module chunk and the other file's `f` stay alone
    assert units.unit_members(paths, starts, ends, symbols) == [[0, 1, 2], [3], [4], [5]]


def test_whole_units_join_vectors_and_shapes_of_windows():
    matrix = np.eye(3, dtype=np.float32)
    sigs = np.array([[5, 1], [2, 7], [9, 9]], dtype=np.uint32)
    shapes = Shapes(sigs, np.array([30, 40, 12], dtype=np.uint32), np.ones(3, dtype=bool))
    joined = units.whole_units([[0, 1], [2]], matrix, shapes)
    assert joined.shapes.sigs.tolist() == [[2, 1], [9, 9]]  # MinHash of the union: the minimum
    assert joined.shapes.sizes.tolist() == [70, 12]
    np.testing.assert_allclose(joined.matrix[0], [2 ** -0.5, 2 ** -0.5, 0], atol=1e-6)
    assert joined.first == [0, 2]
