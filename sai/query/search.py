"""The one search core: search, find_similar, find_duplicates and status, for every front end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from sai.config import DUPLICATE_METRICS, Config
from sai.duplicates.edges import Edges, Nesting, Shapes, duplicate_edges, neighbour_edges, union_find_groups
from sai.duplicates.units import Units, unit_members, whole_units
from sai.errors import NotFoundError, StoreError, UsageError
from sai.models import GROUPS, MODES, ChunkRow, Cluster, ClusterMember, Explain, FileChunk, Hit, IndexStatus
from sai.project import Project
from sai.query.definitions import preferred
from sai.query.freshness import stale_keys
from sai.query.ranking import Candidate, bare_name, fuse, merge
from sai.source.globs import compile_glob, literal_prefix
from sai.source.languages import canonical_language
from sai.store import IndexReader, Scope
from sai.text.lexical import query_lexemes

FILE_CHUNKS = 5  # grouped by file: the file's best chunks listed with its hit
METRICS = DUPLICATE_METRICS  # what a duplicate edge's score is (find_duplicates)
CANDIDATES = 50  # per list, at least 4 x limit: what hybrid ranking fuses
DEFINITIONS = 5  # a bare name's definitions added to hybrid's candidates (docs/design.md, "Search")
DEFINITIONS_READ = 50  # of which the closest are chosen (query/definitions.py): a partial class has many


def _scope(reader: IndexReader, *, language: str | None, path_glob: str | None) -> Scope:
    """The chunks a filtered question is about: a language and the indexed keys a glob passes."""
    name = canonical_language(language) if language else None
    if not path_glob:
        return Scope(name)
    matches = compile_glob(path_glob)
    return Scope(name, frozenset(key for key in reader.files() if matches(key)), literal_prefix(path_glob))


def search(
    project: Project,
    query: str,
    *,
    limit: int = 8,
    language: str | None = None,
    path_glob: str | None = None,
    mode: str = "hybrid",
    explain: bool = False,
    group_by: str = "chunk",
) -> list[Hit]:
    """Chunks that answer `query`, best first, among those passing the language and glob filters.

    Filters choose the chunks searched, not the hits kept: a filtered search answers as an index
    holding only the matching chunks would. `score` stays the cosine similarity of hit and
    query (BM25 in lexical mode, which needs no embedder); in hybrid mode the order is the
    fused rank, given in `rank`. With `explain`, each hit says why it ranked there. With
    `group_by` "file", each file comes once, as its best chunk, with the lines of its best
    chunks (up to FILE_CHUNKS, among the candidates) in `chunks`.
    """
    if mode not in MODES:
        raise UsageError(f"unknown mode '{mode}'; choose one of: {', '.join(MODES)}")
    if group_by not in GROUPS:
        raise UsageError(f"unknown group_by '{group_by}'; choose one of: {', '.join(GROUPS)}")
    if not query.strip():
        raise UsageError("query is empty; give a few words describing the code you want")
    by_file = group_by == "file"
    wanted = limit if mode == "semantic" and not by_file else max(CANDIDATES, 4 * limit)
    with project.store.read() as reader:
        meta = _check(project, reader, None)  # before the embedder: a missing index is the error
        scope = _scope(reader, language=language, path_glob=path_glob)
        embed = mode != "lexical" and _has_vectors(project, meta, mode)
        vector = project.embedder.embed_query(query) if embed else None
        if vector is not None:
            project.check_meta(meta, vector_dim=int(vector.shape[0]))
        semantic, lexical = _candidates(reader, query, vector, wanted, mode=mode, scope=scope)
        defined = _definitions(reader, query, scope) if mode == "hybrid" else []
        weight = _vector_share(reader) if mode == "hybrid" and vector is not None else 1.0
        ordered = _order(mode, semantic, lexical, query, defined, semantic_weight=weight)
        files = _files(ordered, limit) if by_file else None
        chosen, pending = _with_bodies(reader, [group[0] for group in files] if files else ordered[:limit],
                                       vector, mode=mode)
        stored = reader.files([c.row.path for c in chosen])
    stale = stale_keys(project.config.root, stored, [c.row.path for c in chosen])
    hits = [_ranked_hit(c, rank, mode, stale) for rank, c in enumerate(chosen, start=1)]
    if files is not None:
        hits = [replace(h, chunks=tuple(_file_chunk(c) for c in group)) for h, group in zip(hits, files, strict=True)]
    if not explain:
        return hits
    return [replace(h, explain=_explain(c, mode, pending=c.row.id in pending))
            for h, c in zip(hits, chosen, strict=True)]


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


def _files(ordered: list[Candidate], limit: int) -> list[list[Candidate]]:
    """The first `limit` files in rank order, each with its best candidates (up to FILE_CHUNKS)."""
    groups: dict[str, list[Candidate]] = {}
    for c in ordered:
        group = groups.get(c.row.path)
        if group is None and len(groups) < limit:
            groups[c.row.path] = [c]
        elif group is not None and len(group) < FILE_CHUNKS:
            group.append(c)
    return list(groups.values())


def _file_chunk(c: Candidate) -> FileChunk:
    return FileChunk(c.row.start_line, c.row.end_line, c.row.symbol, c.row.chunk_id)


def _explain(c: Candidate, mode: str, *, pending: bool) -> Explain:
    """A hit's places in the candidate lists and, in hybrid mode, its fused score's parts;
    `pending`: its chunk has no vector yet, so lexical and symbol evidence alone found it."""
    hybrid = mode == "hybrid"
    return Explain(
        pending_vector=pending,
        semantic_rank=c.semantic_rank, cosine=None if mode == "lexical" or pending else float(c.row.score),
        lexical_rank=c.lexical_rank, bm25=c.bm25, rrf=c.rrf if hybrid else None,
        signals=c.signals if hybrid else None, fused=c.fused if hybrid else None,
    )


def _candidates(
    reader: IndexReader, query: str, vector: np.ndarray | None, wanted: int, *, mode: str, scope: Scope,
) -> tuple[list[ChunkRow], list[tuple[ChunkRow, float]]]:
    """The semantic list (rows scored by cosine) and the lexical list (rows with BM25).

    Rows come without text: ranking needs only paths and symbols, and reading the text and
    vector columns costs ~15x more than the ids (measured at 20k chunks, docs/design.md).
    """
    near = reader.nearest(vector, wanted, scope=scope) if vector is not None else []
    lex = reader.lexical(query_lexemes(query), wanted, scope=scope) if mode != "semantic" else []
    ids = list(dict.fromkeys([i for i, _ in near] + [i for i, _ in lex]))
    rows = reader.chunks(ids, text=False)
    cosine = dict(near)
    scored = {r.id: replace(r, score=float(cosine.get(r.id, 0.0))) for r in rows}
    semantic = sorted((scored[i] for i, _ in near if i in scored), key=lambda r: _best_first(r.score, r))
    lexical = sorted(((scored[i], score) for i, score in lex if i in scored), key=lambda p: _best_first(p[1], p[0]))
    return semantic, lexical


def _best_first(score: float, row: ChunkRow) -> tuple[float, str, int, int]:
    """Higher scores first; equal ones (to 1e-6: backends round vectors differently) by place,
    so every backend orders ties alike whatever ids it gave the chunks."""
    return -round(score, 6), row.path, row.start_line, row.end_line


def _with_bodies(
    reader: IndexReader, chosen: list[Candidate], vector: np.ndarray | None, *, mode: str
) -> tuple[list[Candidate], set[int]]:
    """The chosen candidates with their text and their cosine to the query when there is one;
    and the ids of those whose chunk has no vector yet (their score stays 0)."""
    ids = [c.row.id for c in chosen]
    texts = reader.texts(ids)
    cosines = reader.cosines(ids, vector) if vector is not None else {}
    pending = set() if mode == "lexical" else set(ids) - set(cosines)
    return [replace(c, row=replace(c.row, text=texts.get(c.row.id, ""),
                                   score=cosines.get(c.row.id, c.row.score))) for c in chosen], pending


def _definitions(reader: IndexReader, query: str, scope: Scope) -> list[ChunkRow]:
    """For a query that is one name (`Engine`, `Sinatra::Helpers`), the first chunks of the
    definitions of that name within the scope, whether or not either list found them."""
    name = bare_name(query)
    if name is None:
        return []
    rows = reader.chunks(reader.symbols().defining_rows(name, limit=DEFINITIONS_READ), text=False)
    return preferred([r for r in rows if scope.admits(r.language, r.path)], name, limit=DEFINITIONS)


def _order(
    mode: str, semantic: list[ChunkRow], lexical: list[tuple[ChunkRow, float]], query: str,
    defined: Sequence[ChunkRow] = (), *, semantic_weight: float = 1.0,
) -> list[Candidate]:
    if mode == "semantic":
        return merge(semantic, [])
    if mode == "lexical":
        return merge([], lexical)
    return fuse(merge(semantic, lexical, defined), query, semantic_weight=semantic_weight)


def _vector_share(reader: IndexReader) -> float:
    """The share of the chunks that have their vector (1 once an index run has embedded them all):
    the semantic list can rank only those, so while vectors are missing it counts for less."""
    pending = reader.pending_count()
    return 1.0 - pending / max(reader.chunk_count(), 1) if pending else 1.0


def _ranked_hit(c: Candidate, rank: int, mode: str, stale: set[str]) -> Hit:
    if mode == "lexical":
        return replace(_hit(c.row, stale=c.row.path in stale), score=float(c.bm25 or 0.0),
                       rank=rank, score_kind="bm25")
    return replace(_hit(c.row, stale=c.row.path in stale), rank=rank, fused=c.fused if mode == "hybrid" else None)


def find_similar(
    project: Project,
    *,
    code: str | None = None,
    path: str | None = None,
    line: int | None = None,
    limit: int = 8,
    min_score: float | None = None,
    language: str | None = None,
    path_glob: str | None = None,
) -> list[Hit]:
    """Neighbours of a snippet, or of the innermost stored chunk at path:line (itself excluded;
    `path` is a key), among the chunks passing the language and glob filters."""
    threshold = project.config.find_similar_min_score if min_score is None else min_score
    if not -1.0 <= threshold <= 1.0:  # 7 would answer nothing, as if nothing were similar
        raise UsageError(f"min_score {threshold} is not a cosine similarity; give a value in [-1, 1]")
    if code is not None:
        if path is not None or line is not None:
            raise UsageError("give either code or path+line, not both")
        if not code.strip():
            raise UsageError("code is empty; pass the snippet to compare")
    elif path is None or line is None:
        if path is not None or line is not None:
            raise UsageError("path and line go together; give both")
        raise UsageError("give code, or path and line of an indexed chunk")
    source_id = None
    with project.store.read() as reader:
        meta = _check(project, reader, None)  # before the embedder: a missing index is the error
        scope = _scope(reader, language=language, path_glob=path_glob)
        if code is not None:
            vector = project.embedder.embed_documents([code])[0]
            project.check_meta(meta, vector_dim=int(vector.shape[0]))
        else:
            source_id, vector = _chunk_vector(reader, str(path), int(line))
        near = [(i, s) for i, s in reader.nearest(vector, limit, scope=scope, exclude=source_id) if s >= threshold]
        rows = reader.chunks([i for i, _ in near])
        score = dict(near)
        rows = sorted((replace(r, score=score[r.id]) for r in rows), key=lambda r: _best_first(r.score, r))
        stored = reader.files([r.path for r in rows])
    stale = stale_keys(project.config.root, stored, [r.path for r in rows])
    return [_hit(r, stale=r.path in stale) for r in rows]


def _chunk_vector(reader: IndexReader, key: str, line: int) -> tuple[int, np.ndarray]:
    found = reader.chunks_at(key, line)
    vector = reader.vector_of(found[0].id) if found else None
    if vector is None and found:
        raise StoreError(f"the chunk at {key}:{line} has no vector yet (an index run is embedding the "
                         "stored chunks); try again when `sai status` shows no pending vectors")
    if vector is None:
        raise NotFoundError(f"no indexed chunk at {key}:{line}")
    return found[0].id, vector


def find_duplicates(
    project: Project,
    *,
    min_score: float | None = None,
    min_cluster_size: int | None = None,
    top_k: int | None = None,
    max_clusters: int = 50,
    path_glob: str | None = None,
    seed_paths: list[str] | None = None,
    metric: str | None = None,
) -> list[Cluster]:
    """Clusters of near-duplicate chunks (docs/design.md, "Duplicates"), deterministic in order.

    `metric` "duplicate" (the default) scores a pair by a weighted mean of cosine and token shape, and
    pairs chunks too small for a shape when their text is the same (score 1); "cosine" is the
    original tool's plain cosine over every chunk.
    """
    params = duplicate_params(project.config, min_score=min_score, min_cluster_size=min_cluster_size,
                              top_k=top_k, metric=metric)
    _check_duplicate_args(params, max_clusters)
    matches = compile_glob(path_glob) if path_glob else None  # a bad glob fails first
    with project.store.read() as reader:
        _check(project, reader, None)
        rows, matrix, signatures = reader.all_chunks()
        shapes = Shapes.of(signatures)
        # marked chunks and those outside the glob go before the search: they take no place in a top k
        eligible = [i for i, r in enumerate(rows) if not r.no_duplicate and (matches is None or matches(r.path))]
        tiny = [i for i in eligible if not shapes.known[i] and rows[i].symbol] if params.metric != "cosine" else []
        texts = reader.texts([rows[i].id for i in tiny])
    ends: dict[int, int] = {}
    if params.metric == "cosine":
        chosen, edges = eligible, _cosine_edges(rows, matrix, eligible, params, seed_paths)
    else:
        units = _units(rows, matrix, shapes, eligible)
        joined = {i for m in units.members for i in m}
        tiny = [i for i in tiny if i not in joined]  # a long unit's window without a shape joins its unit
        chosen = [*units.first, *tiny]
        # a long unit is one member: its first window's row and chunk_id, spanning to its last's end
        ends = {at: rows[m[-1]].end_line for at, m in enumerate(units.members) if len(m) > 1}
        unit_rows = [replace(rows[i], end_line=ends[at]) if at in ends else rows[i]
                     for at, i in enumerate(units.first)]
        edges = Edges.concat([
            _shape_edges(unit_rows, units.matrix, units.shapes, params, seed_paths),
            _identical_edges([rows[i] for i in tiny], texts, offset=len(unit_rows), seeds=seed_paths),
        ])
    ids = [rows[i].chunk_id for i in chosen]
    rows = [rows[i] for i in chosen]
    rows = [replace(r, end_line=ends[at]) if at in ends else r for at, r in enumerate(rows)]
    clusters = [_cluster(rows, m, lo, hi, ids) for m, lo, hi in union_find_groups(len(rows), edges)]
    clusters = [c for c in clusters if c.size >= params.min_cluster_size]
    clusters.sort(key=lambda c: (-c.size, -c.max_sim, _member_key(c.members[0])))
    return clusters[: max(0, int(max_clusters))]


@dataclass(frozen=True)
class DuplicateParams:
    min_score: float
    min_cluster_size: int
    top_k: int
    metric: str


def duplicate_params(
    config: Config, *, min_score: float | None, min_cluster_size: int | None, top_k: int | None,
    metric: str | None = None,
) -> DuplicateParams:
    """The values given, else the config's (per model, and per metric for min_score)."""
    chosen = metric or config.duplicate_metric
    if chosen not in METRICS:
        raise UsageError(f"unknown metric '{chosen}'; choose one of: {', '.join(METRICS)}")
    default = config.duplicate_cosine_min_score if chosen == "cosine" else config.duplicate_min_score
    return DuplicateParams(
        min_score=default if min_score is None else float(min_score),
        min_cluster_size=config.duplicate_min_cluster_size if min_cluster_size is None else int(min_cluster_size),
        top_k=config.top_k if top_k is None else int(top_k),
        metric=chosen,
    )


