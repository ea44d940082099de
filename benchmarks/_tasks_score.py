"""The metrics of benchmarks/tasks.py and its two file-ranking baselines (pure functions, no SAI state)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sai.text.lexical import tokens

K1, B = 1.2, 0.75
TOP_FIVE, TOP = 5, 10
# the baselines' query words leave these out (fixed here, so the baselines never move with SAI's ranking)
STOPWORDS = frozenset("""a an and are as at be by for from has have in into is it its not of on or that the
    this to was were when which while with without do does don't should can cannot will via than then""".split())


def query_terms(query: str) -> list[str]:
    """The query's distinct terms by SAI's own lexical tokens (identifiers whole and split), stopwords out."""
    return list(dict.fromkeys(t for t in tokens(query) if t not in STOPWORDS and len(t) > 1))


def file_terms(path: str, text: str) -> Counter[str]:
    """A whole file's terms, its path's included, as SAI's BM25 sees a chunk's."""
    return Counter(tokens(path) + tokens(text))


@dataclass(frozen=True)
class Corpus:
    """Term counts of the files a baseline ranks, with the statistics BM25 needs."""

    terms: Mapping[str, Counter[str]]
    df: Counter[str]
    lengths: Mapping[str, int]
    mean_length: float

    @classmethod
    def of(cls, terms: Mapping[str, Counter[str]]) -> Corpus:
        df: Counter[str] = Counter()
        for counts in terms.values():
            df.update(counts.keys())
        lengths = {p: sum(c.values()) for p, c in terms.items()}
        return cls(terms, df, lengths, sum(lengths.values()) / max(1, len(lengths)))


def bm25_files(corpus: Corpus, terms: Sequence[str], top: int = TOP) -> list[str]:
    """Okapi BM25 (k1 1.2, b 0.75, idf ln(1 + (N - df + .5)/(df + .5))) over whole files; ties by path."""
    n = len(corpus.terms)
    idf = {t: math.log(1 + (n - corpus.df[t] + 0.5) / (corpus.df[t] + 0.5)) for t in terms if corpus.df[t]}
    scores: dict[str, float] = {}
    for path, counts in corpus.terms.items():
        norm = K1 * (1 - B + B * corpus.lengths[path] / corpus.mean_length)
        s = sum(idf[t] * counts[t] * (K1 + 1) / (counts[t] + norm) for t in idf if counts[t])
        if s > 0:
            scores[path] = s
    return sorted(scores, key=lambda p: (-scores[p], p))[:top]


def grep_files(corpus: Corpus, terms: Sequence[str], top: int = TOP) -> list[str]:
    """Files by how many distinct query terms they hold, then by those terms' total occurrences, then path."""
    keyed = []
    for path, counts in corpus.terms.items():
        present = [counts[t] for t in terms if counts[t]]
        if present:
            keyed.append((-len(present), -sum(present), path))
    return [path for *_, path in sorted(keyed)[:top]]


@dataclass(frozen=True)
class Scores:
    hit5: float
    rr: float
    recall10: float


def score(ranked: Sequence[str | tuple[str, ...]], targets: Iterable[str]) -> Scores:
    """hit@5: a target among the files of the first 5 entries; rr: 1/rank of the first entry in a
    target (0 with none in the list); recall@10: share of targets among the files of the first 10.
    Entries are hits (a file may repeat; a hit with copies folded in names their files too) or files."""
    wanted = set(targets)
    entries = [{e} if isinstance(e, str) else set(e) for e in ranked]
    first = next((i for i, files in enumerate(entries, 1) if files & wanted), None)

    def within(k: int) -> set[str]:
        return set().union(*entries[:k])
    return Scores(float(bool(wanted & within(TOP_FIVE))), 1.0 / first if first else 0.0,
                  len(wanted & within(TOP)) / len(wanted))


def self_test() -> int:
    """The metrics and baselines on hand-made cases whose answers were worked out by hand."""
    hits = ["x.py", "a.py", "x.py", "b.py", "y.py", "c.py"]
    s = score(hits, ["b.py", "c.py"])
    corpus = Corpus.of({"a.py": file_terms("a.py", "parse config parse"), "b.py": file_terms("b.py", "config"),
                        "c.py": file_terms("c.py", "render page")})
    # N=3, df(parse)=1, df(config)=2; idf parse = ln(1 + 2.5/1.5), config = ln(1 + 1.5/2.5)
    bm = bm25_files(corpus, ["parse", "config"])
    checks = [
        ("hit@5 from the 4th hit", s.hit5 == 1.0),
        ("rr of the first target at 4", abs(s.rr - 0.25) < 1e-9),
        ("recall@10: both targets in the first 10", s.recall10 == 1.0),
        ("recall@10 half", score(hits, ["a.py", "z.py"]).recall10 == 0.5),
        ("no target found", score(hits, ["z.py"]) == Scores(0.0, 0.0, 0.0)),
        ("a hit's copies count at its rank", score([("x.py", "b.py"), "a.py"], ["b.py"]).rr == 1.0),
        ("bm25 order", bm == ["a.py", "b.py"]),
        ("grep: distinct terms, then occurrences", grep_files(corpus, ["parse", "config", "page"]) ==
         ["a.py", "b.py", "c.py"]),
        ("query terms: split, stopwords out", query_terms("Fix the parseHTTPHeader for a user") ==
         ["fix", "parsehttpheader", "parse", "http", "header", "user"]),
    ]
    for name, ok in checks:
        print(f"  {name:<44} {'ok' if ok else 'FAILED'}")
    failed = [name for name, ok in checks if not ok]
    print("self-test: " + ("ok" if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0
