"""Declarative chunks (records, interfaces, enums, constants) keep their names in their shape.

Every chunk here comes from the real tree-sitter chunker, as the indexer cuts it: a class-like
unit's chunk holds its header and fields, its methods are chunks of their own.
"""

from __future__ import annotations

import numpy as np
import pytest

from sai.chunking.treesitter import TreeSitterChunker
from sai.text import shape

CHUNKER = TreeSitterChunker(max_chunk_chars=2000)

# Per language: two records whose fields differ in every name but are laid out alike, so their
# blind streams are the same, and the file key to parse them under.
RECORDS = {
    "python-dataclass": ("python", "m.py", '''@dataclass(frozen=True)
class NewChunk:
    """A chunk as an index run writes it."""

    path: str
    language: str | None
    start_line: int
    end_line: int
    symbol: str | None = None
''', '''@dataclass(frozen=True)
class PathResult:
    """One file's outcome."""

    key: str
    reason: str | None
    chunks: int
    removed: int
    error: str | None = None
'''),
    "python-typeddict": ("python", "m.py", '''class HitOut(TypedDict, total=False):
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    score: float
''', '''class SetupOut(TypedDict, total=False):
    client: str
    written: int
    skipped: int
    config: str | None
    elapsed: float
'''),
    "go-struct": ("go", "m.go", '''package m

type FileRow struct {
	Path     string `json:"path"`
	Hash     string `json:"hash"`
	Chunks   int
	Language *string
	Symbols  []string
	Counts   map[string]int
	Age      time.Duration
}
''', '''package m

type Lease struct {
	Owner    string `json:"owner"`
	Token    string `json:"token"`
	Expires  int
	Holder   *string
	Waiters  []string
	Grants   map[string]int
	Timeout  time.Duration
}
'''),
    "typescript-interface": ("typescript", "m.ts", '''export interface Hit {
  path: string;
  startLine: number;
  endLine?: number;
  readonly symbol: string | null;
  score: number;
}
''', '''export interface Lease {
  owner: string;
  token: number;
  expires?: number;
  readonly holder: string | null;
  attempts: number;
}
'''),
    "java-fields": ("java", "M.java", '''public class User {
    private String name;
    private int age;
    private String email;
    private final List<String> tags = new ArrayList<>();
}
''', '''public class Invoice {
    private String number;
    private int total;
    private String currency;
    private final List<String> lines = new ArrayList<>();
}
'''),
    "java-record": ("java", "M.java", '''public record Hit(String path, int startLine, int endLine,
                  String symbol, double score, boolean exact) {}
''', '''public record Lease(String owner, int token, int expires,
                    String holder, double weight, boolean held) {}
'''),
}


def unit_chunk(text: str, key: str, language: str):
    """The file's one class-like chunk, as the indexer cuts it."""
    (chunk,) = [c for c in CHUNKER.chunk(key, text, language) if c.symbol]
    return chunk


def jaccard(a: bytes, b: bytes) -> float:
    sigs, _, known = shape.signatures([a, b])
    assert known.all()
    return float(shape.similarity(sigs, np.array([0]), np.array([1]))[0])


@pytest.mark.parametrize("case", list(RECORDS))
def test_records_laid_out_alike_with_other_names_no_longer_share_a_shape(case):
    language, key, first, second = RECORDS[case]
    a, b = unit_chunk(first, key, language), unit_chunk(second, key, language)
    # blind, the two are one shape: what paired them before SHAPE_VERSION 6
    assert shape.blind_tokens(a.text, language) == shape.blind_tokens(b.text, language)
    assert shape.tokens(a.text, language, kind=a.kind) != shape.blind_tokens(a.text, language)
    sig_a, sig_b = shape.signature(a.text, language, kind=a.kind), shape.signature(b.text, language, kind=b.kind)
    assert jaccard(sig_a, sig_b) < 0.3


@pytest.mark.parametrize("case", list(RECORDS))
def test_a_record_copied_with_its_names_keeps_its_shape(case):
    language, key, first, _ = RECORDS[case]
    copy = first.replace("\n", "  \n", 1)  # reformatted, names kept
    a, b = unit_chunk(first, key, language), unit_chunk(copy, key, language)
    sig_a, sig_b = shape.signature(a.text, language, kind=a.kind), shape.signature(b.text, language, kind=b.kind)
    assert jaccard(sig_a, sig_b) == 1.0


LOGIC = {
    "python": ("m.py", '''class Box:
    width: int

    def area(self, scale):
        total = self.width * scale
        if total > 10:
            return total
        return 0
'''),
    "go": ("m.go", '''package m

func (b *Box) Area(scale int) int {
	total := b.Width * scale
	return total
}
'''),
    "typescript": ("m.ts", '''export class Box {
  width = 0;
  area(scale: number): number {
    const total = this.width * scale;
    return total > 10 ? total : 0;
  }
}
'''),
    "java": ("M.java", '''public class Box {
    private int width;
    public int area(int scale) {
        int total = width * scale;
        return total;
    }
}
'''),
}


@pytest.mark.parametrize("language", list(LOGIC))
def test_a_function_or_method_keeps_its_blind_shape(language):
    key, text = LOGIC[language]
    methods = [c for c in CHUNKER.chunk(key, text, language) if c.kind in ("function", "method")]
    assert methods
    for chunk in methods:
        assert shape.tokens(chunk.text, language, kind=chunk.kind) == shape.blind_tokens(chunk.text, language)


@pytest.mark.parametrize(("language", "text"), [
    ("python", "class Registry:\n    names: list[str] = []\n    if DEBUG:\n        names.append('x')\n"),
    ("python", "LIMIT = 10\nDEFAULT = LIMIT + 1\n"),
    ("python", "self.width = width\nself.height = height\n"),
    ("go", "x := compute(a)\n"),
    ("typescript", "const area = (w: number) => w * 2;\n"),
    ("java", "static { REGISTRY.put(KEY, value); }\nvoid run() { start(); }\n"),
])
def test_a_chunk_that_does_something_is_not_declarative(language, text):
    assert shape.tokens(text, language) == shape.blind_tokens(text, language)


@pytest.mark.parametrize(("language", "text"), [
    ("python", "class Color(Enum):\n    RED = 1\n    GREEN = 2\n"),
    ("python", "LIMIT = 10\nPATTERN = re.compile(r'x+')\nNAMES = frozenset({'a', 'b'})\n"),
    ("typescript", "type Id = string | number;\nexport type Pair = [Id, Id];\n"),
    ("go", "const (\n\tRed Color = iota\n\tGreen\n)\n"),
    ("go", "type Reader interface {\n\tRead(p []byte) (n int, err error)\n}\n"),
    ("python", "class Window:\n    start: datetime.date = EPOCH\n    size: np.ndarray = None\n"),
])
def test_constants_enums_aliases_and_signatures_are_declarative(language, text):
    assert shape.tokens(text, language) != shape.blind_tokens(text, language)


def test_a_function_chunk_is_never_declarative_whatever_its_tokens():
    window = "    first = load(path)\n    second = parse(first)\n"  # a long function's later window
    assert shape.tokens(window, "python") != shape.blind_tokens(window, "python")
    assert shape.tokens(window, "python", kind="function") == shape.blind_tokens(window, "python")
