"""The team backend: an index on a Qdrant server, or in qdrant-client's local mode (store.py:
the contract's verbs; client.py: the client and its errors; points.py: rows as points;
locks.py: one writer at a time).

Only `sai.store` imports this package (pyproject's import-linter contracts)."""

from sai.store.qdrant.store import QdrantStore

__all__ = ["QdrantStore"]
