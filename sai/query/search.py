"""search: the chunks that answer a question, for every front end (find_similar: similar.py;
status: status.py; find_duplicates: sai/duplicates/clusters.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from sai.errors import StoreError, UsageError
from sai.models import GROUPS, MODES, ChunkRow, Explain, Hit
from sai.project import Project
from sai.query.definitions import CALLABLE, line_definition, preferred
from sai.query.freshness import stale_keys
from sai.query.hits import Filters, best_first, hit_of
from sai.query.places import places, with_members
from sai.query.ranking import Candidate, bare_name, fuse, in_scope, merge, scopes_of
from sai.source import vendored as vendored_code
from sai.store import IndexReader, Scope
from sai.text.lexical import query_lexemes

CANDIDATES = 50  # per list, at least 4 x limit: what hybrid ranking fuses
DEFINITIONS = 5  # a bare name's definitions added to hybrid's candidates (docs/design.md, "Search")
DEFINITIONS_READ = 50  # of which the closest are chosen (query/definitions.py): a partial class has many
LINE_DEFINITIONS_READ = 1000  # the chunks holding a name no unit defines, read for a line defining it
SCOPED = 20  # per list: the best chunks of the place a leading scope names, ranked after the list's own


def search(
    project: Project,
    query: str,
    *,
    limit: int = 8,
    language: str | None = None,
    path_glob: str | None = None,
    mode: str = "hybrid",
    explain: bool = False,
    group_by: str = "file",
) -> list[Hit]:
    """Chunks that answer `query`, best first, among those passing the language and glob filters.

    Filters choose the chunks searched, not the hits kept: a filtered search answers as an index
    holding only the matching chunks would. `score` stays the cosine similarity of hit and
    query (BM25 in lexical mode, which needs no embedder); in hybrid mode the order is the
    fused rank, given in `rank`. With `explain`, each hit says why it ranked there. In hybrid
    mode each hit is one place: chunks ranked below it that overlap it (a container and its
    member) or continue its unit (the next window of a long function) are folded into it, listed
    in its `chunks` with it, and take no slot; so are near-identical copies in other files (its
    `copies`). With `group_by` "file", each file comes once, as its best chunk, with the lines of
    its best chunks (up to FILE_CHUNKS, among the candidates) in `chunks`.
    """
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}'; choose one of: {', '.join(MODES)}")
    if group_by not in GROUPS:
        raise UsageError(f"unknown group_by '{group_by}'; choose one of: {', '.join(GROUPS)}")
    check_query(query)
    filters = Filters.of(language=language, path_glob=path_glob)
    by_file = group_by == "file"
    wanted = limit if mode == "semantic" and not by_file else max(CANDIDATES, 4 * limit)
    with project.store.read() as reader:
        meta = project.indexed_meta(reader)  # before the embedder: a missing index is the error
        scope = filters.scope(reader)
        embed = mode != "lexical" and _has_vectors(project, meta, mode)
        vector = project.embedder.embed_query(query) if embed else None
        if vector is not None:
            project.check_meta(meta, vector_dim=int(vector.shape[0]))
        semantic, lexical = _candidates(reader, query, vector, wanted, mode=mode, scope=scope)
        named = _named_place(reader, query, scope) if mode == "hybrid" else None
        if named is not None:
            more = _candidates(reader, query, vector, SCOPED, mode=mode, scope=named)
            semantic, lexical = _extended(semantic, more[0]), _extended(lexical, more[1])
        defined, defining = _definitions(reader, query, scope) if mode == "hybrid" else ([], frozenset())
        weight = _vector_share(reader) if mode == "hybrid" and vector is not None else 1.0
        ordered = _order(mode, semantic, lexical, query, defined, defining=defining, semantic_weight=weight,
                         vendored=vendored_code.from_meta(meta), by_file=by_file)
        groups = places(reader, ordered, limit, fold=mode == "hybrid", by_file=by_file)
        chosen, pending = _with_bodies(reader, [group[0] for group in groups], vector, mode=mode)
        stored = reader.files([c.row.path for c in chosen])
    stale = stale_keys(project.config.root, stored, [c.row.path for c in chosen])
    hits = [_ranked_hit(c, rank, mode, stale) for rank, c in enumerate(chosen, start=1)]
    hits = [with_members(h, group) for h, group in zip(hits, groups, strict=True)]
    if not explain:
        return hits
    model = meta.get("model") if vector is not None else None
    return [replace(h, explain=_explain(c, mode, pending=c.row.id in pending, model=model))
            for h, c in zip(hits, chosen, strict=True)]


def check_query(query: str, *, name: str = "query") -> None:
    """Refuse an empty question (the command line asks before its index run, as `--query`)."""
    if not query.strip():
        raise UsageError(f"{name} is empty; give a few words describing the code you want")


def _has_vectors(project: Project, meta: dict[str, str], mode: str) -> bool:
    """Whether any chunk has its vector yet (the first ones record the dimension); a semantic
    search of an index with none has nothing to rank and says so."""
    if meta.get("vector_dim", "0") != "0":
        return True
    if mode == "semantic":
        raise StoreError(f"the index '{project.config.collection}' has no vectors yet (an index run stores "
                         "chunks first, then embeds them); search in hybrid or lexical mode meanwhile, "
                         "or run `sai` to finish the vectors")
    return False


def _explain(c: Candidate, mode: str, *, pending: bool, model: str | None) -> Explain:
    """A hit's places in the candidate lists and, in hybrid mode, its fused score's parts;
    `pending`: its chunk has no vector yet, so lexical and symbol evidence alone found it;
    `model`: the index's model, whose vectors the cosine compares (None when no query vector)."""
    hybrid = mode == "hybrid"
    return Explain(
        pending_vector=pending, model=model,
        semantic_rank=c.semantic_rank, cosine=None if mode == "lexical" or pending else float(c.row.score),
        lexical_rank=c.lexical_rank, bm25=c.bm25, rrf=c.rrf if hybrid else None,
        signals=c.signals if hybrid else None, fused=c.fused if hybrid else None,
    )


