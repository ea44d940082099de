"""The token shape of code: what stays whatever a copy was renamed to, as a MinHash signature.

A copy renamed by hand, by an IDE or by search-and-replace keeps its structure and changes its
words: its own names, and often the members, types, strings and comments that share those
names. So, as clone detectors normalise before comparing (NiCad's blind renaming, SourcererCC's
token bags), a chunk's text becomes a token stream where comments, docstrings and imports are
gone, parentheses, semicolons and the quote style of strings (which formatting changes) are
gone, every identifier is `$` (own names, members and types alike), every string `"` and every
number `0`, and only keywords (per language: sai/text/keywords.py; Python's built-ins, which a
function may shadow, count as names) and operators stay as they are. Nothing in the stream
depends on a name, so no renaming, consistent or not, in code, strings or comments, changes it.
A few rules keep a copy's stream its original's in every language: `...` and Rust's `..` are
one operator each, a number stops before them (`0..n`), and in JavaScript, TypeScript and Rust
`{a: b}` reads as the shorthand `{a}` that renaming the local behind a shorthand field turns
into it.

A chunk that only declares (a record's typed fields, an interface's signatures, an enum's
members, a module's constants: `declarative`) has no logic a copy could repeat, and blind,
every record of five typed fields is every other one. Its stream keeps its names instead, so it
pairs only with a chunk of nearly the same text. A chunk declares unless something in it does
something: a control-flow, return or function keyword of its language (LOGIC_WORDS), an
operator that computes (`==`, `+=`, `=>`, `+`, `->`, ...), a non-empty block after a parameter
list (`) {`) or a member assignment (`self.x = x`). A function's or method's chunk (CODE_KINDS)
is never declarative, so a long function's window of plain assignments stays blind.

Its shape is the set of the stream's 3-grams (GRAM), and two shapes compare by Jaccard
similarity, estimated from MinHash signatures stored with each chunk (SIGNATURE_SIZE 32-bit
minima, one per hash function, computed at index time: no model involved) followed by the
shape's element count, which says how much a match means (sai/duplicates/score.py). A chunk
with fewer than MIN_GRAMS distinct 3-grams has no shape: a few tokens say too little.
"""

from __future__ import annotations

import builtins
import keyword
import re
import zlib
from collections.abc import Iterator
from functools import cache, lru_cache

import numpy as np

from sai.source.languages import COMMENT_STYLES, STRING_LITERAL
from sai.text.keywords import keywords_of

SHAPE_VERSION = 6  # bump when signatures change: indexes then recompute them (no re-embedding)
SIGNATURE_SIZE = 64  # hash functions: the Jaccard estimate's standard error is <= 0.0625
GRAM = 3  # tokens per shape element: a 3-gram of the stream
MIN_GRAMS = 12  # fewer distinct 3-grams is a one-line body (`self._conn.close()`): no shape
BANDS, BAND_ROWS = 16, 4  # LSH: pairs sharing any band of 4 minima are candidates
# shape similarity at which band_pairs finds a pair with probability >= 0.988: 1 - (1 - J^4)^16
FOUND_FROM = 0.7
# the shape similarity's weight beside the cosine's 1 in a semantic score (semantic_score)
SEMANTIC_SHAPE = 0.4

