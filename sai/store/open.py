"""Which store a config means: the DuckDB file or a Qdrant index (config `backend`)."""

from __future__ import annotations

from typing import Any

from sai.config import Config
from sai.errors import ConfigError
from sai.store import Store
from sai.store.duckdb_side import DuckDBSide
from sai.store.qdrant import QdrantStore


def open_store(config: Config, *, backend: str | None = None) -> Any:
    """The store of `backend` (default: the config's) for the config's collection.

    Qdrant: local mode when qdrant.path is set, else the server at qdrant.url."""
    backend = backend or config.backend
    if backend == "qdrant":
        if config.qdrant_path is None and not config.qdrant_url:
            raise ConfigError("the qdrant backend needs qdrant.url (or QDRANT_URL) for a server, "
                              "or qdrant.path for local mode; set one of them")
        return QdrantStore(
            config.collection, url=None if config.qdrant_path else config.qdrant_url,
            api_key=config.qdrant_api_key, path=config.qdrant_path, timeout_s=config.qdrant_timeout_s,
            prefer_grpc=config.qdrant_prefer_grpc, lock_timeout_s=config.lock_timeout_s,
        )
    return DuckDBSide(Store(config.db_path, collection=config.collection, lock_timeout_s=config.lock_timeout_s))
