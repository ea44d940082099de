"""search and find_similar through the one search core: hybrid ranking on an indexed tree,
lexical search without an embedder, stale hits, the similar contract's text and JSON.

Most tests run on the Ollama stand-in, whose hashed bag-of-words vectors make identical texts
score 1.0 and lightly edited copies a little less; the test that needs a real notion of "the
same code" (a renamed copy) uses the session's local MiniLM model.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from fixtures_tree import (
    CODE_TREE,
    OPEN,
    TOTAL,
    TOTALS,
    held_copy,
    held_template,
    index_held,
    index_template,
    indexed_copy,
    load,
    run_cli,
)

from sai.errors import EmbedderError, NotFoundError, UsageError
from sai.indexing import indexer
from sai.project import Project
from sai.query import ranking, search
from sai.query.similar import find_similar
from sai.settings import SIMILARITY_DEFAULTS

SIMILAR_ROW_RE = re.compile(r"^  (\d\.\d{4})  (\S+):(\d+)-(\d+)  (\S*)$")
HTTP = '''"""Small HTTP helpers."""


def parse_header(line):
    name, _, value = line.partition(":")
    return name.strip().lower(), value.strip()


def read_headers(lines):
    headers = {}
    for line in lines:
        key, value = parse_header(line)
        headers[key] = value
    return headers


def split(value, sep=","):
    """Split a header value on `sep`; see _split."""
    return [part for part in _split(value, sep) if part]


def _split(value, sep):
    return [part.strip() for part in value.split(sep)]
'''
CLIENT = '''from http_util import parse_header


def first_header(lines):
    """Parse the first header line with parse_header; parse_header splits on the colon."""
    return parse_header(lines[0]) if lines else parse_header("x: y")
'''
TEST_HTTP = '''from http_util import parse_header


def test_parse_header():
    assert parse_header("A: b") == ("a", "b")
    assert parse_header("X:y") == ("x", "y")
'''
DATES = """export function formatDate(date) {
  return date.toISOString().slice(0, 10);
}