_STRING = rf'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|{STRING_LITERAL}'  # Python's triple quotes first
_WORD = r"[A-Za-z_$][A-Za-z0-9_$]*|[0-9](?:[A-Za-z0-9_]|\.(?=[0-9]))*"
# `...` (spread, rest, varargs) and `..`/`..=` (Rust ranges) are one operator each, whatever
# the spacing around them
_OPERATOR = r"\.\.\.|\.\.=?|->|::|[^\sA-Za-z0-9_$]"
_LINE_DASHES = r"--[^\n]*"
_COMMENTS = {  # by sai.source.languages.COMMENT_STYLES
    "c": r"//[^\n]*|/\*[\s\S]*?(?:\*/|$)", "hash": r"#[^\n]*",
    "lua": rf"--\[(?P<level>=*)\[[\s\S]*?\](?P=level)\]|{_LINE_DASHES}", "haskell": rf"\{{-[\s\S]*?-\}}|{_LINE_DASHES}",
    "sql": rf"{_LINE_DASHES}|/\*[\s\S]*?(?:\*/|$)", "ml": r"\(\*[\s\S]*?\*\)",
    "fsharp": r"//[^\n]*|\(\*[\s\S]*?\*\)", "julia": r"#=[\s\S]*?=#|#[^\n]*",
    "powershell": r"<#[\s\S]*?#>|#[^\n]*", "lisp": r";[^\n]*|#\|[\s\S]*?\|#", "none": r"(?!)",
}
_COMMENTS["both"] = f"{_COMMENTS['hash']}|{_COMMENTS['c']}"
# Import statements, in any of SAI's languages: they say what a file uses, not what its code
# does, and import blocks alike in shape would otherwise pair across a whole tree.
_IMPORTS = r"""^[ \t]*(?:
      (?:from[ \t]+\S+[ \t]+)?import\b(?:[^\n(]*\([^)]*\)|[^\n{]*\{[^}]*\}[^\n]*|[^\n]*)
    | export[ \t]+(?:\*|\{[^}]*\})[ \t]*from\b[^\n]*
    | package[ \t]+[\w.]+[ \t]*;?[ \t]*$
    | (?:pub[ \t]+)?use\b[^;\n]*?(?:;|\{[^}]*\}[^\n]*)
    | using[ \t]+[\w.:= \t]+;
    | \#[ \t]*include\b[^\n]*
    | (?:require|require_relative|require_once|include|include_once)(?:[ \t]+|[ \t]*\()['"][^\n]*
    | (?:const|let|var)[ \t]+[^=\n]+=[ \t]*require\([^)]*\)[^\n]*
)"""
_DROPPED = frozenset("();")
# What code does, in any of SAI's languages: control flow, returns, raising, definitions of
# functions (a word counts only where it is the language's keyword: `match`, `select` are names
# in Python). A chunk with none of them, and none of the operators below, only declares.
LOGIC_WORDS = frozenset("""if elif else elsif unless then for foreach while do loop until return
    yield await switch case match when select try catch except finally rescue ensure raise throw
    break continue next redo goto defer go def fn func fun function lambda sub proc del delete
    assert with and or not""".split())
# operators of statements and expressions, pairs written without a space between their halves
_LOGIC_OPERATORS = frozenset("== != <= >= && || += -= *= /= %= |= &= ^= ++ -- => := <- <<".split())
# tokens of expressions alone: arithmetic, and `->` (a member through a pointer, a lambda)
_COMPUTING = frozenset({"+", "/", "%", "->"})
# Kinds of unit (sai/chunking/grammars.py KINDS) that are code whatever their tokens: a window
# of a long function may hold only assignments and calls
CODE_KINDS = frozenset({"function", "method", "constructor", "destructor", "operator", "macro", "test"})
# Python's built-ins are names a function may take for its own (`type`, `id`, `str`), and a copy
# renames them then: in the stream they are names like any other
_PY_RESERVED = keywords_of("python") - (frozenset(dir(builtins)) - frozenset(keyword.kwlist))
_SHORTHAND = frozenset({"javascript", "typescript", "tsx", "rust"})  # languages with `{a}` for `{a: a}`
_MASK32 = np.uint64(0xFFFFFFFF)
# The patterns compile and the hash parameters are drawn on first use, not at import: a search
# imports this module (for the duplicates' signatures) and needs neither.


@cache
def _hash_parameters() -> tuple[np.ndarray, np.ndarray]:
    """Multiply-shift hashing: h(x) = (a * x + b) mod 2^64 >> 32, a odd (fixed seed: signatures persist)."""
    drawn = np.random.default_rng(20261129).integers(1, 2**63, size=(2, SIGNATURE_SIZE), dtype=np.uint64)
    a, b = drawn | np.array([[1], [0]], dtype=np.uint64)
    return a, b


