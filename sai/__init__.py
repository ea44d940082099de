"""SAI: semantic code search for people and coding agents, usable as a library.

    import sai

    project = sai.Project(sai.load_config(cwd=Path("path/to/tree")))
    sai.index(project)                       # build or update the index (incremental)
    for hit in sai.search(project, "parse the config file", limit=5):
        print(hit.path, hit.start_line, hit.score)
    project.close()

The names below are the public API (docs/design.md, "Library use"); they are imported on first
use, so `import sai` stays cheap for worker processes that need one module.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: `import sai` (the `sai` command's first step) stays instant

_API = {
    "load_config": "sai.config",
    "Project": "sai.project",
    "index": "sai.indexing.indexer",
    "refresh": "sai.indexing.indexer",
    "sync": "sai.indexing.indexer",
    "search": "sai.query.search",
    "find_similar": "sai.query.similar",
    "find_duplicates": "sai.duplicates.clusters",
    "status": "sai.query.status",
}
__all__ = [
    "load_config", "Project", "index", "refresh", "sync", "search", "find_similar", "find_duplicates", "status",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from typing import Any

    from sai.config import load_config
    from sai.duplicates.clusters import find_duplicates
    from sai.indexing.indexer import index, refresh, sync
    from sai.project import Project
    from sai.query.search import search
    from sai.query.similar import find_similar
    from sai.query.status import status


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'sai' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
