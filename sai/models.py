"""Data that crosses module boundaries: frozen dataclasses only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal, get_args

# ---------------------------------------------------------------- closed choices
# Each closed choice is declared here once, as a Literal; the tuples of names below, argparse
# `choices`, the MCP JSON-schema `enum`s, config validation and the implementation registries
# (sai/chunking/__init__.py, sai/embedders/__init__.py) all derive from it. Adding a backend,
# say, is one more name here plus its implementation.
SearchMode = Literal["hybrid", "semantic", "lexical"]
DuplicateMetric = Literal["duplicate", "cosine", "semantic"]  # what a duplicate edge's score is
EmbedderName = Literal["ollama", "local"]
ChunkerName = Literal["ast", "lines"]
BackendName = Literal["duckdb", "qdrant"]
PrefixStyle = Literal["nomic", "e5", "qwen", "none"]  # query/passage prefix conventions

MODES: tuple[SearchMode, ...] = get_args(SearchMode)
GroupBy = Literal["chunk", "file"]  # search hits: one per chunk, or one per file with its best chunks
GROUPS: tuple[GroupBy, ...] = get_args(GroupBy)
METRICS: tuple[DuplicateMetric, ...] = get_args(DuplicateMetric)
EMBEDDERS: tuple[EmbedderName, ...] = get_args(EmbedderName)
CHUNKERS: tuple[ChunkerName, ...] = get_args(ChunkerName)
BACKENDS: tuple[BackendName, ...] = get_args(BackendName)
PREFIX_STYLES: tuple[PrefixStyle, ...] = get_args(PrefixStyle)


MAX_LIMIT = 50  # the most results a clamped count (an MCP tool's limit or top_k) asks for


def clamped(value: int, *, high: int = MAX_LIMIT) -> int:
    """A count brought into 1..high: the MCP tools clamp what the command line refuses."""
    return max(1, min(high, int(value)))


def sha256_hex(data: str | bytes) -> str:
    """Hex SHA-256 of text (UTF-8) or bytes; the content hash used across SAI."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def chunk_id(key: str, start_line: int, end_line: int, content_hash: str) -> str:
    """A chunk's stable name: the same on every machine and run while the chunk is unchanged,
    a new one when its file key, its lines or its text change (docs/glossary.md, "chunk_id")."""
    return sha256_hex(f"{key}\0{start_line}\0{end_line}\0{content_hash}")[:16]


# The index format. 3: chunks carry a token-shape signature (sai/text/shape.py);
# 4: no HNSW index; 5: chunks carry a kind; 6: a table of references (uses of names)
SCHEMA_VERSION = 6


@dataclass(frozen=True)
class IndexMeta:
    """What an index was built with; a mismatch means the index must be rebuilt."""

    backend: str
    embedder: str
    model: str
    prefix_style: str
    vector_dim: int
    chunker: str
    chunker_version: int
    schema_version: int = SCHEMA_VERSION
    chunking: str = ""


@dataclass(frozen=True)
class FileRow:
    path: str
    size: int
    mtime_ns: int
    file_hash: str
    chunk_count: int = 0


@dataclass(frozen=True)
class ChunkRow:
    id: int
    path: str
    language: str | None
    start_line: int
    end_line: int
    symbol: str | None
    text: str
    no_duplicate: bool = False
    content_hash: str = ""
    kind: str | None = None
    score: float = 0.0

    @property
    def chunk_id(self) -> str:
        return chunk_id(self.path, self.start_line, self.end_line, self.content_hash)


@dataclass(frozen=True)
class NewChunk:
    """A chunk as an index run writes it (store/base.py replace_files), row-aligned with its vector."""

    path: str
    language: str | None
    start_line: int
    end_line: int
    symbol: str | None
    text: str
    content_hash: str
    file_hash: str
    no_duplicate: bool
    lexemes: str  # sai.text.lexical: the code-aware terms BM25 indexes
    shape: bytes | None  # sai.text.shape: the token-shape signature (None: too small)
    kind: str | None = None


# References naming no identifier, written by sai/chunking/references.py for query/resolution.py:
STAR_IMPORT = "*"  # an import of every name of a module (`from m import *`)
MODULE_MARK = "<module>"  # its file is an ES module (it imports or exports): no name leaks in or out