@cache
def _imports() -> re.Pattern[str]:
    return re.compile(_IMPORTS, re.MULTILINE | re.VERBOSE)


@cache
def _style_pattern(style: str) -> re.Pattern[str]:
    return re.compile(rf"(?P<comment>{_COMMENTS[style]})|(?P<string>{_STRING})|{_WORD}|{_OPERATOR}")


def tokens(text: str, language: str | None, *, kind: str | None = None) -> list[str]:
    """The normalised token stream of `text` (see the module doc): every name blank, except in a
    declarative chunk (`declarative`), whose stream keeps its names. `kind`: what the chunk's
    unit is (models.Chunk.kind); a function's chunk is never declarative."""
    return _chosen(text, language, kind)[0]


def blind_tokens(text: str, language: str | None) -> list[str]:
    """The stream with every name blank, even a declarative chunk's (its shape before
    SHAPE_VERSION 6)."""
    blind = _streams(text, language)[0]
    return _fold_shorthand(blind) if language in _SHORTHAND else blind


def _chosen(text: str, language: str | None, kind: str | None) -> tuple[list[str], list[str]]:
    """The chunk's stream and its blind stream (the same list when the chunk is not declarative)."""
    blind, named, written = _streams(text, language)
    blind = _fold_shorthand(blind) if language in _SHORTHAND else blind
    if kind not in CODE_KINDS and declarative(written, language):
        return named, blind
    return blind, blind


def _streams(text: str, language: str | None) -> tuple[list[str], list[str], list[re.Match[str]]]:
    """The blind stream, the same with each `$` the name it stands for, and the words, numbers
    and operators as written."""
    blind: list[str] = []
    named: list[str] = []
    written: list[re.Match[str]] = []
    normal = _normal_forms(language)
    source = _imports().sub("", text)
    for match in _pattern(language).finditer(source):
        group = match.lastgroup
        if group is None:  # a word, a number or an operator: its form depends on its text alone
            token = match.group()
            written.append(match)
            form = normal.get(token)
            if form is None:
                form = normal[token] = _normal_form(token, language)
            if form:
                blind.append(form)
                named.append(token if form == "$" else form)
        elif group == "string" and not _alone_on_line(source, match.start(), match.end()):
            blind.append('"')  # a string alone on its line is a docstring or like one: dropped
            named.append('"')
    return blind, named, written


def declarative(written: list[re.Match[str]], language: str | None) -> bool:
    """Whether these tokens (comments, strings and imports left out) only declare: fields,
    constants, type aliases, enum members, signatures, with no statement that does something."""
    reserved = keywords_of(language)
    for at, match in enumerate(written):
        token = match.group()
        if token in LOGIC_WORDS and token in reserved:
            return False
        following = written[at + 1] if at + 1 < len(written) else None
        pair = token + following.group() if following is not None and following.start() == match.end() else ""
        if pair in _LOGIC_OPERATORS or token in _COMPUTING or _body(written, at) or _member_assignment(written, at):
            return False
    return True


def _body(written: list[re.Match[str]], at: int) -> bool:
    """`) {` at token `at`, the block not empty: the body of a function or a control statement
    (an empty one, as a Java record's `{}`, does nothing)."""
    ahead = [m.group() for m in written[at:at + 3]]
    return ahead[:2] == [")", "{"] and ahead[2:] != ["}"]


def _member_assignment(written: list[re.Match[str]], at: int) -> bool:
    """`a.b = c` at token `at` (the `=`): a statement setting a member (`self.x = x`), not a
    field annotated with a dotted type (`when: datetime.date = EPOCH`)."""
    if written[at].group() != "=" or at < 2 or written[at - 2].group() != ".":
        return False
    after = written[at + 1] if at + 1 < len(written) else None
    if after is not None and after.start() == written[at].end() and after.group() in ("=", ">"):
        return False
    start = at - 1
    while start >= 2 and written[start - 1].group() == ".":
        start -= 2
    return start == 0 or written[start - 1].group() != ":"