def _candidates(
    reader: IndexReader, query: str, vector: np.ndarray | None, wanted: int, *, mode: str, scope: Scope,
) -> tuple[list[ChunkRow], list[tuple[ChunkRow, float]]]:
    """The semantic list (rows scored by cosine) and the lexical list (rows with BM25).

    Rows come without text: ranking needs only paths and symbols, and reading the text and
    vector columns costs ~15x more than the ids (measured at 20k chunks; docs/design.md, "Vector search").
    """
    near = reader.nearest(vector, wanted, scope=scope) if vector is not None else []
    lex = reader.lexical(query_lexemes(query), wanted, scope=scope) if mode != "semantic" else []
    ids = list(dict.fromkeys([i for i, _ in near] + [i for i, _ in lex]))
    rows = reader.chunks(ids, text=False)
    cosine = dict(near)
    scored = {r.id: replace(r, score=float(cosine.get(r.id, 0.0))) for r in rows}
    semantic = sorted((scored[i] for i, _ in near if i in scored), key=lambda r: best_first(r.score, r))
    lexical = sorted(((scored[i], score) for i, score in lex if i in scored), key=lambda p: best_first(p[1], p[0]))
    return semantic, lexical


def _named_place(reader: IndexReader, query: str, scope: Scope) -> Scope | None:
    """The chunks of the place a leading scope names (`fix(etag): …`, `ignore/types: …`) within
    the question's filters, or None: what the lists search a second time, so the files of the
    place that neither list reached can still be answered (the scope_match signal ranks them)."""
    scopes = scopes_of(query)
    if not scopes:
        return None
    keys = frozenset(k for k in (scope.keys if scope.keys is not None else reader.files()) if in_scope(k, scopes))
    return Scope(scope.language, keys) if keys else None


T = TypeVar("T", ChunkRow, tuple[ChunkRow, float])


def _extended(ranked: list[T], more: list[T]) -> list[T]:
    """A candidate list followed by the chunks of `more` it lacks, in their order."""
    def row(item: T) -> ChunkRow:
        return item if isinstance(item, ChunkRow) else item[0]
    held = {row(item).id for item in ranked}
    return ranked + [item for item in more if row(item).id not in held]


