"""find_duplicates: clusters of near-duplicate chunks (docs/design.md, "Duplicates").

Its parameters are resolved and checked here once, for every front end: the values given, else
the config's; the MCP tools' counts are brought into range (`clamped`), the command line's are
refused when out of range.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sai.config import Config
from sai.duplicates.edges import Edges, Shapes, union_find_groups
from sai.duplicates.pairs import cosine_edges, identical_edges, shape_edges, units_of
from sai.errors import UsageError
from sai.models import METRICS, ChunkRow, Cluster, ClusterMember, clamped
from sai.project import Project
from sai.source.globs import compile_glob

MAX_CLUSTERS = 50  # clusters listed when the caller does not say


@dataclass(frozen=True)
class DuplicateParams:
    """What a duplicate search runs with, every default resolved."""

    min_score: float
    min_cluster_size: int
    top_k: int
    metric: str
    max_clusters: int = MAX_CLUSTERS

    @classmethod
    def resolve(
        cls, config: Config, *, min_score: float | None = None, min_cluster_size: int | None = None,
        top_k: int | None = None, metric: str | None = None, max_clusters: int = MAX_CLUSTERS,
        clamp: bool = False,
    ) -> DuplicateParams:
        """The values given, else the config's (per model, and per metric for min_score), checked;
        with `clamp`, counts are brought into range instead of refused (the MCP tools' way)."""
        chosen = metric or config.similarity.duplicate_metric
        if chosen not in METRICS:
            raise UsageError(f"unknown metric '{chosen}'; choose one of: {', '.join(METRICS)}")
        similarity = config.similarity
        default = {"cosine": similarity.duplicate_cosine_min_score,
                   "semantic": similarity.duplicate_semantic_min_score}.get(chosen, similarity.duplicate_min_score)
        size = similarity.duplicate_min_cluster_size if min_cluster_size is None else int(min_cluster_size)
        k = similarity.top_k if top_k is None else int(top_k)
        if clamp:
            size, k, max_clusters = max(1, size), clamped(k), max(1, max_clusters)
        params = cls(min_score=default if min_score is None else float(min_score), min_cluster_size=size,
                     top_k=k, metric=chosen, max_clusters=int(max_clusters))
        params.check()
        return params

    def check(self) -> None:
        if not -1.0 <= self.min_score <= 1.0:
            kind = {"cosine": "cosine", "semantic": "semantic score"}.get(self.metric, "duplicate score")
            raise UsageError(f"min_score {self.min_score} is not a {kind}; give a value in [-1, 1]")
        if self.min_cluster_size < 1:
            raise UsageError(f"min_cluster_size {self.min_cluster_size} is too small; give 1 or more "
                             "(a cluster has at least 2 members)")
        if self.top_k < 1 or self.max_clusters < 1:
            raise UsageError("top_k and max_clusters must be at least 1")


@dataclass(frozen=True)
class DuplicateReport:
    """The clusters found and what they were found with (both front ends print the parameters)."""

    clusters: list[Cluster]
    params: DuplicateParams
    seeded: bool


def find_duplicates(
    project: Project,
    *,
    min_score: float | None = None,
    min_cluster_size: int | None = None,
    top_k: int | None = None,
    max_clusters: int = MAX_CLUSTERS,
    path_glob: str | None = None,
    seed_paths: list[str] | None = None,
    metric: str | None = None,
) -> list[Cluster]:
    """Clusters of near-duplicate chunks, deterministic in order, largest first.

    `metric` "duplicate" (the default) scores a pair by a weighted mean of cosine and token shape, and
    pairs chunks too small for a shape when their text is the same (score 1); "cosine" is the
    original tool's plain cosine over every chunk. `seed_paths`: only clusters holding a chunk
    of these files.
    """
    params = DuplicateParams.resolve(project.config, min_score=min_score, min_cluster_size=min_cluster_size,
                                     top_k=top_k, metric=metric, max_clusters=max_clusters)
    return duplicate_report(project, params, path_glob=path_glob, seed_paths=seed_paths).clusters


def duplicate_report(
    project: Project, params: DuplicateParams, *, path_glob: str | None = None,
    seed_paths: list[str] | None = None,
) -> DuplicateReport:
    """find_duplicates with resolved parameters, returned with them."""
    matches = compile_glob(path_glob) if path_glob else None  # a bad glob fails first
    with project.store.read() as reader:
        project.indexed_meta(reader)
        rows, matrix, signatures = reader.all_chunks()
        shapes = Shapes.of(signatures)
        # marked chunks and those outside the glob go before the search: they take no place in a top k
        eligible = [i for i, r in enumerate(rows) if not r.no_duplicate and (matches is None or matches(r.path))]
        # chunks too small for a shape pair by identical text: copies, not the semantic mode's concern
        tiny = [i for i in eligible if not shapes.known[i] and rows[i].symbol] if params.metric == "duplicate" else []
        texts = {r.id: r.text for r in reader.chunks([rows[i].id for i in tiny])}
    ends: dict[int, int] = {}
    if params.metric == "cosine":
        chosen = eligible
        edges = cosine_edges(rows, matrix, eligible, top_k=params.top_k, min_score=params.min_score,
                             seeds=seed_paths)
    else:
        units = units_of(rows, matrix, shapes, eligible)
        joined = {i for m in units.members for i in m}
        tiny = [i for i in tiny if i not in joined]  # a long unit's window without a shape joins its unit
        chosen = [*units.first, *tiny]
        # a long unit is one member: its first window's row and chunk_id, spanning to its last's end
        ends = {at: rows[m[-1]].end_line for at, m in enumerate(units.members) if len(m) > 1}
        unit_rows = [replace(rows[i], end_line=ends[at]) if at in ends else rows[i]
                     for at, i in enumerate(units.first)]
        edges = Edges.concat([
            shape_edges(unit_rows, units.matrix, units.shapes, top_k=params.top_k, min_score=params.min_score,
                        seeds=seed_paths, semantic=params.metric == "semantic"),
            identical_edges([rows[i] for i in tiny], texts, offset=len(unit_rows), seeds=seed_paths),
        ])
    ids = [rows[i].chunk_id for i in chosen]  # a long unit keeps its first window's chunk_id
    picked = [replace(rows[i], end_line=ends[at]) if at in ends else rows[i] for at, i in enumerate(chosen)]
    clusters = [_cluster(picked, m, lo, hi, ids) for m, lo, hi in union_find_groups(len(picked), edges)]
    clusters = [c for c in clusters if c.size >= params.min_cluster_size]
    clusters.sort(key=lambda c: (-c.size, -c.max_sim, _member_key(c.members[0])))
    return DuplicateReport(clusters[: params.max_clusters], params, seeded=seed_paths is not None)


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