def _seed_rows(rows: list[ChunkRow], chosen: list[int], seed_paths: list[str] | None) -> np.ndarray | None:
    """Positions in `chosen` of the seed files' chunks (None: not seeded)."""
    if seed_paths is None:
        return None
    seeds = set(seed_paths)
    return np.array([k for k, i in enumerate(chosen) if rows[i].path in seeds], dtype=np.int64)


def _cosine_edges(
    rows: list[ChunkRow], matrix: np.ndarray, chosen: list[int], params: DuplicateParams, seeds: list[str] | None
) -> Edges:
    subset = matrix[chosen] if len(chosen) < len(rows) else matrix  # (a copy costs 150 MB at 100k)
    return neighbour_edges(subset, top_k=params.top_k, min_score=params.min_score,
                           queries=_seed_rows(rows, chosen, seeds), nesting=_nesting([rows[i] for i in chosen]))


def _units(rows: list[ChunkRow], matrix: np.ndarray, shapes: Shapes, eligible: list[int]) -> Units:
    """The eligible rows joined into units (a long unit's windows into one), those with a shape."""
    picked = [rows[i] for i in eligible]
    members = unit_members([r.path for r in picked], [r.start_line for r in picked],
                           [r.end_line for r in picked], [r.symbol for r in picked])
    groups = [[eligible[k] for k in m] for m in members]
    groups = [g for g in groups if shapes.known[g].any()]
    return whole_units(groups, matrix, shapes)


