"""Text output of the CLI (docs/output-schemas.md): pure functions returning str."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sai.config import Config
from sai.files import WalkResult
from sai.models import Cluster, Hit, IndexReport, RefreshReport

if TYPE_CHECKING:
    from sai.watch import Batch

SAMPLE = 15
# C0 and C1 controls, DEL, lone surrogates (undecodable bytes of a file name) and the line and
# paragraph separators: a file named with an ANSI escape must not repaint the terminal.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def printable(text: object) -> str:
    """`text` with control characters shown escaped (`\\x1b`, `\\n`), safe to print on one line."""
    return _UNPRINTABLE.sub(_escape, str(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return repr(match.group())[1:-1] if code < 0x100 else f"\\u{code:04x}"


def number(value: float) -> str:
    """A threshold in shortest form: 0.93, 1, 0.985."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def query_results(query: str, hits: list[Hit]) -> str:
    rows = [f"  {h.score:.4f}  {printable(h.path)}:{h.start_line}-{h.end_line}" for h in hits]
    return "\n".join([f"top {len(hits)} for: {printable(query)}", "", *rows]) + "\n"


def _located(path: str, start: int, end: int, symbol: str | None) -> str:
    return f"{printable(path)}:{start}-{end}  {printable(symbol or '')}"


def similar_results(hits: list[Hit], *, min_score: float) -> str:
    rows = [f"  {h.score:.4f}  {_located(h.path, h.start_line, h.end_line, h.symbol)}" for h in hits]
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
        lines += [f"  {_located(m.path, m.start_line, m.end_line, m.symbol)}" for m in c.members]
    return "\n".join(lines) + "\n"


def status_lines(payload: dict[str, object]) -> str:
    return "".join(f"{k}: {_status_value(v)}\n" for k, v in payload.items())


def _status_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):  # languages: "python 120, typescript 4"
        return ", ".join(f"{printable(k)} {n}" for k, n in value.items())
    return printable(value)


def index_summary(report: IndexReport, config: Config) -> str:
    return (
        f"indexed {report.chunks} chunks from {report.files} {printable('/'.join(config.ext))} file(s) "
        f"into '{config.collection}' ({report.skipped} file(s) skipped by config)"
        f" — {report.embedded} chunk(s) embedded, {report.unchanged} unchanged, "
        f"{report.removed} removed\n"
    )


def sync_report(report: RefreshReport) -> str:
    if not report.refreshed and not report.removed and not report.not_found:
        return "sync: no changed files\n"
    lines = [f"  + {printable(r.path)} ({r.chunks} chunks)" for r in report.refreshed]
    lines += [f"  - {printable(r.path)} ({r.removed_reason})" for r in report.removed]
    lines += [f"  ? {printable(key)} (not found)" for key in report.not_found]
    total = sum(r.chunks or 0 for r in report.refreshed)
    missing = f", {len(report.not_found)} not found" if report.not_found else ""
    lines.append(
        f"sync: {len(report.refreshed)} file(s) re-indexed ({total} chunks), "
        f"{len(report.removed)} file(s) removed{missing}"
    )
    return "\n".join(lines) + "\n"


def watch_batch(batch: Batch) -> str:
    """One line per handled batch of `sai watch` (and the `sai mcp --watch` log)."""
    line = (f"watch: re-indexed {len(batch.refreshed)} file(s) ({batch.chunks} chunks), "
            f"removed {len(batch.removed)}")
    if batch.full_run:
        line += f" (one index run for {batch.changes} changed paths)"
    return line + "\n"


def dry_run(walk: WalkResult, config: Config) -> str:
    reasons: dict[str, int] = {}
    for _, reason in walk.excluded:
        reasons[reason] = reasons.get(reason, 0) + 1
    lines = [
        f"DRY RUN — root '{printable(config.root)}', ext {printable('/'.join(config.ext))}",
        f"collection '{config.collection}', model '{config.model}'",
        f"strip_comments: {str(config.strip_comments).lower()}   "
        f"skip_generated_marker: {str(config.skip_generated_marker).lower()}",
        f"pruned dirs: {', '.join(walk.pruned_dirs)}",
        "",
        f"WOULD INDEX: {len(walk.included)} file(s)   EXCLUDED: {len(walk.excluded)} file(s)",
    ]
    lines += [f"  excluded by {reason}: {count}" for reason, count in sorted(reasons.items())]
    lines.append("sample excluded:")
    lines += [f"  - {printable(key)}  [{reason}]" for key, reason in walk.excluded[:SAMPLE]]
    lines.append("sample included:")
    lines += [f"  + {printable(source.key)}" for source in walk.included[:SAMPLE]]
    return "\n".join(lines) + "\n"

