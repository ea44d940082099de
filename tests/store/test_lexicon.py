"""The lexical index (store/duckdb/postings.py, store/terms.py): postings kept with the chunks, scored as
DuckDB's FTS did."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pytest
from old_formats import connect_with

from sai.models import IndexMeta, NewChunk
from sai.store import Scope, terms
from sai.store.duckdb import DuckDBStore as Store
from sai.store.terms import CODE_WORDS, ENGLISH, STOPWORDS
from sai.text.lexical import LEXEMES_VERSION, lexemes, query_lexemes

DIM = 8
META = IndexMeta(
    backend="duckdb", embedder="ollama", model="nomic-embed-text", prefix_style="nomic",
    vector_dim=DIM, chunker="ast", chunker_version=1,
)
# The options SAI's FTS index was built with up to index format 5.
FTS_OPTIONS = ("stemmer = 'porter', stopwords = 'english', ignore = '[^a-z0-9_]+', "
               "strip_accents = 0, lower = 1, overwrite = 1")
TEXTS = [
    "def parse_header(line):\n    return line.split(':', 1)  # parse the header line\n",
    "def read_config(path):\n    with open(path) as f:\n        return f.read()\n",
    "class HTTPConnection:\n    def request(self, method, url):\n        return self.send(method, url)\n",
    "def compress(data):\n    return zlib.compress(data)  # compressing data is useful\n",
    "def getUserName(user):\n    return user.name  # the user's name, as they are known\n",
    "def parse(text):\n    return [parse_header(line) for line in text.splitlines()]\n",
    "",
    "def send(self, payload):\n    self.sock.sendall(payload)  # sending sends the parsed payload\n",
]
QUERIES = ["parse header line", "read the config file", "HTTPConnection request", "compress data",
           "getUserName", "send payload over socket", "parsing headers", "nothing matches xyzzy"]


def _row(k: int, text: str, path: str | None = None) -> NewChunk:
    path = path or _key(k)
    return NewChunk(path, "python", 1, 3, f"f{k}", text, f"h{k}-{len(text)}", f"file{k}", False,
                    lexemes(text, path=path, symbol=f"f{k}"), b"")


def _key(k: int) -> str:
    """The file of _row(k), the chunk of id k + 1 in the `store` fixture."""
    return f"src/m{k}.py"


FIXTURE = {k + 1: _row(k, text) for k, text in enumerate(TEXTS)}  # the `store` fixture's chunks, by id


def _vectors(n: int) -> np.ndarray:
    return np.random.default_rng(3).standard_normal((n, DIM)).astype(np.float32)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "code.duckdb", collection="code", lock_timeout_s=10)
    with store.write() as writer:
        writer.create(META)
        writer.replace_files([], [_row(k, t) for k, t in enumerate(TEXTS[:5])], _vectors(5))
    with store.write() as writer:
        writer.replace_files([], [_row(k, t) for k, t in enumerate(TEXTS) if k >= 5], _vectors(3))
    yield store
    store.close()


def _postings(store: Store) -> set[tuple[int, str, int]]:
    """The postings the index file holds (id, term, tf)."""
    store.close()
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        return set(con.execute("SELECT id, term, tf FROM code__postings JOIN code__terms USING (termid)").fetchall())
    finally:
        con.close()


def _terms_of(chunks: dict[int, NewChunk]) -> set[tuple[int, str, int]]:
    """The postings these chunks (by id) make by store/terms.py's rule: (id, term, tf)."""
    return {(i, term, n) for i, c in chunks.items() for term, n in Counter(terms.terms(c.lexemes)).items()}


def _lexemes_as_an_older_sai_wrote_them(store: Store) -> None:
    """Fill the `lexemes` column (SAI writes the terms into the postings only) as an SAI before
    postings did: its FTS index and the postings' rebuild read them there."""
    store.close()
    con = duckdb.connect(str(store.path))
    con.executemany("UPDATE code SET lexemes = ? WHERE id = ?", [[r.lexemes, i] for i, r in FIXTURE.items()])
    con.close()