@dataclass(frozen=True)
class Reference:
    """One use of a name in a file (sai/chunking/references.py): its kind (REFERENCE_KINDS), where
    it is, the qualifier written before it (`self`, `os.path`), the module an import bound it to,
    the symbol it resolves to within its file (`Cart.total` for `self.total` in Cart), and the
    unit around it (the lines and symbol of its innermost chunk)."""

    name: str
    kind: str
    line: int
    column: int
    qualifier: str = ""
    module: str = ""
    target: str = ""
    unit: str | None = None
    unit_start: int = 0
    unit_end: int = 0
    unit_id: str = ""  # the chunk_id of that chunk ("": no chunk holds the line)
    language: str | None = None
    path: str = ""  # set when read back from an index

    @property
    def chunk_id(self) -> str | None:
        """The chunk_id of the unit around the use (None: no chunk holds it)."""
        return self.unit_id or None


@dataclass(frozen=True)
class SourceFile:
    """A file the walker accepted: its key (root-relative, '/'-separated) and facts."""

    key: str
    path: str  # the file's OS path as the walk reached it (a str: a Path a file cost 40% of a no-op walk)
    language: str | None
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Chunk:
    """A piece of a file that gets one embedding. Lines are 1-based and inclusive."""

    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str | None = None
    language: str | None = None
    kind: str | None = None  # what the unit is (function, method, class, ...); None for gap chunks

    @property
    def content_hash(self) -> str:
        return sha256_hex(self.text)


@dataclass(frozen=True)
class Signals:
    """What each hybrid-ranking signal contributed to a candidate, by name, in the order
    sai/query/ranking/signals.py declares them (its SIGNALS say what each is and how the fused
    score combines them); read as attributes, `signals.path_match`."""

    values: tuple[tuple[str, float], ...] = ()

    def __getattr__(self, name: str) -> float:
        if not name.startswith("__"):
            for key, value in object.__getattribute__(self, "values"):
                if key == name:
                    return value
        raise AttributeError(f"no ranking signal {name!r}")

    def with_value(self, name: str, value: float) -> Signals:
        """These signals with `name`'s contribution set to `value`."""
        return Signals(tuple((key, value if key == name else old) for key, old in self.values))


@dataclass(frozen=True)
class Explain:
    """Why a search hit ranked where it did: its place in each candidate list and the signals."""

    semantic_rank: int | None = None
    cosine: float | None = None
    lexical_rank: int | None = None
    bm25: float | None = None
    rrf: float | None = None
    signals: Signals | None = None
    fused: float | None = None
    pending_vector: bool = False  # the chunk has no vector yet: found by lexical and symbol evidence only
    model: str | None = None  # the model whose vectors `cosine` compares (the index's); None without one


@dataclass(frozen=True)
class FileChunk:
    """A chunk of a hit's file that also answers the query (search grouped by file)."""

    start_line: int
    end_line: int
    symbol: str | None
    chunk_id: str


@dataclass(frozen=True)
class Hit:
    """One search or similarity result."""

    path: str
    start_line: int
    end_line: int
    symbol: str | None
    score: float
    text: str
    language: str | None = None
    stale: bool = False
    rank: int | None = None
    score_kind: str = "cosine"
    chunk_id: str = ""
    explain: Explain | None = None
    chunks: tuple[FileChunk, ...] | None = None  # grouped by file: the file's best chunks, this one first
    copies: tuple[ClusterMember, ...] | None = None  # hybrid: near-identical chunks of other files folded in
    fused: float | None = None  # hybrid mode: the fused score the hits are ordered by (text rows show it)


@dataclass(frozen=True)
class ClusterMember:
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    chunk_id: str = ""


@dataclass(frozen=True)
class Cluster:
    """A group of near-duplicate chunks joined by edges of similarity >= min_score."""

    members: tuple[ClusterMember, ...]
    min_sim: float
    max_sim: float

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class StoredChunk:
    """A stored chunk as sai_read_chunk shows it: lines, names and full text."""

    path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str | None
    language: str | None
    chunk_id: str
    text: str


@dataclass(frozen=True)
class ChunkContext:
    """A chunk with the chunks around it in its file (sai_read_chunk)."""

    chunk: StoredChunk
    stale: bool
    before: tuple[StoredChunk, ...] = ()
    after: tuple[StoredChunk, ...] = ()
    enclosing: StoredChunk | None = None


