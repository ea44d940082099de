"""Text output of the CLI (docs/output-schemas.md): pure functions returning str."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sai.config import Config
from sai.models import (
    ChunkContext,
    Cluster,
    Definition,
    Explain,
    Hit,
    IndexReport,
    RefreshReport,
    Signals,
    StoredChunk,
)
from sai.output.budget import (
    CHUNKS,
    CLUSTERS,
    DEFINITIONS,
    HITS,
    Budget,
    Cut,
    Places,
    context_places,
    head_lines,
    kept_context,
    note,
)
from sai.query.ranking.signals import Kind, of_kind
from sai.source.files import WalkResult

if TYPE_CHECKING:
    from sai.indexing.watch import Batch

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




def omission(cut: Cut | None, budget: Budget | None, *, count: int, places: Places, shortened: int = 0) -> list[str]:
    """The last line of a cut answer, `… 3 more hits omitted to fit --max-tokens 2000; raise --max-tokens`."""
    if cut is None or budget is None:
        return []
    said = note(cut, count=count, shortened=shortened, places=places, budget=budget)
    return [f"… {said}"] if said else []


def query_results(query: str, hits: list[Hit], *, explain: bool = False, cut: Cut | None = None,
                  budget: Budget | None = None) -> str:
    """The contract's rows (the score the order follows, location, chunk_id for `sai read`,
    symbol); indented lines after a row: a stale file, the file's chunks, why it ranked; with a
    cut, its first rows and a last line saying what it left out."""
    shown = hits if cut is None else hits[:cut.keep]
    rows = []
    for h in shown:
        score = h.score if h.fused is None else h.fused
        rows.append(f"  {score:.4f}  {printable(h.path)}:{h.start_line}-{h.end_line}  {h.chunk_id}  "
                    f"{printable(h.symbol or '')}")
        if h.stale:
            rows.append(f"      stale: {printable(h.path)} changed since it was indexed; `sai refresh` it")
        if h.chunks is not None:
            rows.append("      lines: " + ", ".join(
                f"{c.start_line}-{c.end_line}" + (f" {printable(c.symbol)}" if c.symbol else "") for c in h.chunks))
        if h.copies is not None:
            rows.append("      copies: " + ", ".join(
                f"{printable(c.path)}:{c.start_line}-{c.end_line}" for c in h.copies))
        if explain and h.explain is not None:
            rows.append(f"      {explanation(h.explain)}")
    rows += omission(cut, budget, count=len(hits), places=HITS)
    return "\n".join([f"top {len(shown)} for: {printable(query)}", "", *rows]) + "\n"


def explanation(explain: Explain) -> str:
    """`explain: semantic #1 (cosine 0.8421), lexical #3 (bm25 5.1234), rrf ..., fused ...`."""
    parts = ["lexical only: no vector yet"] if explain.pending_vector else []
    if explain.semantic_rank is not None:
        parts.append(f"semantic #{explain.semantic_rank}")
    if explain.cosine is not None:
        parts.append(f"cosine {explain.cosine:.4f}" + (f" ({explain.model})" if explain.model else ""))
    if explain.lexical_rank is not None:
        parts.append(f"lexical #{explain.lexical_rank}")
    if explain.bm25 is not None:
        parts.append(f"bm25 {explain.bm25:.4f}")
    if explain.signals is not None and explain.rrf is not None and explain.fused is not None:
        parts.append(_fused_parts(explain.rrf, explain.signals, explain.fused))
    return "explain: " + ", ".join(parts)


def _fused_parts(rrf: float, signals: Signals, fused: float) -> str:
    """`rrf R + name_match V ..., x test_penalty F ... + file_support V, x repeat F = fused S`:
    the fused score's parts in the order its formula takes them (sai/query/ranking/signals.py)."""
    value = dict(signals.values)

    def term(kind: Kind) -> str:
        return "".join(f" + {s.name} {value[s.name]:.6f}" if s.additive else f" x {s.name} {value[s.name]:g}"
                       for s in of_kind(kind))

    return f"rrf {rrf:.6f}{term('add')},{term('factor')}{term('file')},{term('spread')} = fused {fused:.6f}"


def _located(path: str, start: int, end: int, symbol: str | None) -> str:
    return f"{printable(path)}:{start}-{end}  {printable(symbol or '')}"


def similar_results(hits: list[Hit], *, min_score: float, cut: Cut | None = None,
                    budget: Budget | None = None) -> str:
    shown = hits if cut is None else hits[:cut.keep]
    rows = [f"  {h.score:.4f}  {_located(h.path, h.start_line, h.end_line, h.symbol)}" for h in shown]
    rows += omission(cut, budget, count=len(hits), places=HITS)
    return "\n".join([f"{len(shown)} similar (min_score {number(min_score)}):", *rows]) + "\n"


def duplicate_clusters(
    clusters: list[Cluster], *, min_score: float, min_cluster_size: int, top_k: int,
    cut: Cut | None = None, budget: Budget | None = None,
) -> str:
    params = f"min_score {number(min_score)}, min_cluster_size {min_cluster_size}, top_k {top_k}"
    if not clusters:
        return f"no near-duplicate clusters ({params})\n"
    shown, head = (clusters, None) if cut is None else (clusters[:cut.keep], cut.head)
    lines = [f"{len(shown)} near-duplicate cluster(s) ({params}):"]
    for c in shown:
        lines.append(f"cluster (size {c.size}, sim {c.min_sim:.4f}..{c.max_sim:.4f}):")
        lines += [f"  {_located(m.path, m.start_line, m.end_line, m.symbol)}" for m in c.members[:head]]
    shortened = sum(head is not None and c.size > head for c in shown)
    lines += omission(cut, budget, count=len(clusters), places=CLUSTERS, shortened=shortened)
    return "\n".join(lines) + "\n"