def _shape_edges(
    rows: list[ChunkRow], matrix: np.ndarray, shapes: Shapes, params: DuplicateParams, seeds: list[str] | None
) -> Edges:
    everyone = list(range(len(rows)))
    return duplicate_edges(matrix, shapes, top_k=params.top_k, min_score=params.min_score,
                           queries=_seed_rows(rows, everyone, seeds), nesting=_nesting(rows))


def _identical_edges(
    tiny: list[ChunkRow], texts: dict[int, str], *, offset: int, seeds: list[str] | None
) -> Edges:
    """Chunks too small for a shape whose text, line by line stripped, is the same: a chain of
    score-1 edges per group (from a seed file's chunk when seeded). Nested chunks never pair."""
    groups: dict[str, list[int]] = {}
    for k, row in enumerate(tiny):
        lines = [line.strip() for line in texts.get(row.id, "").split("\n")]
        groups.setdefault("\n".join(line for line in lines if line), []).append(k)
    seeded = None if seeds is None else set(seeds)
    nesting = _nesting(tiny)
    i, j = [], []
    for members in groups.values():
        if len(members) < 2 or (seeded is not None and not any(tiny[m].path in seeded for m in members)):
            continue
        i += members[:-1]
        j += members[1:]
    a, b = np.array(i, dtype=np.int64), np.array(j, dtype=np.int64)
    keep = ~nesting.excluded(a, b) if len(a) else np.zeros(0, dtype=bool)
    return Edges(a[keep] + offset, b[keep] + offset, np.ones(int(keep.sum()), dtype=np.float32))


