"""What the store holds and hands out: row types, the schema version, and the literals SQL
values are bound as (VARCHAR casts: binding Python lists costs ~10-35x more)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime

import duckdb
import numpy as np
import pyarrow as pa

from sai.errors import StoreError
from sai.models import SCHEMA_VERSION, ChunkRow, FileRow, IndexMeta  # noqa: F401 (the store's row types)
from sai.settings import COLLECTION_RE

COMPANIONS = ("__files", "__terms", "__postings", "__changes", "__refs")  # a collection's other tables


def check_collection(collection: str) -> None:
    """The collection is the one identifier SQL is built with: refuse anything but a name."""
    if not COLLECTION_RE.match(collection) or collection.endswith(COMPANIONS):
        raise StoreError(f"invalid collection name {collection!r}")


CHUNK_COLS = "id, path, language, start_line, end_line, symbol, text, no_duplicate, content_hash, kind"


def matrix_of(column: pa.ChunkedArray) -> np.ndarray:
    """A FLOAT[d] column as one writable float32 (n, d) matrix, copied once, a chunk at a time
    (combining the chunks first and casting after made three copies of the whole column: at 20k
    chunks ~90 MB more at the peak of a server's first search)."""
    dim = column.type.list_size
    matrix = np.empty((len(column), dim), dtype=np.float32)
    row = 0
    for chunk in column.chunks:
        values = chunk.values.slice(chunk.offset * dim, len(chunk) * dim)
        matrix[row:row + len(chunk)] = values.to_numpy(zero_copy_only=False).reshape(-1, dim)
        row += len(chunk)
    return matrix


def arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None) -> pa.Table:
    """A query's result as one Arrow table (duckdb may hand back a batch reader)."""
    result = con.execute(sql, params).arrow()
    return result.read_all() if hasattr(result, "read_all") else result


@contextlib.contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> Iterator[str]:
    """`table` visible to SQL as `name` for the block."""
    con.register(name, table)
    try:
        yield name
    finally:
        con.unregister(name)


FEW_IDS = 512  # ids bound as one list; more are joined (`among`)


@contextlib.contextmanager
def among(con: duckdb.DuckDBPyConnection, ids: Sequence[int] | np.ndarray | None) -> Iterator[tuple[str, list[object]]]:
    """A condition on `id` holding for these ids (None: every row), and its parameters: a bound
    list for a few (a search's hits), a join with a registered table for many (duplicates' texts of
    every small unit: a list tested against each row grew with both, 60 s and more at 838k)."""
    if ids is None:
        yield "true", []
        return
    bounds = np.asarray(ids, np.int64)
    # zone maps skip the rest
    within = f"id BETWEEN {int(bounds.min())} AND {int(bounds.max())}" if len(bounds) else "false"
    if len(bounds) <= FEW_IDS:
        yield f"{within} AND list_contains(CAST(?::VARCHAR AS BIGINT[]), id)", [int_list(bounds.tolist())]
        return
    with registered(con, "sai_among", pa.table({"id": pa.array(bounds, pa.int64())})):
        yield f"{within} AND id IN (SELECT id FROM sai_among)", []


# The integers of a bound int_list, as a subquery: `id IN {INTS}`
INTS = "(SELECT unnest(CAST(?::VARCHAR AS BIGINT[])))"


def int_list(values: list[int]) -> str:
    """Integers as a list literal to bind as VARCHAR, read back by INTS: see text_list."""
    return "[" + ",".join(str(int(v)) for v in values) + "]"


# The texts of a bound text_list, as a subquery: `path IN {TEXTS}`
TEXTS = "(SELECT unnest(json_extract_string(?::VARCHAR, '$[*]')))"


def text_list(values: Iterable[str]) -> str:
    """Texts as one JSON array to bind as VARCHAR, read back by TEXTS. DuckDB 1.5.5's Python client
    binds a list value by value, trying to import pandas twice for each where it is not installed:
    4,000 hashes cost 300 ms bound as a list, 5 ms this way (and `list_contains` on the list, a
    test of every row against every value, 1.2 s at 200k rows)."""
    return json.dumps(list(values))


def quote(text: str) -> str:
    return text.replace("'", "''")


def utc_now() -> datetime:
    """Now in UTC without a zone: TIMESTAMP columns hold UTC (DuckDB's now() is local time)."""
    return datetime.now(UTC).replace(tzinfo=None)


def quote_ident(name: str) -> str:
    """A name read from the catalog as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def chunk_rows_of(table: pa.Table) -> list[ChunkRow]:
    """ChunkRows from an Arrow result holding the CHUNK_COLS columns."""
    columns = [table.column(name).to_pylist() for name in CHUNK_COLS.split(", ")]
    return [ChunkRow(*values) for values in zip(*columns, strict=True)]


def chunk_cols(*, text: bool) -> str:
    """The CHUNK_COLS select list; without text, an empty string stands in for the costly column."""
    return CHUNK_COLS if text else CHUNK_COLS.replace("text", "'' AS text")


def vector_column(vectors: np.ndarray) -> pa.Array:
    """A FLOAT[d] column of these rows; a row of NaN is a null (no vector yet)."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    missing = np.isnan(matrix[:, 0]) if len(matrix) else np.zeros(0, dtype=bool)
    values = pa.array(np.nan_to_num(matrix).ravel())
    mask = pa.array(missing) if missing.any() else None
    return pa.FixedSizeListArray.from_arrays(values, matrix.shape[1], mask=mask)
