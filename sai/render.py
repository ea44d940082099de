"""Text output of the CLI (sai-output-schemas.txt): pure functions returning str."""

from __future__ import annotations

from sai.config import Config
from sai.files import WalkResult
from sai.models import Cluster, Hit, IndexReport, RefreshReport

SAMPLE = 15


def number(value: float) -> str:
    """A threshold in shortest form: 0.93, 1, 0.985."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def query_results(query: str, hits: list[Hit]) -> str:
    rows = [f"  {h.score:.4f}  {h.path}:{h.start_line}-{h.end_line}" for h in hits]
    return "\n".join([f"top {len(hits)} for: {query}", "", *rows]) + "\n"


def similar_results(hits: list[Hit], *, min_score: float) -> str:
    rows = [f"  {h.score:.4f}  {h.path}:{h.start_line}-{h.end_line}  {h.symbol or ''}" for h in hits]
    return "\n".join([f"{len(hits)} similar (min_score {number(min_score)}):", *rows]) + "\n"


def duplicate_clusters(
    clusters: list[Cluster], *, min_score: float, min_cluster_size: int, top_k: int
) -> str:
    params = f"min_score {number(min_score)}, min_cluster_size {min_cluster_size}, top_k {top_k}"
    if not clusters:
        return f"no near-duplicate clusters ({params})\n"
    lines = [f"{len(clusters)} near-duplicate cluster(s) ({params}):"]
    for c in clusters:
        lines.append(f"cluster (size {c.size}, sim {c.min_sim:.4f}..{c.max_sim:.4f}):")
        lines += [f"  {m.path}:{m.start_line}-{m.end_line}  {m.symbol or ''}" for m in c.members]
    return "\n".join(lines) + "\n"


def status_lines(payload: dict[str, object]) -> str:
    return "".join(f"{k}: {'' if v is None else v}\n" for k, v in payload.items())


def index_summary(report: IndexReport, config: Config) -> str:
    return (
        f"indexed {report.chunks} chunks from {report.files} {'/'.join(config.ext)} file(s) "
        f"into '{config.collection}' ({report.skipped} file(s) skipped by config)"
        f" — {report.embedded} chunk(s) embedded, {report.unchanged} unchanged, "
        f"{report.removed} removed\n"
    )


def sync_report(report: RefreshReport) -> str:
    if not report.refreshed and not report.removed:
        return "sync: no changed files\n"
    lines = [f"  + {r.path} ({r.chunks} chunks)" for r in report.refreshed]
    lines += [f"  - {r.path} ({r.removed_reason})" for r in report.removed]
    total = sum(r.chunks or 0 for r in report.refreshed)
    lines.append(
        f"sync: {len(report.refreshed)} file(s) re-indexed ({total} chunks), "
        f"{len(report.removed)} file(s) removed"
    )
    return "\n".join(lines) + "\n"


def dry_run(walk: WalkResult, config: Config) -> str:
    reasons: dict[str, int] = {}
    for _, reason in walk.excluded:
        reasons[reason] = reasons.get(reason, 0) + 1
    lines = [
        f"DRY RUN — root '{config.root}', ext {'/'.join(config.ext)}",
        f"collection '{config.collection}', model '{config.model}'",
        f"strip_comments: {str(config.strip_comments).lower()}   "
        f"skip_generated_marker: {str(config.skip_generated_marker).lower()}",
        f"pruned dirs: {', '.join(walk.pruned_dirs)}",
        "",
        f"WOULD INDEX: {len(walk.included)} file(s)   EXCLUDED: {len(walk.excluded)} file(s)",
    ]
    lines += [f"  excluded by {reason}: {count}" for reason, count in sorted(reasons.items())]
    lines.append("sample excluded:")
    lines += [f"  - {key}  [{reason}]" for key, reason in walk.excluded[:SAMPLE]]
    lines.append("sample included:")
    lines += [f"  + {source.key}" for source in walk.included[:SAMPLE]]
    return "\n".join(lines) + "\n"