def _check_duplicate_args(params: DuplicateParams, max_clusters: int) -> None:
    min_score, size, top_k = params.min_score, params.min_cluster_size, params.top_k
    if not -1.0 <= min_score <= 1.0:
        kind = "cosine" if params.metric == "cosine" else "duplicate score"
        raise UsageError(f"min_score {min_score} is not a {kind}; give a value in [-1, 1]")
    if size < 1:
        raise UsageError(f"min_cluster_size {size} is too small; give 1 or more (a cluster has at least 2 members)")
    if top_k < 1 or max_clusters < 1:
        raise UsageError("top_k and max_clusters must be at least 1")


def _nesting(rows: list[ChunkRow]) -> Nesting:
    """Chunks of one file whose ranges hold one another (a method in its class) never pair."""
    return Nesting.of([r.path for r in rows], [r.start_line for r in rows],
                      [r.end_line for r in rows])


def _cluster(rows: list[ChunkRow], members: list[int], lo: float, hi: float, ids: list[str]) -> Cluster:
    chosen = sorted(members, key=lambda i: (rows[i].path, rows[i].start_line, rows[i].end_line))
    return Cluster(
        members=tuple(ClusterMember(rows[i].path, rows[i].start_line, rows[i].end_line, rows[i].symbol, ids[i])
                      for i in chosen),
        min_sim=float(lo),
        max_sim=float(hi),
    )


