"""The token shape of code: what stays when a copy is renamed, as a MinHash signature.

A renamed copy keeps its keywords, operators, literals and the attributes it touches, while its
own names change. So a chunk's text becomes a token stream where comments, docstrings and
imports are gone, every name of its own becomes `$`, parentheses, semicolons and the quote style
of strings (which formatting changes) are gone, and keywords, operators, literals and the names
after `.`, `->` or `::` (attributes and members, which a copy keeps) stay as they are. Literals
stay because they tell apart what boilerplate shares: forty command classes declaring their
names and descriptions have one structure but not one shape. A few rules keep a renamed copy's
stream its original's in every language: `...` and Rust's `..` are operators (not member dots),
`->` reaches a member only in C, C++ and PHP, a string's interpolations count as `{}`, and in
JavaScript, TypeScript and Rust `{a: b}` with both names its own reads as the shorthand `{a}`.
Its shape is the set of adjacent token pairs, and two
shapes compare by Jaccard similarity, estimated from MinHash signatures stored with each chunk
(SIGNATURE_SIZE 32-bit minima, one per hash function, computed at index time: no model involved).

A chunk with fewer than MIN_PAIRS distinct pairs has no shape: a few tokens say too little.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator

import numpy as np

from sai.source.languages import COMMENT_STYLES, STRING_LITERAL
from sai.text import keywords
from sai.text.keywords import keywords_of

SHAPE_VERSION = 2  # bump when signatures change: indexes then recompute them (no re-embedding)
SIGNATURE_SIZE = 64  # hash functions: the Jaccard estimate's standard error is <= 0.0625
MIN_PAIRS = 8
BANDS, BAND_ROWS = 16, 4  # LSH: pairs sharing any band of 4 minima are candidates
# shape similarity at which band_pairs finds a pair with probability >= 0.988: 1 - (1 - J^4)^16
FOUND_FROM = 0.7

_STRING = rf'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|{STRING_LITERAL}'  # Python's triple quotes first
_QUOTES = "\"'`"
_WORD = r"[A-Za-z_$][A-Za-z0-9_$]*|[0-9](?:[A-Za-z0-9_]|\.(?=[0-9]))*"
# `...` (spread, rest, varargs) and `..`/`..=` (Rust ranges) are one operator each: read as
# dots, they made the name after them look like a member, which a renamed copy changes
_OPERATOR = r"\.\.\.|\.\.=?|->|::|[^\sA-Za-z0-9_$]"
# what a string interpolates (`f"{name}"`, `${name}`, Rust's `"{name}"`) is code, names and all:
# a renamed copy changes it, so an interpolation counts as `{}` whatever it holds
_INTERPOLATION = re.compile(r"\{[^{}\n]*\}")
_LINE_DASHES = r"--[^\n]*"
_COMMENTS = {  # by sai.source.languages.COMMENT_STYLES
    "c": r"//[^\n]*|/\*[\s\S]*?(?:\*/|$)", "hash": r"#[^\n]*",
    "lua": rf"--\[(?P<level>=*)\[[\s\S]*?\](?P=level)\]|{_LINE_DASHES}", "haskell": rf"\{{-[\s\S]*?-\}}|{_LINE_DASHES}",
    "sql": rf"{_LINE_DASHES}|/\*[\s\S]*?(?:\*/|$)", "ml": r"\(\*[\s\S]*?\*\)",
    "fsharp": r"//[^\n]*|\(\*[\s\S]*?\*\)", "julia": r"#=[\s\S]*?=#|#[^\n]*",
    "powershell": r"<#[\s\S]*?#>|#[^\n]*", "lisp": r";[^\n]*|#\|[\s\S]*?\|#", "none": r"(?!)",
}
_COMMENTS["both"] = f"{_COMMENTS['hash']}|{_COMMENTS['c']}"
_TOKENS = {
    style: re.compile(rf"(?P<comment>{comment})|(?P<string>{_STRING})|{_WORD}|{_OPERATOR}")
    for style, comment in _COMMENTS.items()
}
# Import statements, in any of SAI's languages: they say what a file uses, not what its code
# does, and import blocks alike in shape would otherwise pair across a whole tree.
_IMPORTS = re.compile(r"""^[ \t]*(?:
      (?:from[ \t]+\S+[ \t]+)?import\b(?:[^\n(]*\([^)]*\)|[^\n{]*\{[^}]*\}[^\n]*|[^\n]*)
    | export[ \t]+(?:\*|\{[^}]*\})[ \t]*from\b[^\n]*
    | package[ \t]+[\w.]+[ \t]*;?[ \t]*$
    | (?:pub[ \t]+)?use\b[^;\n]*?(?:;|\{[^}]*\}[^\n]*)
    | using[ \t]+[\w.:= \t]+;
    | \#[ \t]*include\b[^\n]*
    | (?:require|require_relative|require_once|include|include_once)(?:[ \t]+|[ \t]*\()['"][^\n]*
    | (?:const|let|var)[ \t]+[^=\n]+=[ \t]*require\([^)]*\)[^\n]*
)""", re.MULTILINE | re.VERBOSE)
_DROPPED = frozenset("();")
_MEMBER = frozenset({".", "->", "::"})
# `->` reaches a member in C, C++, Objective-C and PHP only; elsewhere it starts a lambda's body (Java,
# Kotlin) or a return type (Rust), and the name after it is not a member
_ARROW_MEMBER = frozenset({"c", "cpp", "objc", "php", None})
_SHORTHAND = frozenset({"javascript", "typescript", "tsx", "rust"})  # languages with `{a}` for `{a: a}`
_MASK32 = np.uint64(0xFFFFFFFF)
# multiply-shift hashing: h(x) = (a * x + b) mod 2^64 >> 32, a odd (fixed seed: signatures persist)
_A, _B = (np.random.default_rng(20261129).integers(1, 2**63, size=(2, SIGNATURE_SIZE), dtype=np.uint64)
          | np.array([[1], [0]], dtype=np.uint64))


def tokens(text: str, language: str | None) -> list[str]:
    """The normalised token stream of `text` (see the module doc)."""
    out: list[str] = []
    previous = ""
    reserved = keywords_of(language)
    member = _MEMBER if language in _ARROW_MEMBER or language not in keywords.KEYWORDS else _MEMBER - {"->"}
    source = _IMPORTS.sub("", text)
    for match in _pattern(language).finditer(source):
        token = match.group(0)
        if match.lastgroup == "comment" or token in _DROPPED:
            continue
        if match.lastgroup == "string":
            if _alone_on_line(source, match.start(), match.end()):
                continue  # a docstring, or a string statement like one
            # the quote style is formatting, the text is not
            out.append('"' + _INTERPOLATION.sub("{}", token.strip(_QUOTES)))
        elif token[0].isdigit():
            out.append(token)
        elif token[0].isalpha() or token[0] in "_$":
            out.append(token if token in reserved or previous in member else "$")
        else:
            out.append(token)
        previous = token
    return _fold_shorthand(out) if language in _SHORTHAND else out


def _fold_shorthand(out: list[str]) -> list[str]:
    """`{a: b}` as `{a}`: renaming the local of a shorthand field (`{a}`, Rust's `Foo { a }`)
    writes its old name as the key, so an own name that maps to an own name is read as one."""
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


def signature(text: str, language: str | None) -> bytes:
    """The MinHash signature of the chunk's shape; empty when it has fewer than MIN_PAIRS pairs."""
    ids = np.array([zlib.crc32(t.encode()) for t in tokens(text, language)], dtype=np.uint64)
    pairs = np.unique((ids[:-1] * np.uint64(0x9E3779B1) + ids[1:]) & _MASK32)
    if len(pairs) < MIN_PAIRS:
        return b""
    hashed = (_A[:, None] * pairs[None, :] + _B[:, None]) >> np.uint64(32)
    return hashed.min(axis=1).astype("<u4").tobytes()


def signatures(blobs: list[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """(n, SIGNATURE_SIZE) uint32 matrix of stored signatures and the mask of rows that have one."""
    known = np.array([bool(b) and len(b) == 4 * SIGNATURE_SIZE for b in blobs], dtype=bool)
    matrix = np.zeros((len(blobs), SIGNATURE_SIZE), dtype=np.uint32)
    if known.any():
        chosen = [b for b, k in zip(blobs, known, strict=True) if k]
        matrix[known] = np.frombuffer(b"".join(chosen), dtype="<u4").reshape(-1, SIGNATURE_SIZE)
    return matrix, known


def similarity(sigs: np.ndarray, i: np.ndarray, j: np.ndarray, *, step: int = 65536) -> np.ndarray:
    """Estimated Jaccard similarity of the shapes of rows i[n] and j[n], for each n."""
    out = np.empty(len(i), dtype=np.float32)
    for a in range(0, len(i), step):
        out[a:a + step] = (sigs[i[a:a + step]] == sigs[j[a:a + step]]).mean(axis=1)
    return out


def band_pairs(sigs: np.ndarray, rows: np.ndarray, *, window: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs (i < j by position in `rows`) whose signatures agree on a whole band.

    Rows are sorted by band key; each row pairs with the rows up to `window` places after it
    under the same key, so a bucket of m rows yields all its pairs when m <= window + 1 and a
    chain of overlapping windows (connected, but not every pair) when it is larger.
    """
    for band in range(BANDS):
        keys = _band_keys(sigs[rows, band * BAND_ROWS:(band + 1) * BAND_ROWS])
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        for offset in range(1, window + 1):
            same = np.flatnonzero(ordered[offset:] == ordered[:-offset])
            if not len(same):
                break
            yield rows[order[same]], rows[order[same + offset]]


def _band_keys(band: np.ndarray) -> np.ndarray:
    """One 64-bit key per row for its band's minima (a key collision only adds a candidate)."""
    keys = np.zeros(len(band), dtype=np.uint64)
    for column in range(band.shape[1]):
        keys = keys * np.uint64(0x100000001B3) ^ band[:, column].astype(np.uint64)
    return keys


def _pattern(language: str | None) -> re.Pattern[str]:
    """Comment syntax by language; both `#` and C's for text SAI has no grammar for."""
    return _TOKENS[COMMENT_STYLES.get(language or "", "both")]


def _alone_on_line(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return not text[line_start:start].strip() and not text[end:None if line_end < 0 else line_end].strip()