@cache
def _normal_forms(language: str | None) -> dict[str, str]:
    """The language's token -> stream form memo (its keywords and operators, and `$`, `0`)."""
    return {}


def _normal_form(token: str, language: str | None) -> str:
    """What a word, number or operator becomes in the stream; empty when it is dropped."""
    if token in _DROPPED:
        return ""
    if token[0].isdigit():
        return "0"
    if token[0].isalpha() or token[0] in "_$":
        reserved = _PY_RESERVED if language == "python" else keywords_of(language)
        return token if token in reserved else "$"
    return token


def _fold_shorthand(out: list[str]) -> list[str]:
    """`{a: b}` as `{a}`: renaming the local of a shorthand field (`{a}`, Rust's `Foo { a }`)
    writes its old name as the key, so a name that maps to a name is read as one."""
    folded: list[str] = []
    at = 0
    while at < len(out):
        if (out[at:at + 3] == ["$", ":", "$"] and folded and folded[-1] in ("{", ",")
                and (at + 3 == len(out) or out[at + 3] in (",", "}"))):
            folded.append("$")
            at += 3
            continue
        folded.append(out[at])
        at += 1
    return folded


def elements(text: str, language: str | None, *, kind: str | None = None) -> np.ndarray:
    """The chunk's shape: the distinct GRAM-grams of its stream as 32-bit hashes; empty when its
    blind stream has fewer than MIN_GRAMS (names make more grams distinct, not more to compare)."""
    stream, blind = _chosen(text, language, kind)
    grams = _grams(blind)
    if len(grams) < MIN_GRAMS:
        return np.zeros(0, dtype=np.uint64)
    return grams if stream is blind else _grams(stream)


def _grams(stream: list[str]) -> np.ndarray:
    """The distinct GRAM-grams of a stream as 32-bit hashes."""
    ids = np.array([_token_id(t) for t in stream], dtype=np.uint64)
    if len(ids) < GRAM:
        return np.zeros(0, dtype=np.uint64)
    grams = ids[: len(ids) - GRAM + 1].copy()
    for offset in range(1, GRAM):
        grams = (grams * np.uint64(0x9E3779B1) + ids[offset: len(ids) - GRAM + 1 + offset]) & _MASK32
    return np.unique(grams)


@lru_cache(maxsize=1 << 16)  # keywords, operators, `$`, `"`, `0` and declarative chunks' names
def _token_id(token: str) -> int:
    return zlib.crc32(token.encode())


def signature(text: str, language: str | None, *, kind: str | None = None) -> bytes:
    """The MinHash signature of the chunk's shape and, last, its element count; empty when it has
    no shape (fewer than MIN_GRAMS grams). `kind`: what the chunk's unit is (models.Chunk.kind)."""
    found = elements(text, language, kind=kind)
    if not len(found):
        return b""
    a, b = _hash_parameters()
    hashed = (a[:, None] * found[None, :] + b[:, None]) >> np.uint64(32)
    return np.append(hashed.min(axis=1), len(found)).astype("<u4").tobytes()