@dataclass(frozen=True)
class Definition:
    """Where a symbol is defined (sai_find_symbol): the lines of all its chunks, its first
    chunk's id, and how the name matched (exact, exact_case_insensitive, prefix, ...)."""

    symbol: str
    kind: str | None
    path: str
    start_line: int
    end_line: int
    language: str | None
    chunk_id: str
    match: str


@dataclass(frozen=True)
class Use:
    """A stored use of a name and what it was found to mean: `resolved` when a rule of
    sai/query/resolution.py tied it to one definition (`target`), else only name-matched."""

    reference: Reference
    resolved: bool
    target: Definition | None = None


@dataclass(frozen=True)
class Uses:
    """The uses of a name (`sai refs`): the first `limit`, best first, of `total`."""

    name: str
    uses: tuple[Use, ...]
    total: int
    by_kind: dict[str, int]


@dataclass(frozen=True)
class CallNode:
    """A unit in a call tree (`sai callers`, `sai callees`): where it is, the lines of the calls
    that tie it to its parent, and its own callers or callees one level further down.
    `cycle`: it is already on the way up to the root, so it is not expanded again."""

    symbol: str | None
    path: str
    start_line: int
    end_line: int
    chunk_id: str | None
    lines: tuple[int, ...]
    resolved: bool
    cycle: bool = False
    children: tuple[CallNode, ...] = ()
    more: int = 0


@dataclass(frozen=True)
class CallTree:
    """Callers or callees of a name to `depth` levels."""

    name: str
    direction: str  # "callers" or "callees"
    depth: int
    roots: tuple[CallNode, ...]
    more: int


@dataclass(frozen=True)
class Copy:
    """A unit outside a diff whose code is a near-duplicate of a unit the diff changed."""

    symbol: str | None
    path: str
    start_line: int
    end_line: int
    chunk_id: str
    score: float


@dataclass(frozen=True)
class ChangedUnit:
    """A stored unit a diff changes, who calls it, and the copies of it the diff left alone."""

    symbol: str | None
    kind: str | None
    path: str
    start_line: int
    end_line: int
    chunk_id: str
    callers: tuple[CallNode, ...]
    callers_more: int
    copies: tuple[Copy, ...]


@dataclass(frozen=True)
class Impact:
    """What a change touches (`sai impact`): the units it changes, most called first."""

    since: str
    changed_files: tuple[str, ...]
    units: tuple[ChangedUnit, ...]
    more: int


@dataclass(frozen=True)
class IndexStatus:
    backend: str
    collection: str
    model: str | None
    vector_dim: int | None
    chunk_count: int
    chunker: str | None
    embedder: str | None = None
    file_count: int = 0
    indexed_at: str | None = None
    stale_files: int | None = None
    languages: dict[str, int] = field(default_factory=dict)  # chunks per language name held
    pending_vectors: int = 0  # chunks stored and searchable lexically, still waiting for a vector
    vendored_dirs: tuple[str, ...] = ()  # vendored directories the last index run found (ranked down)
    config_asks: tuple[str, str] | None = None  # the file's embedder and model, where the index's answer


IndexStage = Literal["waiting", "reading", "embedding"]


@dataclass(frozen=True)
class IndexProgress:
    """Where an index run is, for a progress display. `waiting`: for another run of the same
    index to end; `reading`: files read, chunked and stored (no model); `embedding`: vectors
    computed for stored chunks, `chunks_to_embed` in all (0 when not known ahead)."""

    stage: IndexStage
    files_done: int = 0
    files_total: int = 0
    chunks_embedded: int = 0
    chunks_to_embed: int = 0


@dataclass(frozen=True)
class IndexReport:
    """What an index run did; counts refer to the walked files."""

    chunks: int
    files: int
    skipped: int
    embedded: int
    unchanged: int
    removed: int
    exts: tuple[str, ...] = ()  # extensions of the files found (the text summary names them; not in JSON)


@dataclass(frozen=True)
class PathResult:
    """Per-path outcome of refresh/sync: re-indexed with n chunks, or removed with a reason."""

    path: str
    chunks: int | None = None
    removed_reason: str | None = None


@dataclass(frozen=True)
class RefreshReport:
    """What refresh/sync did; `not_found`: keys neither on disk nor in the index (a typo)."""

    refreshed: tuple[PathResult, ...] = field(default_factory=tuple)
    removed: tuple[PathResult, ...] = field(default_factory=tuple)
    not_found: tuple[str, ...] = field(default_factory=tuple)