def _fts_scores(store: Store, query: str) -> list[tuple[int, float]]:
    """What DuckDB's FTS extension (SAI's lexical index up to format 5) answers for `query`, with
    SAI's stop words."""
    store.close()
    con = connect_with("fts")
    con.execute("CREATE TABLE chunks (id BIGINT, lexemes VARCHAR)")
    con.executemany("INSERT INTO chunks VALUES (?, ?)", [[i, r.lexemes] for i, r in FIXTURE.items()])
    con.execute("CREATE TABLE sai_stop (sw VARCHAR)")
    con.executemany("INSERT INTO sai_stop VALUES (?)", [[w] for w in sorted(STOPWORDS)])
    options = FTS_OPTIONS.replace("stopwords = 'english'", "stopwords = 'sai_stop'")
    con.execute(f"PRAGMA create_fts_index('chunks', 'id', 'lexemes', {options})")
    rows = con.execute(
        "SELECT id, score FROM (SELECT id, fts_main_chunks.match_bm25(id, ?) AS score FROM chunks) "
        "WHERE score IS NOT NULL ORDER BY score DESC, id", [query_lexemes(query)]).fetchall()
    con.close()
    return [(int(i), float(s)) for i, s in rows]


def test_bm25_answers_what_duckdbs_fts_index_answered(store: Store) -> None:
    for query in QUERIES:
        expected = _fts_scores(store, query)
        with store.read() as reader:
            got = reader.lexical(query_lexemes(query), 10)
        assert [i for i, _ in got] == [i for i, _ in expected], query
        # the extension's macro takes log10 for the idf, SAI (before and now) the natural log:
        # every score differs by the factor ln 10, the order not at all
        assert [s for _, s in got] == pytest.approx([s * math.log(10) for _, s in expected], rel=1e-9), query
    assert _fts_scores(store, "parse header line")  # the comparison is not between two empties


def test_the_chunk_table_keeps_no_lexemes_the_postings_hold_them(store: Store) -> None:
    store.close()
    con = duckdb.connect(str(store.path), read_only=True)
    try:
        assert con.execute("SELECT count(*), count(lexemes) FROM code").fetchone() == (len(FIXTURE), 0)
    finally:
        con.close()
    assert _postings(store) == _terms_of(FIXTURE)


def test_postings_follow_inserts_and_deletes_by_the_chunks_terms(store: Store) -> None:
    with store.write() as writer:
        writer.remove_files([_key(0), _key(3)])
        writer.replace_files([], [_row(9, TEXTS[0], "src/moved.py")], _vectors(1))
    kept = _postings(store)
    assert {i for i, _, _ in kept} == {2, 3, 5, 6, 7, 8, 9}  # ids 1 and 4 gone, 9 new
    assert kept == _terms_of({i: r for i, r in FIXTURE.items() if i not in (1, 4)}
                             | {9: _row(9, TEXTS[0], "src/moved.py")})
    with store.read() as reader:
        assert reader.lexical(query_lexemes("compress data"), 5) == []  # its only chunk was deleted
        assert 9 in {i for i, _ in reader.lexical(query_lexemes("parse header line"), 5)}  # the moved chunk


def test_stopwords_are_dropped_and_words_stemmed(store: Store) -> None:
    terms = {term for _, term, _ in _postings(store)}
    assert {"pars", "header", "compress", "send"} <= terms  # Porter stems, as FTS stemmed them
    assert not terms & STOPWORDS
    with store.read() as reader:
        assert reader.lexical(query_lexemes("the and of"), 5) == []
        assert reader.lexical(query_lexemes("compressing"), 5)[0][0] == 4


def test_english_words_that_name_code_are_terms(store: Store) -> None:
    """`get`, `name`, `self` are stop words in English and names in code: a query made of them
    finds the chunk they name (`getUserName`), where the extension's list found nothing."""
    assert {"get", "name", "self", "new", "from"} <= CODE_WORDS
    with store.read() as reader:
        assert reader.lexical(query_lexemes("get name"), 5)[0][0] == 5
        assert reader.lexical(query_lexemes("self send"), 5)[0][0] == 8


def test_a_change_of_the_stop_words_changes_the_lexemes_version() -> None:
    """Changed stop words change every index's terms: only a new LEXEMES_VERSION (part of the
    chunking signature) makes the next index run write every chunk's postings again."""
    digest = hashlib.sha256(" ".join(sorted(STOPWORDS)).encode()).hexdigest()[:12]
    assert (LEXEMES_VERSION, digest) == (3, "cf7a3e9c3257"), "bump LEXEMES_VERSION, then this pair"


