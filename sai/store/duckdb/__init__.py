"""The embedded backend: one DuckDB file holding the index, and the copies derived from it.

- store.py: DuckDBStore, its leases and locks; locks.py: the flock probes; errors.py and
  interrupts.py: errors translated, Ctrl-C kept.
- sessions.py: the contract's reader and writer over one connection.
- tables.py: Connection, the SQL of the meta, file and chunk rows; rows.py: row types, SQL
  literals and helpers; schema.py and migrations.py: the DDL and its numbered steps;
  compaction.py: the index file copied to give back free space.
- postings.py: BM25's terms and postings, and its CSR (LexicalTable); references.py: the
  references table; changelog.py: which chunks each write changed.
- copies.py: the one owner of the copies every reader derives (vectors, rows, BM25, symbols),
  fed by chunk_reads.py; sidecar.py: the shared vector files; vectors.py: the scan over them;
  chunkrows.py: the row copy (RowTable).

Only `sai.store` imports this package (pyproject's import-linter contracts)."""

from sai.store.duckdb.store import DuckDBStore

__all__ = ["DuckDBStore"]