def signatures(blobs: list[bytes | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, SIGNATURE_SIZE) uint32 matrix of stored signatures, each row's element count and the
    mask of rows that have one (a signature of an older SHAPE_VERSION has none)."""
    width = 4 * (SIGNATURE_SIZE + 1)
    kept = [b if b is not None and len(b) == width else None for b in blobs]
    known = np.array([b is not None for b in kept], dtype=np.bool_)
    matrix = np.zeros((len(blobs), SIGNATURE_SIZE + 1), dtype=np.uint32)
    if known.any():
        chosen = [b for b in kept if b is not None]
        matrix[known] = np.frombuffer(b"".join(chosen), dtype="<u4").reshape(-1, SIGNATURE_SIZE + 1)
    return np.ascontiguousarray(matrix[:, :SIGNATURE_SIZE]), matrix[:, SIGNATURE_SIZE].copy(), known


def similarity(sigs: np.ndarray, i: np.ndarray, j: np.ndarray, *, step: int = 65536) -> np.ndarray:
    """Estimated Jaccard similarity of the shapes of rows i[n] and j[n], for each n."""
    out = np.empty(len(i), dtype=np.float32)
    for a in range(0, len(i), step):
        out[a:a + step] = (sigs[i[a:a + step]] == sigs[j[a:a + step]]).mean(axis=1)
    return out


def semantic_score(cosine: np.ndarray, similarity: np.ndarray) -> np.ndarray:
    """The semantic score of pairs: how alike two chunks are in what they do, however they are
    named. Their cosine, and SEMANTIC_SHAPE times their shape similarity, over 1 + SEMANTIC_SHAPE:
    two solutions of one task by two authors share a high cosine and little shape, a rewrite
    with every name changed its shape and a lower cosine (`similar`, `duplicates --metric
    semantic`; the weight: benchmarks/DECISIONS.md, "Semantic clones")."""
    return ((np.asarray(cosine, dtype=np.float32) + SEMANTIC_SHAPE * np.asarray(similarity, dtype=np.float32))
            / np.float32(1.0 + SEMANTIC_SHAPE)).astype(np.float32)


def band_pairs(sigs: np.ndarray, rows: np.ndarray, *, window: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs (i < j by position in `rows`) whose signatures agree on a whole band, each once.

    Rows are sorted by band key; each row pairs with the rows up to `window` places after it
    under the same key, so a bucket of m rows yields all its pairs when m <= window + 1 and a
    chain of overlapping windows (connected, but not every pair) when it is larger. A pair an
    earlier band yielded for certain (it shared a bucket there of at most window + 1 rows) is
    not yielded again, so the pairs of all bands need no set to be made distinct: near-copies
    share most bands, and the candidates of a large index, held together, took gigabytes.
    """
    keys = np.empty((len(rows), BANDS), dtype=np.uint64)
    small = np.empty((len(rows), BANDS), dtype=bool)  # the row's bucket in that band yields all its pairs
    for band in range(BANDS):
        keys[:, band] = _band_keys(sigs[rows, band * BAND_ROWS:(band + 1) * BAND_ROWS])
        _, inverse, counts = np.unique(keys[:, band], return_inverse=True, return_counts=True)
        small[:, band] = counts[inverse.ravel()] <= window + 1
    for band in range(BANDS):
        order = np.argsort(keys[:, band], kind="stable")
        ordered = keys[order, band]
        for offset in range(1, window + 1):
            same = np.flatnonzero(ordered[offset:] == ordered[:-offset])
            if not len(same):
                break
            a, b = order[same], order[same + offset]
            if band:
                earlier = ((keys[a, :band] == keys[b, :band]) & small[a, :band]).any(axis=1)
                a, b = a[~earlier], b[~earlier]
            yield rows[a], rows[b]


def _band_keys(band: np.ndarray) -> np.ndarray:
    """One 64-bit key per row for its band's minima (a key collision only adds a candidate)."""
    keys = np.zeros(len(band), dtype=np.uint64)
    for column in range(band.shape[1]):
        keys = keys * np.uint64(0x100000001B3) ^ band[:, column].astype(np.uint64)
    return keys


def _pattern(language: str | None) -> re.Pattern[str]:
    """Comment syntax by language; both `#` and C's for text SAI has no grammar for."""
    return _style_pattern(COMMENT_STYLES.get(language or "", "both"))


def _alone_on_line(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return not text[line_start:start].strip() and not text[end:None if line_end < 0 else line_end].strip()
