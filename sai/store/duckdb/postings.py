"""BM25 over SAI's own postings: written with each chunk batch, scored in numpy.

Why not DuckDB's FTS index, which SAI used up to index format 5 (docs/design.md, "Lexical
search"): it does not follow table changes, so every writing run ended in a full rebuild (9-19 s
at 78k chunks), and its scoring ran in SQL (8 ms a query at 20k chunks, ~90 ms at 78k). Here the
collection has two companion tables, `<collection>__terms` (term, termid: every stemmed term
ever written, numbered once) and `<collection>__postings` (id, termid, tf), which
every write of chunks (writer.py) keeps in the same transaction as the chunks, so they are
never behind them. A process reads the postings once into a CSR (termid -> chunk rows and term
counts) and scores a query over the postings of its terms only. A write's new token patches
that copy instead of reading it again: the chunks it removed are masked out (`alive`) and the
ones it added read into a second, small CSR (`delta`) scored with the first; a delta grown past
a share of the table is folded in by one full read (store/duckdb/copies.py).

The terms are those of store/terms.py (the Qdrant backend's too, and the FTS index's, so
rankings did not move): each chunk's `lexemes` split on spaces, English stop words dropped,
Porter-stemmed. The score is the FTS index's Okapi BM25 (k1 1.2, b 0.75); a scoped search takes
the document count, mean length and document frequencies of the scope, as an index holding only
those chunks would.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import duckdb
import numpy as np
import pyarrow as pa

from sai.store import terms
from sai.store.duckdb.rows import registered

K1, B = 1.2, 0.75
TF_MAX = np.iinfo(np.uint16).max  # a term's count in a chunk, as the CSR holds it (2 bytes a posting)
REBUILD_SLICE = 8192  # chunks whose words a rebuild holds in memory at once


class Postings:
    """The SQL that keeps a collection's terms and postings tables (one connection, writing)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, collection: str) -> None:
        self.con = con
        self.chunks = collection
        self.terms = f"{collection}__terms"
        self.postings = f"{collection}__postings"

    def create(self) -> None:
        self.con.execute(f"CREATE OR REPLACE TABLE {self.terms} (term VARCHAR, termid INTEGER)")
        self.con.execute(f"CREATE OR REPLACE TABLE {self.postings} (id BIGINT, termid INTEGER, tf INTEGER)")

    def add(self, source: str, where: str = "") -> None:
        """Write the postings of the chunks in `source` (columns id, lexemes), numbering new terms.

        Each distinct word is stemmed once (store/terms.py), stop words left out."""
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE sai_words AS SELECT id, unnest(string_split(lexemes, ' ')) AS w "
            f"FROM {source} {where}"
        )
        try:
            words = [w for (w,) in self.con.execute("SELECT DISTINCT w FROM sai_words WHERE w <> ''").fetchall()
                     if w not in terms.STOPWORDS]
            stemmed = terms.stems(words)
            stems = pa.table({"w": pa.array(words, pa.string()),
                              "term": pa.array([stemmed[w] for w in words], pa.string())})
            with registered(self.con, "sai_stems", stems):
                self.con.execute(
                    f"INSERT INTO {self.terms} SELECT term, (SELECT coalesce(max(termid), -1) FROM {self.terms}) "
                    f"+ row_number() OVER (ORDER BY term) FROM (SELECT DISTINCT term FROM sai_stems) AS new "
                    f"ANTI JOIN {self.terms} AS known USING (term)"
                )
                self.con.execute(
                    f"INSERT INTO {self.postings} SELECT id, termid, count(*)::INTEGER FROM sai_words "
                    f"JOIN sai_stems USING (w) JOIN {self.terms} USING (term) GROUP BY id, termid"
                )
        finally:
            self.con.execute("DROP TABLE IF EXISTS sai_words")

    def remove(self, keys_sql: str, params: list[object]) -> None:
        """Delete the postings of the chunks whose path is in `keys_sql` (a bound subquery)."""
        self.con.execute(
            f"DELETE FROM {self.postings} WHERE id IN (SELECT id FROM {self.chunks} WHERE path IN ({keys_sql}))",
            params,
        )

    def rebuild(self) -> None:
        """Terms and postings of every chunk, from nothing, a slice of chunks at a time: from the
        `lexemes` column an SAI before postings wrote (migrations.py); SAI leaves it null now."""
        self.create()
        row = self.con.execute(f"SELECT min(id), max(id) FROM {self.chunks}").fetchone()
        if not row or row[0] is None:
            return
        for low in range(int(row[0]), int(row[1]) + 1, REBUILD_SLICE):
            self.add(self.chunks, f"WHERE id >= {low} AND id < {low + REBUILD_SLICE}")

    def query_terms(self, query_lexemes: str) -> list[int]:
        """The hashes of a query's distinct stemmed words (stop words too: one stems as a term
        may), as the chunks' terms are hashed."""
        stemmed = sorted(set(terms.stems(query_lexemes.split()).values()))
        if not stemmed:
            return []
        # bound as one VARCHAR (stems are [a-z0-9_] words): binding a Python list costs ~10x the query
        found = self.con.execute("SELECT DISTINCT hash(unnest(string_split(?::VARCHAR, ' ')))",
                                 [" ".join(stemmed)]).fetchall()
        return sorted(int(r[0]) for r in found)