def status_lines(payload: Mapping[str, object], *, location: str = "") -> str:
    """`key: value` lines; without an index, a line saying so, then what `sai` would build with."""
    if payload.get("indexed_at") is None and not payload.get("chunk_count"):
        known = "".join(f"{k}: {_status_value(v)}\n" for k, v in payload.items()
                        if v not in (None, "", {}, []) and k not in ("chunk_count", "file_count", "stale_files"))
        return f"no index yet at {printable(location)}; `sai` builds one with:\n{known}"
    return "".join(f"{k}: {_status_value(v)}\n" for k, v in payload.items())


def _status_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):  # languages: "python 120, typescript 4"
        return ", ".join(f"{printable(k)} {n}" for k, n in value.items())
    if isinstance(value, list):  # vendored_dirs: "deps/lua, vendor"
        return ", ".join(printable(v) for v in value)
    return printable(value)


def model_mismatch_note(config: Config, asks: tuple[str, str]) -> str:
    """One line: the index's embedder and model answer, not those the config file `asks` for."""
    embedder, model = asks
    file = printable(config.config_path.name if config.config_path else "the config file")
    return (f"note: the index was built with {config.embedder} {printable(config.model)}, which answers; "
            f"{file} asks for {embedder} {printable(model)}: `sai --recreate` rebuilds the index with that")


def index_summary(report: IndexReport, config: Config) -> str:
    """One line; chunks of identical text share one vector, so embedded + unchanged may be fewer."""
    shared = report.chunks - report.embedded - report.unchanged
    same = f", {shared} identical to another chunk (one vector)" if shared > 0 and report.embedded else ""
    exts = printable("/".join(report.exts)) if report.exts else "no"
    return (
        f"indexed {report.chunks} {'chunk' if report.chunks == 1 else 'chunks'} from {report.files} {exts} "
        f"file(s) into '{config.collection}' ({report.skipped} file(s) skipped by config)"
        f" — {report.embedded} chunk(s) embedded, {report.unchanged} unchanged{same}, "
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
        f"DRY RUN — root '{printable(config.root)}', ext {printable('/'.join(config.walk.exts))}",
        f"collection '{config.collection}', model '{config.model}'",
        f"strip_comments: {str(config.strip_comments).lower()}   "
        f"skip_generated_marker: {str(config.walk.skip_generated).lower()}",
        f"pruned dirs: {', '.join(walk.pruned_dirs)}",
        "",
        f"WOULD INDEX: {len(walk.included)} file(s)   EXCLUDED: {len(walk.excluded)} file(s)",
    ]
    lines += [f"  excluded by {reason}: {count}" for reason, count in sorted(reasons.items())]
    if walk.vendored:
        lines.append(f"vendored (indexed, ranked down): {', '.join(printable(d) for d in walk.vendored)}")
    if walk.excluded:
        lines.append("sample excluded:")
        lines += [f"  - {printable(key)}  [{reason}]" for key, reason in walk.excluded[:SAMPLE]]
    if walk.included:
        lines.append("sample included:")
        lines += [f"  + {printable(source.key)}" for source in walk.included[:SAMPLE]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- sai read, sai symbol
def _chunk_header(role: str, chunk: StoredChunk) -> str:
    kind = f"  [{chunk.kind}]" if chunk.kind else ""
    return (f"== {role} {printable(chunk.path)}:{chunk.start_line}-{chunk.end_line}  "
            f"{printable(chunk.symbol or '')}{kind}  chunk {chunk.chunk_id}")


def chunk_context(context: ChunkContext, *, cut: Cut | None = None, budget: Budget | None = None) -> str:
    """Each chunk as a `== role path:start-end  symbol  [kind]  chunk ID` line and its text; with
    a cut, the nearest context chunks only (the chunk's text cut when it alone is over)."""
    shown = context if cut is None else kept_context(context, cut.keep)
    head = None if cut is None else cut.head
    sections: list[tuple[str, StoredChunk]] = []
    if shown.enclosing is not None:
        sections.append(("enclosing", shown.enclosing))
    sections += [("before", c) for c in shown.before]
    sections.append(("chunk", shown.chunk))
    sections += [("after", c) for c in shown.after]
    lines = []
    for role, chunk in sections:
        header = _chunk_header(role, chunk)
        if role == "chunk" and shown.stale:
            header += "  (stale: the file changed since it was indexed)"
        lines += [header, _code(head_lines(chunk.text, head) if role == "chunk" else chunk.text)]
    shortened = int(head_lines(context.chunk.text, head) != context.chunk.text)
    lines += omission(cut, budget, count=context_places(context), places=CHUNKS, shortened=shortened)
    return "\n".join(lines) + "\n"


_CONTROL_IN_CODE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _code(text: str) -> str:
    """Source text as printed: newlines and tabs kept, other control characters escaped."""
    return _CONTROL_IN_CODE.sub(_escape, text)


def definitions(name: str, found: list[Definition], *, cut: Cut | None = None, budget: Budget | None = None) -> str:
    """`{n} definition(s) of {name}:` then `  path:start-end  symbol  kind` rows."""
    if not found:
        return f"no definitions of {printable(name)}\n"
    shown = found if cut is None else found[:cut.keep]
    rows = [f"  {_located(d.path, d.start_line, d.end_line, d.symbol)}  {d.kind or ''}" for d in shown]
    rows += omission(cut, budget, count=len(found), places=DEFINITIONS)
    return "\n".join([f"{len(shown)} definition(s) of {printable(name)}:", *rows]) + "\n"
