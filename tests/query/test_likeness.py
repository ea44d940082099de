"""`similar` ranks by the semantic score (sai/query/likeness.py): a rewrite with every name changed
comes before unrelated code that shares the target's names, and a copy found by its shape alone
(below the cosine's candidates) is still found. On the Ollama stand-in, whose hashed bag-of-words
vectors score code by the words it shares."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures_tree import index_held

from sai.duplicates.clusters import find_duplicates
from sai.duplicates.score import duplicate_score
from sai.query import likeness
from sai.query.similar import find_similar
from sai.text import shape

ORIGINAL = '''def run(records, limit):
    kept = []
    for record in records:
        if record.size > limit:
            kept.append(record.name)
        elif record.size == 0:
            continue
    return sorted(kept)
'''
# the same code by someone else: no name of its own is left, members and calls stay
REWRITE = '''def q7(z1, k2):
    a3 = []
    for b4 in z1:
        if b4.size > k2:
            a3.append(b4.name)
        elif b4.size == 0:
            continue
    return sorted(a3)
'''
# common names, other code: they share the target's words, not what it does
UNRELATED = {
    f"jobs/task{n}.py": f'''def run(records, limit):
    """Run the {word} job over the records, up to the limit."""
    total = 0
    while total < limit:
        total = total * {n + 2} + len(records)
    print("run", records, limit, total)
    return {{"records": records, "limit": limit, "total": total}}
''' for n, word in enumerate(["nightly", "weekly", "import", "export", "cleanup", "report"])
}
TREE = {"src/original.py": ORIGINAL, "lib/rewrite.py": REWRITE, **UNRELATED}


@pytest.fixture
def project(tmp_path, ollama_server, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return index_held(tmp_path, ollama_server.url, TREE)


def test_a_rewrite_with_no_shared_name_comes_before_code_sharing_the_names(project):
    hits = find_similar(project, path="src/original.py", line=1, min_score=-1.0, limit=5)
    assert hits[0].path == "lib/rewrite.py"
    assert hits[0].score == pytest.approx(float(shape.semantic_score(np.float32(_cosine(project)), np.float32(1.0))),
                                          abs=1e-4)


def test_by_cosine_alone_the_names_win(project, monkeypatch):
    # what the shape part is for: without it the stand-in's cosine prefers the shared names
    monkeypatch.setattr(shape, "SEMANTIC_SHAPE", 0.0)
    hits = find_similar(project, path="src/original.py", line=1, min_score=-1.0, limit=5)
    assert hits[0].path.startswith("jobs/")
    assert "lib/rewrite.py" not in [h.path for h in hits[:3]]


def test_a_rewrite_beyond_the_cosine_candidates_is_found_by_its_shape(project, monkeypatch):
    monkeypatch.setattr(likeness, "CANDIDATES", 1)  # the cosine's one candidate is an unrelated `run`
    hits = find_similar(project, path="src/original.py", line=1, min_score=-1.0, limit=5)
    assert "lib/rewrite.py" in [h.path for h in hits]
    monkeypatch.setattr(likeness, "SHAPE_ALIKE", 1.01)  # no chunk is that alike: only the cosine's one
    assert [h.path for h in find_similar(project, path="src/original.py", line=1, min_score=-1.0)] != ["lib/rewrite.py"]


def test_min_score_applies_to_the_semantic_score(project):
    every = find_similar(project, path="src/original.py", line=1, min_score=-1.0, limit=10)
    cut = every[0].score - 1e-3
    assert find_similar(project, path="src/original.py", line=1, min_score=cut, limit=10) == [
        h for h in every if h.score >= cut]


def test_semantic_duplicates_score_a_pair_by_its_semantic_or_duplicate_score_whichever_is_higher(project):
    cosine, size = np.float32(_cosine(project)), np.array([len(shape.elements(REWRITE, "python", kind="function"))])
    semantic = float(shape.semantic_score(cosine, np.float32(1.0)))
    copy = float(duplicate_score(np.array([cosine]), np.array([1.0]), size)[0])
    expected = max(semantic, copy)
    clusters = find_duplicates(project, metric="semantic", min_score=expected - 0.01)
    pair = next(c for c in clusters if "src/original.py" in {m.path for m in c.members})
    assert [m.path for m in pair.members] == ["lib/rewrite.py", "src/original.py"]
    assert copy > semantic and pair.max_sim == pytest.approx(expected, abs=1e-4)
    # at a threshold just above the pair's score it is no longer grouped
    above = find_duplicates(project, metric="semantic", min_score=expected + 0.01)
    assert not any({"src/original.py", "lib/rewrite.py"} <= {m.path for m in c.members} for c in above)


def _cosine(project) -> float:
    """The stand-in's cosine of the original and its rewrite."""
    with project.store.read() as reader:
        ids = {r.path: r.id for r in reader.all_chunks()[0]}
        vectors = reader.vectors([ids["src/original.py"], ids["lib/rewrite.py"]])
    return float(vectors[ids["src/original.py"]] @ vectors[ids["lib/rewrite.py"]])


def test_a_store_without_cheap_shapes_reads_its_candidates_shapes_from_their_texts(project, monkeypatch):
    from sai.store.base import IndexReader

    kept = [(h.path, h.start_line, round(h.score, 5)) for h in find_similar(project, path="src/original.py", line=1,
                                                                           min_score=-1.0, limit=5)]
    snippet = [(h.path, round(h.score, 5)) for h in find_similar(project, code=REWRITE, min_score=-1.0, limit=3)]

    def whole_read(self):  # on Qdrant, every chunk of the collection
        raise AssertionError("shapes read")

    monkeypatch.setattr(IndexReader, "shapes", whole_read)
    monkeypatch.setattr(project.store, "cheap_shapes", False)
    hits = find_similar(project, path="src/original.py", line=1, min_score=-1.0, limit=5)
    # every chunk is among the nearest by cosine here: the same answer as from the stored shapes
    assert [(h.path, h.start_line, round(h.score, 5)) for h in hits] == kept
    assert hits[0].path == "lib/rewrite.py"  # the rewrite wins by its shape, not the names
    again = find_similar(project, code=REWRITE, min_score=-1.0, limit=3)
    assert [(h.path, round(h.score, 5)) for h in again] == snippet
