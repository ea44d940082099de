"""What a second vector of a chunk's place would add: semble's benchmark scored with the semantic
list ranked by cos(code) + w * cos(place), before building it into the store.

The place is embedded beside the index (cached in CACHE/place/<repo>/<variant>.npz, keyed by the
place text), and the vector scan is patched in this process only, exactly over every row:

- `chunk`: one line per chunk, `path symbol` (the chunk's project-relative path and qualified
  symbol; the path alone for a chunk with none);
- `file`: one line per file, its path; every chunk of the file shares it;
- `both`: cos(code) + w * cos(chunk place) + w2 * cos(file path) (w2 from --file-weight);
- `list`: hybrid keeps its semantic list of cos(code) and fuses a third list, ranked by
  cos(code) + w * cos(file path), at the weight --list-weight of the other two.

    python benchmarks/place_probe.py --repos held-out --variant chunk --weights 0,0.35,1.0
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np
import repos_quality as rq
from _repos_report import print_overall, print_repo

from sai.query import search as search_module
from sai.query.ranking import fusion
from sai.store.duckdb import vectors as vectors_module

_ORIGINAL = vectors_module.VectorTable.nearest
STATE: dict[str, object] = {"weight": 0.0, "file_weight": 0.0, "chunk": {}, "file": {}, "list": 0.0, "ranks": {}}
_CANDIDATES, _ORDER, _SCORED = search_module._candidates, search_module._order, fusion._scored


def _candidates(reader, query, vector, wanted, *, mode, scope):  # type: ignore[no-untyped-def]
    """The code-only lists, and the third list's ranks kept aside (variant `list`)."""
    if not STATE["list"] or vector is None or mode != "hybrid":
        STATE["ranks"], STATE["extra"] = {}, []
        return _CANDIDATES(reader, query, vector, wanted, mode=mode, scope=scope)
    file_weight = STATE["file_weight"]
    STATE["file_weight"] = 0.0
    semantic, lexical = _CANDIDATES(reader, query, vector, wanted, mode=mode, scope=scope)
    STATE["file_weight"] = STATE["list_file_weight"]
    near = reader.nearest(vector, wanted, scope=scope)
    STATE["file_weight"] = file_weight
    STATE["ranks"] = {i: rank for rank, (i, _) in enumerate(near, start=1)}
    held = {r.id for r in semantic} | {r.id for r, _ in lexical}
    STATE["extra"] = reader.chunks([i for i, _ in near if i not in held], text=False)
    return semantic, lexical


def _order(mode, semantic, lexical, query, defined=(), **kw):  # type: ignore[no-untyped-def]
    return _ORDER(mode, semantic, lexical, query, list(defined) + list(STATE.get("extra", [])), **kw)


def _scored(c, pool, semantic_weight):  # type: ignore[no-untyped-def]
    out = _SCORED(c, pool, semantic_weight)
    rank = STATE["ranks"].get(c.row.id)  # type: ignore[union-attr]
    if rank is None:
        return out
    from dataclasses import replace
    extra = STATE["list"] / (fusion.RRF_K + rank)  # type: ignore[operator]
    factors = 1.0  # the third list adds to the reciprocal-rank part, before the factors
    for signal in fusion._FACTORS:
        factors *= getattr(out.signals, signal.name)
    return replace(out, fused=out.fused + extra * factors, rrf=out.rrf + extra)


def _patched(self, vector, limit, *, mask=None, exclude=None):  # type: ignore[no-untyped-def]
    weight, file_weight = float(STATE["weight"]), float(STATE["file_weight"])  # type: ignore[arg-type]
    if not weight and not file_weight:
        return _ORIGINAL(self, vector, limit, mask=mask, exclude=exclude)
    query = np.asarray(vector, dtype=np.float32)
    chunk_place: dict[int, np.ndarray] = STATE["chunk"]  # type: ignore[assignment]
    file_place: dict[str, np.ndarray] = STATE["file"]  # type: ignore[assignment]
    keep = self.searchable if self.searchable is not None else np.ones(len(self.ids), bool)
    rows = np.flatnonzero(keep)
    scores = self.matrix[rows] @ query
    if weight:
        places = np.stack([chunk_place[int(i)] for i in self.ids[rows]])
        scores = scores + weight * (places @ query)
    if file_weight:
        paths = np.stack([file_place[self.paths[int(p)]] for p in self.path_of[rows]])
        scores = scores + file_weight * (paths @ query)
    best = np.argsort(-scores, kind="stable")[:limit]
    return [(int(self.ids[rows[b]]), float(scores[b])) for b in best]