def test_a_scoped_search_answers_as_an_index_of_only_that_scope(store: Store, tmp_path: Path) -> None:
    scope = [1, 2, 6, 8]  # chunk ids: the chunks of _key(id - 1)
    within = Scope(keys=frozenset(_key(i - 1) for i in scope))
    with store.read() as reader:
        scoped = {q: reader.lexical(query_lexemes(q), 10, scope=within) for q in QUERIES}
    alone = Store(tmp_path / "alone.duckdb", collection="code")
    with alone.write() as writer:
        writer.create(META)
        for k, text in enumerate(TEXTS):
            writer.replace_files([], [_row(k, text)], _vectors(1))  # the same ids: 1..8
        writer.remove_files([_key(i - 1) for i in range(1, 9) if i not in scope])
    with alone.read() as reader:
        for query in QUERIES:
            alone_hits = reader.lexical(query_lexemes(query), 10)
            assert [i for i, _ in scoped[query]] == [i for i, _ in alone_hits], query
            assert [s for _, s in scoped[query]] == pytest.approx([s for _, s in alone_hits]), query
    alone.close()
    assert any(scoped.values())


def test_an_index_an_older_sai_left_with_an_fts_index_gains_postings_in_its_upgrade(store: Store) -> None:
    """SAI loads no extension: a file that still holds the FTS index SAI built up to format 5 (and
    no postings) opens without it, and the upgrade drops that index and writes the postings."""
    before = _postings(store)
    assert before == _terms_of(FIXTURE)
    _lexemes_as_an_older_sai_wrote_them(store)
    con = connect_with("fts", str(store.path))
    con.execute("DROP TABLE code__postings")
    con.execute("DROP TABLE code__refs")
    con.execute(f"PRAGMA create_fts_index('code', 'id', 'lexemes', {FTS_OPTIONS})")
    con.execute("INSERT INTO sai_meta VALUES ('code', 'lexicon_token', 'x'), ('code', 'fts_token', 'y')")
    con.close()
    store.upgrade(5)
    assert _postings(store) == before
    with store.read() as reader:
        assert reader.lexical(query_lexemes("compress data"), 5)[0][0] == 4
        assert not {"lexicon_token", "fts_token"} & set(reader.meta())
    con = duckdb.connect(str(store.path), read_only=True)
    schemas = {r[0] for r in con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()}
    con.close()
    assert "fts_main_code" not in schemas


def test_the_stop_words_are_the_fts_extensions_english_list_less_code_words(tmp_path: Path) -> None:
    """store/terms.py keeps the list the extension made (less words with an apostrophe, which
    lexemes never hold, and the words that name code): the Qdrant backend no longer asks DuckDB."""
    con = connect_with("fts")
    con.execute("CREATE TABLE probe (id INTEGER, t VARCHAR)")
    con.execute("INSERT INTO probe VALUES (1, 'x')")
    con.execute(f"PRAGMA create_fts_index('probe', 'id', 't', {FTS_OPTIONS})")
    listed = {r[0] for r in con.execute("SELECT sw FROM fts_main_probe.stopwords").fetchall()}
    con.close()
    assert ENGLISH == {w for w in listed if "'" not in w}
    assert CODE_WORDS < ENGLISH and STOPWORDS == ENGLISH - CODE_WORDS


def test_terms_stem_as_the_fts_extension_does() -> None:
    words = ["parsing", "headers", "compressed", "connection", "generously", "happily", "sai_store_v2", "x"]
    con = connect_with("fts")
    expected = dict(con.execute("SELECT w, stem(w, 'porter') FROM unnest(?::VARCHAR[]) AS u(w)", [words]).fetchall())
    con.close()
    assert terms.stems(words) == expected
    assert terms.terms("the parsing of headers and the headers") == ["pars", "header", "header"]


def test_stems_hold_when_the_table_of_held_stems_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past _MAX_HELD distinct words the table starts again; a call asking for words held before
    the reset and words new to it still gets every stem (at a million distinct words an index
    run died here of a KeyError)."""
    import threading

    import Stemmer

    monkeypatch.setattr(terms, "_MAX_HELD", 50)
    monkeypatch.setattr(terms, "_held", {})
    stemmer = Stemmer.Stemmer("porter")
    vocabulary = [f"parsing{i}x" if i % 2 else f"header{i}ing" for i in range(400)]
    failures: list[BaseException] = []

    def ask(seed: int) -> None:
        try:
            for start in range(seed, 400, 7):
                words = vocabulary[max(0, start - 30):start + 30]  # half held by the last call, half new
                assert terms.stems(words) == dict(zip(words, stemmer.stemWords(words), strict=True))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=ask, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert len(terms._held) <= 50 + 60