@dataclass(frozen=True)
class LexicalTable:
    """Every chunk's postings as a CSR over term ids, row-aligned with the chunk ids (sorted)."""

    token: str
    ids: np.ndarray  # int64, sorted
    doc_len: np.ndarray  # float64 per row: terms in the chunk
    hashes: np.ndarray  # uint64, sorted: DuckDB's hash() of every term ...
    hashed: np.ndarray  # int32: ... and its term id
    starts: np.ndarray  # int64 per term id + 1: where its postings begin
    rows: np.ndarray  # int32 chunk row of each posting, grouped by term id
    tfs: np.ndarray  # uint16 count of the term in that chunk (BM25 saturates long before 65,535)
    alive: np.ndarray | None = None  # bool per row: still in the index (None: every row)
    delta: LexicalTable | None = None  # the chunks written since these rows were read

    def patched(self, token: str, removed: np.ndarray, delta: LexicalTable) -> LexicalTable:
        """This table without the `removed` chunk ids, its rows scored with `delta`'s (which
        replaces the old delta: it holds every chunk written since the full read)."""
        alive = np.ones(len(self.ids), bool) if self.alive is None else self.alive.copy()
        if len(removed):
            alive &= ~np.isin(self.ids, removed)
        return replace(self, token=token, alive=alive, delta=delta)

    @property
    def last_termid(self) -> int:
        """The largest term id the full read knew (a delta reads the terms numbered after it)."""
        return int(self.hashed.max(initial=-1))

    @property
    def written(self) -> np.ndarray:
        """The chunk ids of the delta (the chunks written since the full read)."""
        return np.zeros(0, np.int64) if self.delta is None else self.delta.ids

    @classmethod
    def from_arrow(cls, token: str, tables: tuple[pa.Table, pa.Table, pa.Table]) -> LexicalTable:
        """From the chunk ids (column id), the postings (id, termid, tf) and the terms (hash,
        termid). ~0.3 s at 78k chunks (2.3M postings, 209k terms) on a busy machine.

        Terms are known by their 64-bit hash, not their text: a dict of 209k strings costs ~0.2 s
        to build; two terms of one index share a hash with a chance of about 1 in 10^9."""
        ids, postings, terms = tables
        chunk_ids = ids.column("id").to_numpy().astype(np.int64)
        termids = postings.column("termid").to_numpy().astype(np.int32)
        order = _grouping(termids)
        row_of = np.full(int(chunk_ids.max(initial=0)) + 1, -1, np.int32)  # ids are dense enough
        row_of[chunk_ids] = np.arange(len(chunk_ids), dtype=np.int32)
        rows = row_of[postings.column("id").to_numpy()[order]]
        tfs = np.minimum(postings.column("tf").to_numpy()[order], TF_MAX).astype(np.uint16)
        counts = np.bincount(termids, minlength=1)
        hashes = terms.column("hash").to_numpy().astype(np.uint64)
        by_hash = np.argsort(hashes)
        starts = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        return cls(
            token=token, ids=chunk_ids,
            doc_len=np.bincount(rows, weights=tfs, minlength=len(chunk_ids)).astype(np.float64),
            hashes=hashes[by_hash], hashed=terms.column("termid").to_numpy().astype(np.int32)[by_hash],
            starts=starts, rows=rows, tfs=tfs,
        )

    def __len__(self) -> int:
        own = len(self.ids) if self.alive is None else int(np.count_nonzero(self.alive))
        return own + (0 if self.delta is None else len(self.delta))

    def mask_of(self, among: np.ndarray) -> np.ndarray:
        """The rows of these chunk ids (ids not held are ignored): this table's, then its delta's."""
        keep = np.zeros(len(self.ids), dtype=bool)
        wanted = np.asarray(among, dtype=np.int64)
        if len(self.ids) and len(wanted):
            rows = np.searchsorted(self.ids, wanted).clip(max=len(self.ids) - 1)
            keep[rows[self.ids[rows] == wanted]] = True
        if self.alive is not None:
            keep &= self.alive
        return keep if self.delta is None else np.concatenate([keep, self.delta.mask_of(among)])

    def termids(self, hashes: list[int]) -> list[int]:
        """The term ids of these term hashes (unknown terms left out), the delta's new ones too."""
        wanted = np.asarray(hashes, dtype=np.uint64)
        found: set[int] = set() if self.delta is None else set(self.delta.termids(hashes))
        if len(self.hashes) and len(wanted):
            at = np.searchsorted(self.hashes, wanted).clip(max=len(self.hashes) - 1)
            found.update(int(t) for t in self.hashed[at[self.hashes[at] == wanted]])
        return sorted(found)

    def _postings(self, termid: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, term counts) of one term's postings, the delta's rows after this table's."""
        rows, tfs = np.zeros(0, np.int64), np.zeros(0)
        if termid < len(self.starts) - 1:
            span = slice(self.starts[termid], self.starts[termid + 1])
            rows, tfs = self.rows[span], self.tfs[span]
        if self.delta is not None:
            more, more_tfs = self.delta._postings(termid)
            rows, tfs = np.concatenate([rows, more + len(self.ids)]).astype(np.int64), np.concatenate([tfs, more_tfs])
        return rows, tfs

    def search(self, hashes: list[int], limit: int, *, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """(chunk id, BM25) of the `limit` best chunks for these distinct stemmed terms (by
        hash), best first (ties by id); with `mask`, among those rows only, with their statistics."""
        termids = self.termids(hashes)
        ids, doc_len = self.ids, self.doc_len
        if self.delta is not None:
            ids, doc_len = np.concatenate([ids, self.delta.ids]), np.concatenate([doc_len, self.delta.doc_len])
            if mask is None and self.alive is not None:
                mask = np.concatenate([self.alive, np.ones(len(self.delta.ids), bool)])
        elif mask is None:
            mask = self.alive
        if not termids or limit <= 0 or not len(ids):
            return []
        n = len(ids) if mask is None else int(mask.sum())
        lengths = doc_len if mask is None else doc_len[mask]
        avgdl = float(lengths.mean()) if n else 0.0
        if avgdl <= 0:
            return []
        scores = np.zeros(len(ids))
        for k in termids:
            rows, tfs = self._postings(k)
            if mask is not None:
                keep = mask[rows]
                rows, tfs = rows[keep], tfs[keep]
            if len(rows):
                idf = np.log((n - len(rows) + 0.5) / (len(rows) + 0.5) + 1)
                scores[rows] += idf * tfs * (K1 + 1) / (tfs + K1 * (1 - B + B * doc_len[rows] / avgdl))
        return _top(ids, scores, limit)


def _grouping(keys: np.ndarray) -> np.ndarray:
    """A stable order of non-negative int32 keys: two 16-bit radix passes (numpy sorts 16-bit
    keys by radix), ~0.1 s for 2.3M keys where argsort(kind="stable") takes ~0.16 s."""
    low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high = np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")
    return low[high]


def _top(ids: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The `limit` highest positive scores, best first, ties by id."""
    rows = np.flatnonzero(scores > 0)
    if len(rows) > limit:
        kth = np.partition(scores[rows], len(rows) - limit)[len(rows) - limit]
        rows = rows[scores[rows] >= kth]  # every row tied with the last place stays for the id order
    order = np.lexsort((ids[rows], -scores[rows]))[:limit]
    rows = rows[order]
    return [(int(i), float(s)) for i, s in zip(ids[rows], scores[rows], strict=True)]
