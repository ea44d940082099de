"""Clusters on SAI's own package, as `make demo` lists them (duplicates_recall.py prints them).

The package of the running `sai` (or the directory given) is copied into the benchmark cache,
indexed with the model the recall run uses (the index is kept there, so a re-run embeds only
what changed) and searched at the default threshold: the cluster count and the largest
clusters, which show what a person asking for repeated code gets first.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from _common import CACHE_DIR

import sai
from sai.config import load_config
from sai.duplicates.clusters import find_duplicates
from sai.indexing import indexer
from sai.project import Project

SHOWN = 3  # the largest clusters printed


def report(*, embedder: str, model: str, tree: Path | None = None) -> None:
    source = tree or Path(sai.__file__).parent
    root = CACHE_DIR / "recall" / "own" / "sai"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("__pycache__", ".index"))
    db = CACHE_DIR / "recall" / f"own-{re.sub(r'[^A-Za-z0-9_.-]', '_', f'{embedder}-{model}')}.duckdb"
    flags = {"embedder": embedder, "root": str(root), "duckdb.path": str(db), "model": model}
    project = Project(config := load_config(cwd=root, env={}, flags=flags))
    try:
        chunks = indexer.index(project).chunks
        clusters = find_duplicates(project, max_clusters=10**9)
    finally:
        project.close()
    print(f"SAI's own tree ({source}, {chunks} chunks): {len(clusters)} clusters at the default "
          f"min_score {config.similarity.duplicate_min_score:g}; the largest {SHOWN}:")
    for c in clusters[:SHOWN]:
        names = ", ".join(m.symbol or f"{m.path}:{m.start_line}" for m in c.members)
        print(f"  size {c.size} (sim {c.min_sim:.3f}..{c.max_sim:.3f}): {names}")
