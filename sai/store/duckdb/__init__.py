"""The embedded backend: one DuckDB file holding the index, and the copies derived from it.

- store.py: DuckDBStore, the contract's Store, composed of the lease of lease.py (the one
  connection a process holds, in a named state) and the run claim; errors.py and
  interrupts.py: errors translated, Ctrl-C kept; compaction.py: the file copied to give back
  free space.
- reader.py and writer.py: the contract's verbs and their SQL, over one tables.Connection (the
  transaction, the token, the meta, the schema it knows); rows.py: row types, SQL literals and
  helpers; schema.py and migrations.py: the DDL and its numbered steps.
- postings.py: BM25's terms and postings, and its CSR (LexicalTable); references.py: the
  references table; changelog.py: which chunks each write changed.
- copies.py: the one owner of the copies every reader derives (vectors, rows, BM25, symbols,
  shapes), fed by chunk_reads.py; sidecar.py: the shared vector files; vectors.py: the scan over
  them; chunkrows.py: the row copy (RowTable).

Only `sai.store` imports this package (pyproject's import-linter contracts)."""

from sai.store.duckdb.store import DuckDBStore

__all__ = ["DuckDBStore"]
