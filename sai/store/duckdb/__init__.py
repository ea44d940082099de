"""The embedded backend: one DuckDB file holding the index (store.py: leases, locks and error
translation; sessions.py: the contract's verbs; tables.py: the SQL; derived.py: the reads
served from a process's copies; changelog.py: which chunks each write changed; postings.py: BM25;
vectors.py: exact nearest neighbours in memory; migrations.py: numbered schema steps).

Only `sai.store` imports this package (pyproject's import-linter contracts)."""

from sai.store.duckdb.store import DuckDBStore

__all__ = ["DuckDBStore"]
