"""Token shapes: what a renamed copy keeps, signatures, band candidates, duplicate scores."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures_tree import ORIGINAL, UNRELATED_A

from sai.duplicates import score as duplicates
from sai.duplicates.edges import Shapes

# fixtures_tree.ORIGINAL with a docstring and a comment
from sai.text import shape

# fixtures_tree.ORIGINAL with a docstring and a comment
DOCUMENTED = ORIGINAL.replace(
    "(intervals):\n", '(intervals):\n    """Merge overlapping intervals."""\n'
).replace("in ordered:\n", "in ordered:  # sorted by start\n")
# every name of its own renamed, the docstring and the comment gone, one tuple unparenthesised
RENAMED = '''def join_ranges(spans):
    ordered_spans = sorted(spans, key=lambda p: p[0])
    out = []
    for lo, hi in ordered_spans:
        if out and lo <= out[-1][1]:
            a, b = out[-1]
            out[-1] = a, max(b, hi)
        else:
            out.append((lo, hi))
    return out
'''
JS = '''function total(items) {
  // add them up
  let sum = 0;
  for (const item of items) { sum += item.price * item.qty; }
  return sum;
}'''
JS_RENAMED = '''function addUp(rows) {
  let acc = 0
  for (const r of rows) { acc += r.price * r.qty }
  return acc
}'''


def jaccard(a: str, b: str, language: str | None = "python") -> float:
    sigs, _, known = shape.signatures([shape.signature(a, language), shape.signature(b, language)])
    assert known.all()
    return float(shape.similarity(sigs, np.array([0]), np.array([1]))[0])


def test_tokens_keep_keywords_and_operators_and_blank_every_name_and_literal():
    tokens = shape.tokens("def f(self, value):\n    '''doc'''\n    # note\n    return self.items[value] + 1\n",
                          "python")
    assert tokens == ["def", "$", "self", ",", "$", ":", "return", "self", ".", "$", "[", "$", "]", "+", "0"]


def test_tokens_drop_c_style_comments_and_blank_members_after_arrows():
    tokens = shape.tokens('#include <stdio.h>\nint f(int a) { /* note */ return a->next + 2; } // end', "c")
    assert tokens == ["int", "$", "int", "$", "{", "return", "$", "->", "$", "+", "0", "}"]


def test_tokens_drop_imports_and_read_every_string_as_one_token():
    python = 'import os\nfrom a import (\n    b,\n)\ndef f(x):\n    return x + "ab" + \'cd\' + \'\'\'{x}\'\'\'\n'
    assert shape.tokens(python, "python") == ["def", "$", "$", ":", "return", "$", "+", '"', "+", '"', "+", '"']
    js = 'const fs = require("fs")\nimport {\n  a,\n} from "b"\nfunction g() { return `t` }\n'
    assert shape.tokens(js, "javascript") == ["function", "$", "{", "return", '"', "}"]


def test_a_renamed_copy_has_the_shape_of_its_original_and_unrelated_code_does_not():
    assert jaccard(DOCUMENTED, RENAMED) >= 0.9
    assert jaccard(DOCUMENTED, UNRELATED_A) < 0.3
    assert jaccard(JS, JS_RENAMED, "javascript") >= 0.9


# a constructor renamed by search-and-replace: its parameters, the members named after them, the
# message naming one and the comment all changed, and its literals changed
BY_TEXT = ('''def __init__(self, host, port, timeout=10):
    # timeout in seconds
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    self.host = host
    self.port = port
    self.timeout = timeout
    self.url = "http://%s:%d/" % (host, port)
''', '''def __init__(self, server, portnum, deadline=30):
    # deadline in seconds
    if deadline <= 1:
        raise ValueError(f"deadline should be above zero, not {deadline}")
    self.server = server
    self.portnum = portnum
    self.deadline = deadline
    self.url = "https://%s:%d" % (server, portnum)
''')


def test_a_copy_renamed_by_text_in_members_strings_and_comments_keeps_the_stream():
    original, renamed = BY_TEXT
    assert shape.tokens(original, "python") == shape.tokens(renamed, "python")
    assert jaccard(original, renamed) == 1.0
    # as does one renamed by syntax, which leaves members and strings as they were
    by_syntax = original.replace("self, host, port", "self, h, p").replace("(host, port)", "(h, p)")
    by_syntax = by_syntax.replace("= host\n", "= h\n").replace("= port\n", "= p\n")
    assert by_syntax != original and jaccard(original, by_syntax) == 1.0


def test_comments_and_docstrings_do_not_change_a_signature():
    assert shape.signature(ORIGINAL, "python") == shape.signature(DOCUMENTED, "python")


def test_a_chunk_with_too_few_tokens_has_no_shape():
    assert shape.signature("x = 1\n", "python") == b""
    assert len(shape.signature(ORIGINAL, "python")) == 4 * (shape.SIGNATURE_SIZE + 1)
    sigs, sizes, known = shape.signatures([b"", None, shape.signature(ORIGINAL, "python")])
    assert known.tolist() == [False, False, True] and sigs.shape == (3, shape.SIGNATURE_SIZE)
    # the element count travels with the minima: it says how much a match of this shape means
    assert sizes.tolist() == [0, 0, len(shape.elements(ORIGINAL, "python"))] and sizes[2] >= shape.MIN_GRAMS


def test_a_signature_of_an_older_shape_version_counts_as_none():
    old = shape.signature(ORIGINAL, "python")[: 4 * shape.SIGNATURE_SIZE]  # version 2: minima only
    assert shape.signatures([old])[2].tolist() == [False]


def test_band_pairs_pair_rows_sharing_a_band_and_chain_large_buckets():
    rng = np.random.default_rng(1)
    sigs = rng.integers(0, 2**32, size=(40, shape.SIGNATURE_SIZE), dtype=np.uint64).astype(np.uint32)
    sigs[5, :shape.BAND_ROWS] = sigs[9, :shape.BAND_ROWS]  # one band in common
    sigs[20:30] = sigs[20]  # a bucket of ten identical shapes
    pairs = {tuple(sorted(p)) for a, b in shape.band_pairs(sigs, np.arange(40), window=3)
             for p in zip(a.tolist(), b.tolist(), strict=True)}
    assert (5, 9) in pairs
    bucket = {p for p in pairs if p[0] >= 20}
    # each row of the big bucket meets the next 3 (a connected chain), never all 45 pairs
    assert bucket == {(a, b) for a in range(20, 30) for b in range(a + 1, min(30, a + 4))}
    assert pairs - bucket == {(5, 9)}


def _brute_force(matrix, shapes, top_k, min_score):
    n = len(matrix)
    best = {}
    for i in range(n):
        found = []
        for j in range(n):
            if i != j and shapes.known[i] and shapes.known[j]:
                score = (matrix[i] @ matrix[j] + (shapes.sigs[i] == shapes.sigs[j]).mean()) / 2
                if score >= min_score:
                    found.append((-score, j))
        best[i] = sorted(found)[:top_k]
    return {(i, j) for i, found in best.items() for _, j in found}




def _brute_force(matrix, shapes, top_k, min_score):
    n = len(matrix)
    best = {}
    for i in range(n):
        found = []
        for j in range(n):
            if i != j and shapes.known[i] and shapes.known[j]:
                weight = duplicates.shape_weight(np.array([min(shapes.sizes[i], shapes.sizes[j])]))[0]
                similarity = (shapes.sigs[i] == shapes.sigs[j]).mean()
                score = weight * similarity + (1 - weight) * float(matrix[i] @ matrix[j])
                if score >= min_score - 1e-6:
                    found.append((-score, j))
        best[i] = sorted(found)[:top_k]
    return {(i, j) for i, found in best.items() for _, j in found}


@pytest.mark.parametrize("min_score", [0.55, 0.75])
def test_duplicate_edges_match_brute_force_including_pairs_cosine_alone_misses(min_score):
    rng = np.random.default_rng(7)
    n, dim = 120, 24
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sigs = rng.integers(0, 2**32, size=(n, shape.SIGNATURE_SIZE), dtype=np.uint64).astype(np.uint32)
    for a in range(0, 60, 6):  # pairs of copies: same shape (or 3/4 of it), cosine about 0.6
        sigs[a + 1, :48] = sigs[a, :48]
        sigs[a + 2] = sigs[a]
        matrix[a + 2] = 0.6 * matrix[a] + 0.8 * matrix[a + 2]
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    known = np.ones(n, dtype=bool)
    known[[4, 10]] = False  # no shape: never pairs
    sizes = rng.integers(5, 120, size=n).astype(np.uint32)  # small and large shapes weigh differently
    shapes = Shapes(sigs, sizes, known)
    edges = duplicates.duplicate_edges(matrix, shapes, top_k=3, min_score=min_score)
    got = set(zip(edges.i.tolist(), edges.j.tolist(), strict=True))
    assert got == _brute_force(matrix, shapes, 3, min_score)
    cosines = np.array([matrix[i] @ matrix[j] for i, j in got])
    assert len(got) and (cosines < min_score).any()  # found through the shape, not the cosine
    assert not any(4 in pair or 10 in pair for pair in got)


def test_a_large_identical_shape_outweighs_a_low_cosine_and_a_small_one_does_not():
    # a renamed copy MiniLM no longer recognises (cosine 0.4): its whole shape carries the pair
    # when the shape is large, while two small shapes alike (boilerplate) need the model to agree
    cosine, same = np.array([0.4, 0.4], dtype=np.float32), np.array([1.0, 1.0], dtype=np.float32)
    large, small = duplicates.LARGE_SHAPE, duplicates.SMALL_SHAPE
    scores = duplicates.duplicate_score(cosine, same, np.array([large, small]))
    assert scores[0] >= 0.9 and scores[1] == pytest.approx(0.7)
    weights = duplicates.shape_weight(np.array([1, small, (small + large) // 2, large, 10 * large]))
    assert weights[0] == weights[1] == 0.5 and weights[1] < weights[2] < weights[3] == weights[4]


def test_a_docstring_after_imports_is_still_dropped():
    # the docstring test runs on the text the imports were cut from, not on the original
    body = 'def f(x):\n    """Say what f does."""\n    return g(x) + 1\n'
    assert shape.tokens("import os\nimport sys\n" + body, "python") == shape.tokens(body, "python")
    assert '"Say what f does.' not in shape.tokens("import os\n" + body, "python")


def test_spread_rest_and_varargs_dots_are_one_operator_and_leave_the_name_after_them_own():
    # read as three `.`, the name after `...` looked like a member, which a renamed copy changes
    js = shape.tokens("function f(...args) { return g(...args, ...rest) }", "javascript")
    assert js == ["function", "$", "...", "$", "{", "return", "$", "...", "$", ",", "...", "$", "}"]
    java = shape.tokens("void f(String... names) { g(names); }", "java")
    assert java == ["void", "$", "$", "...", "$", "{", "$", "$", "}"]
    assert jaccard("function f(a, ...items) { return g(...items).map(x => x + 1) }",
                   "function h(b, ...rows) { return g(...rows).map(y => y + 1) }", "javascript") == 1.0




def test_rust_ranges_are_operators_between_names_and_numbers_stop_before_them():
    tokens = shape.tokens("fn f(v: &[u8], n: usize) { for i in 0..n { g(&v[1..=i], 2.5) } }", "rust")
    assert tokens[tokens.index("for"):] == ["for", "$", "in", "0", "..", "$", "{", "$", "&", "$", "[",
                                            "0", "..=", "$", "]", ",", "0", "}", "}"]
    assert shape.blind_tokens("x = 1.5e3", "python") == ["$", "=", "0"]


@pytest.mark.parametrize("language", ["c", "php", "java", "rust"])
def test_the_name_after_an_arrow_is_blank_in_every_language(language):
    # a member (C, PHP), a lambda's body (Java) or a return type (Rust): a copy may rename any
    assert shape.tokens("x = node->next;", language) == ["$", "=", "$", "->", "$"]


@pytest.mark.parametrize(("language", "original", "renamed"), [
    ("javascript", "function f(code, map) { g(code); return { code, map, n: 1 } }",
     "function h(src, m) { g(src); return { code: src, map: m, n: 1 } }"),
    ("typescript", "function f(code: string, map: M) { g(code); return { code, map } }",
     "function h(src: string, m: M) { g(src); return { code: src, map: m } }"),
    ("rust", "fn f(x: u32, y: u32) -> P { let z = x + y; P { x, y, z } }",
     "fn g(a: u32, b: u32) -> P { let c = a + b; P { x: a, y: b, z: c } }"),
])
def test_a_shorthand_field_whose_local_a_copy_renamed_keeps_the_shape(language, original, renamed):
    # renaming the local behind `{code}` writes `{code: src}`: an own name mapped to an own name
    assert shape.tokens(original, language) == shape.tokens(renamed, language)
    assert jaccard(original + "\n" + original, renamed + "\n" + renamed, language) == 1.0




def test_a_field_set_to_a_literal_or_member_is_not_folded():
    tokens = shape.blind_tokens("const o = { n: 1, k: this.key }", "javascript")
    assert tokens == ["const", "$", "=", "{", "$", ":", "0", ",", "$", ":", "this", ".", "$", "}"]
    assert shape.blind_tokens("d = {a: b}", "python") == ["$", "=", "{", "$", ":", "$", "}"]


def test_a_python_local_named_like_a_built_in_is_a_name_a_copy_may_rename():
    original = "def pick(type, id):\n    str = type.lower()\n    return str + id\n"
    renamed = "def choose(kind, key):\n    text = kind.lower()\n    return text + key\n"
    assert shape.tokens(original, "python") == shape.tokens(renamed, "python")
    assert shape.tokens("for x in y: pass", "python")[:3] == ["for", "$", "in"]  # keywords stay
