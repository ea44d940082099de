"""The DuckDB extensions SAI's older index formats were built with (the FTS index up to format 5,
the HNSW index up to format 3): SAI loads none, tests build such files to check their upgrade and
to compare SAI's BM25 with the FTS index's. Both are dev dependencies (pyproject.toml)."""

from __future__ import annotations

import glob
import os

import duckdb


def extension_path(name: str) -> str:
    """The extension file shipped in the `duckdb-extension-<name>` wheel."""
    module = __import__(f"duckdb_extension_{name}")
    pattern = os.path.join(os.path.dirname(module.__file__ or ""), "extensions", "*", f"{name}.duckdb_extension")
    return sorted(glob.glob(pattern))[-1]


def connect_with(name: str, database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A connection with the extension loaded (an unsigned file from a wheel: allowed)."""
    con = duckdb.connect(database, config={"allow_unsigned_extensions": "true"})
    con.execute(f"LOAD '{extension_path(name)}'")
    return con
