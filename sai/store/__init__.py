"""The index behind one seam: `open_store` picks the backend the config names; store/base.py is
the contract (verbs and declared capabilities) every backend keeps.

The backends are packages of their own, reached only from here (pyproject's import-linter
contracts): `sai.store.duckdb` (the embedded file) and `sai.store.qdrant` (a team's server, or a
local directory). Neither is imported until a store of its kind is opened, so a command that
never touches the index loads no database client.
"""

from __future__ import annotations

from sai.config import Config, require_qdrant_target
from sai.errors import ConfigError
from sai.models import BACKENDS
from sai.store.base import IndexReader, IndexSummary, IndexWriter, Scope, Store


def open_store(config: Config, *, backend: str | None = None) -> Store:
    """The store of `backend` (default: the config's) for the config's collection, not opened
    yet: sessions open it. Qdrant: local mode when qdrant.path is set, else the server at qdrant.url."""
    backend = backend or config.backend
    if backend == "duckdb":
        from sai.store.duckdb import DuckDBStore

        return DuckDBStore(config.db_path, collection=config.collection, lock_timeout_s=config.lock_timeout_s)
    if backend == "qdrant":
        from sai.store.qdrant import QdrantStore

        require_qdrant_target(config.qdrant.url, config.qdrant.path)
        return QdrantStore(
            config.collection, url=None if config.qdrant.path else config.qdrant.url,
            api_key=config.qdrant.api_key, path=config.qdrant.path, timeout_s=config.qdrant.timeout_s,
            prefer_grpc=config.qdrant.prefer_grpc, lock_timeout_s=config.lock_timeout_s,
        )
    raise ConfigError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")


__all__ = ["IndexReader", "IndexSummary", "IndexWriter", "Scope", "Store", "open_store"]
