"""SAI: semantic code search over a local DuckDB index."""

__version__ = "0.1.0"