export function logDates(dates) {
  // formatDate each one and print it: formatDate, formatDate
  dates.forEach((d) => console.log(formatDate(d)));
}
"""
HTTP_TREE = {
    "src/http_util.py": HTTP,
    "src/client.py": CLIENT,
    "tests/test_http_util.py": TEST_HTTP,
    "web/dates.js": DATES,
}


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



@pytest.fixture(scope="module")
def held(tmp_path_factory):
    return held_template(tmp_path_factory, CODE_TREE)


@pytest.fixture
def held_project(held, tmp_path, ollama_server, monkeypatch):
    """The standard tree indexed with the stand-in, its index held in memory (tests/memory_store.py),
    for the tests that ask the library only; the cwd is its root."""
    monkeypatch.chdir(tmp_path)
    project = held_copy(held, tmp_path, ollama_server.url)
    yield project
    project.close()


@pytest.fixture(scope="module")
def http_template(tmp_path_factory):
    return held_template(tmp_path_factory, HTTP_TREE)


@pytest.fixture
def http_project(http_template, tmp_path, ollama_server):
    """HTTP_TREE indexed with the stand-in, its index held in memory; its root is tmp_path."""
    project = held_copy(http_template, tmp_path, ollama_server.url)
    yield project
    project.close()


# --- search(): hybrid ranking, lexical mode, stale hits -----------------------------------------

@pytest.mark.parametrize(("query", "path", "symbol"), [
    ("parse_header", "src/http_util.py", "parse_header"),
    ("formatDate", "web/dates.js", "formatDate"),
    ("_split", "src/http_util.py", "_split"),
])
def test_exact_identifier_query_returns_its_definition_first(http_project, query, path, symbol):
    hits = search.search(http_project, query)
    assert (hits[0].path, hits[0].symbol) == (path, symbol)
    assert hits[0].rank == 1


def test_lexical_mode_needs_no_embedder_and_scores_in_bm25(http_project, ollama_server):
    ollama_server.stop()
    hits = search.search(http_project, "read headers lines", mode="lexical")
    assert hits and hits[0].symbol == "read_headers"
    assert all(h.score_kind == "bm25" and h.score > 0 for h in hits)
    with pytest.raises(EmbedderError):
        search.search(http_project, "read headers lines", mode="hybrid")


def test_hybrid_hits_carry_cosine_scores_and_ranks(http_project):
    hits = search.search(http_project, "split a header line on the colon", limit=3)
    assert [h.rank for h in hits] == [1, 2, 3]
    assert all(h.score_kind == "cosine" and -1.0 <= h.score <= 1.0 for h in hits)


def test_edited_file_hits_are_stale_until_the_next_index_run(http_project, tmp_path):
    edited = tmp_path / "src/http_util.py"
    edited.write_text(HTTP + "\n# touched\n", encoding="utf-8")
    hits = search.search(http_project, "parse_header", mode="lexical", limit=8)
    stale = {h.path: h.stale for h in hits}
    assert stale["src/http_util.py"] is True
    assert stale["src/client.py"] is False
    indexer.index(http_project)
    assert not any(h.stale for h in search.search(http_project, "parse_header", mode="lexical"))


def test_touched_but_unchanged_file_is_not_stale(http_project, tmp_path):
    path = tmp_path / "src/http_util.py"
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))
    hits = search.search(http_project, "parse_header", mode="lexical")
    assert not any(h.stale for h in hits)


def test_deleted_file_hits_are_stale(http_project, tmp_path):
    (tmp_path / "src/client.py").unlink()
    hits = search.search(http_project, "first header", mode="lexical", limit=8)
    stale = {h.path: h.stale for h in hits}
    assert stale["src/client.py"] is True
    assert stale["src/http_util.py"] is False


def test_bm25_index_follows_incremental_index_runs(http_project, tmp_path):
    assert not search.search(http_project, "checksum", mode="lexical")
    (tmp_path / "src/sums.py").write_text("def checksum(data):\n    return sum(data) % 256\n")
    indexer.index(http_project)
    assert search.search(http_project, "checksum", mode="lexical")[0].path == "src/sums.py"
    (tmp_path / "src/sums.py").unlink()
    indexer.index(http_project)
    assert not search.search(http_project, "checksum", mode="lexical")


def test_bm25_index_follows_refresh(http_project, tmp_path):
    path = tmp_path / "src/http_util.py"
    path.write_text(HTTP + "\n\ndef adler_crc(blob):\n    return zlib.adler32(blob)\n")
    assert not search.search(http_project, "adler_crc", mode="lexical")
    indexer.refresh(http_project, ["src/http_util.py"])
    hits = search.search(http_project, "adler_crc", mode="lexical")
    assert (hits[0].symbol, hits[0].stale) == ("adler_crc", False)


# --- similar --------------------------------------------------------------------------------


def test_similar_by_location_uses_the_innermost_chunk_and_leaves_out_it_and_its_class(
    tmp_path, ollama_server, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    project = index_held(tmp_path, ollama_server.url, {"src/totals.py": TOTALS, "src/copy.py": TOTALS})
    hits = find_similar(project, path="src/totals.py", line=8, min_score=0.0)
    spans = [(h.path, h.start_line, h.end_line, h.symbol) for h in hits]
    assert ("src/totals.py", 6, 10, "Totals.total") not in spans  # the source chunk excludes itself
    assert ("src/totals.py", 1, 12, "Totals") not in spans  # its class holds it: not "similar code"
    # the copy's method scores 1.0; its class, which holds it, takes no place of its own
    assert spans[0] == ("src/copy.py", 6, 10, "Totals.total") and hits[0].score == 1.0
    assert ("src/copy.py", 1, 12, "Totals") not in spans


def test_similar_by_location_text_is_exact(project, capsys):
    code, out, _ = run_cli(capsys, "similar", "--path", "src/session.py", "--line", "6",
                           "--min-score", "0.8")
    assert code == 0
    # a cosine of 0.9266, a shape similarity of 0.56: (0.9266 + 0.4 * 0.56) / 1.4 (shape.semantic_score)
    assert out == "1 similar (min_score 0.8):\n  0.8225  src/session.py:14-17  create_session\n"


def test_similar_by_code_finds_every_copy(project, capsys):
    code, out, _ = run_cli(capsys, "similar", "--code", TOTAL)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{len(lines) - 1} similar (min_score 0.65):"
    rows = [SIMILAR_ROW_RE.match(line).groups() for line in lines[1:]]
    exact = sorted(r[1] for r in rows if r[0] == "1.0000")
    assert exact == ["lib/vendor_billing.py", "src/billing.py", "src/legacy/billing_v1.py"]
    assert [float(r[0]) for r in rows] == sorted((float(r[0]) for r in rows), reverse=True)
    assert {"src/commented.py", "src/marked.py"} <= {r[1] for r in rows}


def test_similar_json_has_the_hit_shape(project, capsys):
    _, out, _ = run_cli(capsys, "similar", "--json", "--path", "src/session.py", "--line", "6",
                        "--min-score", "0.8")
    hits = json.loads(out)["hits"]
    assert len(hits) == 1
    assert {"path", "start_line", "end_line", "symbol", "score", "snippet"} <= set(hits[0])
    assert hits[0]["score"] == 0.8225 and hits[0]["symbol"] == "create_session"
    assert hits[0]["snippet"].startswith("def create_session(tokens, user):")


def test_min_score_filters_similar_hits(held_project):
    everything = find_similar(held_project, code=TOTAL, min_score=0.0, limit=20)
    close = find_similar(held_project, code=TOTAL, min_score=0.95, limit=20)
    assert len(close) < len(everything)
    assert close == [h for h in everything if h.score >= 0.95]
    assert {h.path for h in close} == {
        "lib/vendor_billing.py", "src/billing.py", "src/legacy/billing_v1.py",
        "src/commented.py", "src/marked.py",
    }
    assert len(find_similar(held_project, code=TOTAL, min_score=0.0, limit=2)) == 2


def test_similar_default_min_score_comes_from_the_config(held_project):
    assert held_project.config.similarity.find_similar_min_score == 0.65
    hits = find_similar(held_project, path="src/session.py", line=6)
    assert hits and min(h.score for h in hits) >= 0.65
    assert len(find_similar(held_project, path="src/session.py", line=6, min_score=-1.0)) > len(hits)


def test_similar_at_a_line_without_a_chunk_is_not_found(held_project):
    # the CLI's one error line for it: test_cli.py, test_similar_at_a_line_outside_every_chunk_...
    with pytest.raises(NotFoundError, match=r"^no indexed chunk at src/session\.py:99$"):
        find_similar(held_project, path="src/session.py", line=99)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"code": "x = 1", "path": "src/a.py", "line": 1}, "not both"),
        ({"path": "src/a.py"}, "together"),
        ({"line": 3}, "together"),
        ({}, "give code"),
        ({"code": "  "}, "empty"),
    ],
)
def test_similar_rejects_bad_targets(held_project, kwargs, message):
    with pytest.raises(UsageError, match=message):
        find_similar(held_project, **kwargs)


# --- the local model ----------------------------------------------------------------------------

def test_local_model_has_its_own_calibrated_defaults(local_project):
    config = local_project.config
    row = SIMILARITY_DEFAULTS["all-minilm-l6-v2"]
    assert config.similarity.duplicate_min_score == row["duplicate_min_score"] < 0.93
    assert config.similarity.find_similar_min_score == row["find_similar_min_score"] < 0.85


def test_renamed_copy_is_the_nearest_similar_chunk(local_project, monkeypatch):
    monkeypatch.chdir(local_project.config.root)
    hits = find_similar(local_project, path="a/intervals.py", line=5)
    assert [h.path for h in hits] == ["b/ranges.py"]
    everything = find_similar(local_project, path="a/intervals.py", line=5, min_score=-1)
    assert max(h.score for h in everything if h.path in ("c/config.py", "d/report.py")) < 0.5


def test_search_on_a_real_index_spreads_a_topic_over_files_and_keeps_a_docstring_query_per_function(http_project):
    topic = search.search(http_project, "header parsing", limit=4, explain=True, group_by="chunk")
    paths = [h.path for h in topic]
    assert len(set(paths[:2])) == 2  # the second place goes to another file's best chunk
    for i, hit in enumerate(topic):
        again = hit.path in paths[:i]
        assert (hit.explain.signals.repeat < 1.0) is again
    assert topic[0].explain.signals.file_support > 0
    docstring = search.search(http_project, "Parse a header line into its name and value", limit=4, explain=True,
                              group_by="chunk")
    assert all(h.explain.signals.repeat == 1.0 and h.explain.signals.file_support == 0.0 for h in docstring)
    assert docstring[0].symbol == "parse_header"


def test_search_by_file_ranks_files_for_any_query_and_lists_a_files_other_chunks(http_project):
    # the default answer is one hit per file: file-level signals rank the files whatever the query
    # reads like, and the function a description asks for leads its file's hit
    hits = search.search(http_project, "Parse a header line into its name and value", limit=4, explain=True)
    paths = [h.path for h in hits]
    assert len(paths) == len(set(paths))
    assert hits[0].explain.signals.file_support > 0 and hits[0].symbol == "parse_header"
    for hit in hits:
        assert all(c.chunk_id != hit.chunk_id for c in hit.chunks or ())  # a hit's own chunk is not listed again


def test_search_on_a_real_index_brings_the_file_a_bare_name_names(http_project):
    hits = search.search(http_project, "dates", limit=3, explain=True)
    assert hits[0].path == "web/dates.js" and hits[0].explain.signals.path_match == ranking.FILE_NAMED


def test_a_bare_name_reaches_its_definition_when_neither_list_holds_it(http_project, monkeypatch):
    # as in a large index whose lists are full of callers: here the lists hold no chunk at all
    monkeypatch.setattr(search, "_candidates", lambda *args, **kwargs: ([], []))
    hits = search.search(http_project, "_split", limit=3, explain=True)
    assert hits[0].symbol == "_split" and hits[0].path == "src/http_util.py"
    assert (hits[0].explain.semantic_rank, hits[0].explain.lexical_rank) == (None, None)
    assert hits[0].explain.signals.definition == ranking.NAME_QUERY_BOOST
    # filters hold for the added definitions too, and only hybrid mode adds them
    assert "_split" not in [h.symbol for h in search.search(http_project, "_split", limit=3, language="javascript")]
    assert "_split" not in [h.symbol for h in search.search(http_project, "_split", limit=3, path_glob="web/**")]
    assert search.search(http_project, "_split", limit=3, mode="lexical") == []


def test_a_name_qualified_beyond_the_indexed_symbols_reaches_its_defined_tail(http_project, monkeypatch):
    # `httpkit.` is a package (or a namespace a macro opens) that no symbol holds: the name means `_split`
    monkeypatch.setattr(search, "_candidates", lambda *args, **kwargs: ([], []))
    for query in ("httpkit._split", "httpkit::http_util::_split", "_split()"):
        hits = search.search(http_project, query, limit=3, explain=True)
        assert (hits[0].symbol, hits[0].path) == ("_split", "src/http_util.py"), query
        assert hits[0].explain.signals.definition == ranking.NAME_QUERY_BOOST
    assert search.search(http_project, "httpkit.nowhere", limit=3) == []


def test_explain_names_the_model_whose_vectors_the_cosine_compares(http_project):
    with http_project.store.read() as reader:
        model = reader.meta()["model"]
    assert model
    for mode in ("hybrid", "semantic"):
        assert {h.explain.model for h in search.search(http_project, "header parsing", limit=3, mode=mode,
                                                       explain=True)} == {model}
    assert {h.explain.model for h in search.search(http_project, "header parsing", limit=3, mode="lexical",
                                                   explain=True)} == {None}