def _member_key(member: ClusterMember) -> tuple[str, int, int]:
    return (member.path, member.start_line, member.end_line)


def status(project: Project) -> IndexStatus:
    """What the index holds, or what it would be built with when there is none yet."""
    config = project.config
    meta: dict[str, str] = {}
    chunks = 0
    indexed_at = None
    stored: dict = {}
    languages: dict[str, int] = {}
    pending = 0
    if project.store.exists:
        with project.store.read() as reader:
            meta = reader.meta()
            if reader.has_index():
                chunks, stored, languages = reader.chunk_count(), reader.files(), reader.language_counts()
                indexed_at = reader.last_indexed_at()
                pending = reader.pending_count()
    dim = meta.get("vector_dim")
    return IndexStatus(
        backend=meta.get("backend", config.backend),
        collection=config.collection,
        model=meta.get("model", config.model),
        vector_dim=int(dim) or None if dim else None,  # 0: no vector stored yet
        chunk_count=chunks,
        chunker=meta.get("chunker", config.chunker),
        embedder=meta.get("embedder", config.embedder),
        file_count=len(stored),
        indexed_at=indexed_at,
        stale_files=len(stale_keys(config.root, stored, stored)),
        languages=languages,
        pending_vectors=pending,
    )


def _check(project: Project, reader: IndexReader, vector: np.ndarray | None) -> dict[str, str]:
    if not reader.has_index():
        raise StoreError(
            f"the index has no collection '{project.config.collection}'; run `sai` to build it"
        )
    meta = reader.meta()
    project.check_meta(meta, vector_dim=None if vector is None else int(vector.shape[0]))
    return meta


def _hit(row: ChunkRow, *, stale: bool) -> Hit:
    return Hit(
        path=row.path, start_line=row.start_line, end_line=row.end_line, symbol=row.symbol,
        score=float(row.score), text=row.text, language=row.language, stale=stale, chunk_id=row.chunk_id,
    )