def _with_bodies(
    reader: IndexReader, chosen: list[Candidate], vector: np.ndarray | None, *, mode: str
) -> tuple[list[Candidate], set[int]]:
    """The chosen candidates with their text and their cosine to the query when there is one;
    and the ids of those whose chunk has no vector yet (their score stays 0)."""
    ids = [c.row.id for c in chosen]
    texts = {r.id: r.text for r in reader.chunks(ids)}
    vectors = reader.vectors(ids) if vector is not None else {}
    scores = np.stack(list(vectors.values())) @ np.asarray(vector, dtype=np.float32) if vectors else np.zeros(0)
    cosines = {i: float(s) for i, s in zip(vectors, scores, strict=True)}
    pending = set() if mode == "lexical" else set(ids) - set(cosines)
    return [replace(c, row=replace(c.row, text=texts.get(c.row.id, ""),
                                   score=cosines.get(c.row.id, c.row.score))) for c in chosen], pending


def _definitions(reader: IndexReader, query: str, scope: Scope) -> tuple[list[ChunkRow], frozenset[int]]:
    """For a query that is one name (`Engine`, `Sinatra::Helpers`), the first chunks of the
    definitions of that name within the scope, whether or not either list found them. A name
    qualified by more than the index's symbols hold (a package, `gin.Engine`; a namespace a macro
    opens, `fmt::format_to`) means its longest qualified tail that is defined (`Engine`). When no
    unit defines it, the chunks with a line that does (a macro, an alias, a constant), and their
    ids: ranking boosts those for the line, not for a symbol."""
    name = bare_name(query)
    if name is None:
        return [], frozenset()
    symbols = reader.symbols()
    parts = name.split(".")
    for start in range(len(parts)):
        ids = symbols.defining_rows(".".join(parts[start:]), limit=DEFINITIONS_READ)
        rows = [r for r in reader.chunks(ids, text=False) if scope.admits(r.language, r.path)] if ids else []
        if rows:
            return preferred(rows, name, limit=DEFINITIONS), frozenset()
    by_line = _line_definitions(reader, parts[-1], scope)
    return by_line, frozenset(r.id for r in by_line)


def _line_definitions(reader: IndexReader, name: str, scope: Scope) -> list[ChunkRow]:
    """The chunks, among those the whole name finds lexically, holding a line that defines it,
    functions' and methods' locals left out (query/definitions.py)."""
    whole = next(iter(query_lexemes(name).split()), None)  # the name itself, not the words it is made of
    if whole is None:
        return []
    ids = [i for i, _ in reader.lexical(whole, LINE_DEFINITIONS_READ, scope=scope)]
    defines = line_definition(name)
    rows = [r for r in reader.chunks(ids) if r.kind not in CALLABLE and defines.search(r.text)] if ids else []
    return [replace(r, text="") for r in rows[:DEFINITIONS]]


def _order(
    mode: str, semantic: list[ChunkRow], lexical: list[tuple[ChunkRow, float]], query: str,
    defined: Sequence[ChunkRow] = (), *, defining: frozenset[int] = frozenset(), semantic_weight: float = 1.0,
    vendored: tuple[str, ...] = (), by_file: bool = False,
) -> list[Candidate]:
    if mode == "semantic":
        return merge(semantic, [])
    if mode == "lexical":
        return merge([], lexical)
    return fuse(merge(semantic, lexical, defined), query, semantic_weight=semantic_weight, defining=defining,
                vendored=vendored, by_file=by_file)


def _vector_share(reader: IndexReader) -> float:
    """The share of the chunks that have their vector (1 once an index run has embedded them all):
    the semantic list can rank only those, so while vectors are missing it counts for less."""
    pending = reader.pending_count()
    return 1.0 - pending / max(reader.chunk_count(), 1) if pending else 1.0


def _ranked_hit(c: Candidate, rank: int, mode: str, stale: set[str]) -> Hit:
    if mode == "lexical":
        return replace(hit_of(c.row, stale=c.row.path in stale), score=float(c.bm25 or 0.0),
                       rank=rank, score_kind="bm25")
    return replace(hit_of(c.row, stale=c.row.path in stale), rank=rank, fused=c.fused if mode == "hybrid" else None)