def _embedded(project, texts: list[str], cache: Path) -> dict[str, np.ndarray]:
    """Vectors of these texts, from the cache file or the project's embedder."""
    held: dict[str, np.ndarray] = {}
    if cache.is_file():
        data = np.load(cache)
        held = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    key = {t: hashlib.sha1(t.encode()).hexdigest() for t in texts}
    missing = sorted({t for t in texts if key[t] not in held})
    for start in range(0, len(missing), 256):
        batch = missing[start:start + 256]
        for t, v in zip(batch, project.embedder.embed_documents(batch), strict=True):
            held[key[t]] = np.asarray(v, dtype=np.float32)
    if missing:
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, keys=np.array(list(held)), vectors=np.stack(list(held.values())))
    return {t: held[key[t]] for t in texts}


def _places(project, cache: Path, repo: str) -> None:
    with project.store.read() as reader:
        rows, _, _ = reader.all_chunks()
    lines = {r.id: f"{r.path} {r.symbol}" if r.symbol else r.path for r in rows}
    vectors = _embedded(project, sorted(set(lines.values())), cache / "place" / repo / "chunk.npz")
    STATE["chunk"] = {i: vectors[line] for i, line in lines.items()}
    paths = sorted({r.path for r in rows})
    STATE["file"] = _embedded(project, paths, cache / "place" / repo / "file.npz")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repos", type=rq.parse_repos, default=[])
    p.add_argument("--variant", choices=("chunk", "file", "both", "list"), default="chunk")
    p.add_argument("--weights", default="0,0.35,1.0")
    p.add_argument("--file-weight", type=float, default=0.35, help="with --variant both or list")
    p.add_argument("--list-weight", type=float, default=1.0, help="with --variant list")
    p.add_argument("--modes", default="hybrid,semantic")
    p.add_argument("--cache", type=Path, default=rq.DEFAULT_CACHE)
    args = p.parse_args()
    if not args.repos:  # `make bench` runs every benchmark without arguments
        print("to measure, give --repos (names of semble's repos.json, or a named set such as `held-out`)")
        return 0
    vectors_module.VectorTable.nearest = _patched  # type: ignore[method-assign]
    search_module._candidates, search_module._order, fusion._scored = _candidates, _order, _scored
    cache = args.cache.resolve()
    specs, subs = rq.load_repos(cache), rq.load_substitutes(cache)
    published = rq.load_published(rq.semble_dir(cache) / "results" / rq.PUBLISHED)
    modes = args.modes.split(",")
    weights = [float(w) for w in args.weights.split(",")]
    results: dict[float, dict[str, list]] = {w: {} for w in weights}
    for name in args.repos:
        repo = specs[name]
        with rq.indexed(cache, name, specs, subs) as (_, project):
            _places(project, cache, name)
            queries = rq.load_queries(cache, name)
            for w in weights:
                if args.variant == "file":
                    STATE["weight"], STATE["file_weight"] = 0.0, w
                elif args.variant == "list":
                    STATE["weight"], STATE["file_weight"] = 0.0, 0.0
                    STATE["list"], STATE["list_file_weight"] = (args.list_weight if w else 0.0), w
                elif args.variant == "both":
                    STATE["weight"], STATE["file_weight"] = w, (args.file_weight if w else 0.0)
                else:
                    STATE["weight"], STATE["file_weight"] = w, 0.0
                results[w][name] = [rq.run_query(project, repo, q, m) for q in queries for m in modes]
        for w in weights:
            print(f"-- weight {w}")
            print_repo(name, results[w][name], len(rq.load_queries(cache, name)), modes, published.get(name),
                       True, set(rq.CATEGORIES))
        sys.stdout.flush()
    for w in weights:
        print(f"\n======== variant {args.variant} weight {w}")
        print_overall(results[w], modes, published, True, set(rq.CATEGORIES), rq.NAMED_SETS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
