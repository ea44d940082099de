"""A collection's tables as a whole: creating, dropping, renaming (a rebuild taking over),
checking and upgrading them; the statements that change the schema rather than the rows (tables.py).

An upgrade brings a collection of any older format (from UPGRADABLE_FROM, sai/project.py) to this
one in one transaction, so a kill leaves the old format, upgraded again by the next run; every
step is a no-op where the format already has what it adds, and keeps every vector. Columns added
start empty; the chunking signature changed with them, so the next index run chunks every file
again and fills them (vectors reused, nothing embedded). Nothing of an older format is read
anywhere else: a file opens without the extensions older formats used (DuckDB keeps an index of
an unknown type unbound until a write, and a dropped one needs none)."""

from __future__ import annotations

from datetime import UTC, datetime

from sai.models import SCHEMA_VERSION
from sai.store.duckdb.rows import COMPANIONS, IndexMeta, check_collection, quote_ident
from sai.store.duckdb.tables import Connection


def create(conn: Connection, meta: IndexMeta) -> None:
    """Create the chunk and file tables and record what the index is built with.

    Without a dimension (a first run writes its chunks before the model has said how long
    its vectors are) the chunk table has no `embedding` column until set_vectors adds it.
    """
    dim = int(meta.vector_dim)
    vectors = f"embedding FLOAT[{dim}], " if dim > 0 else ""
    conn.con.execute(
        "CREATE TABLE IF NOT EXISTS sai_meta (collection VARCHAR, key VARCHAR, value VARCHAR)"
    )
    conn.con.execute(
        f"CREATE TABLE {conn.collection} (id BIGINT, path VARCHAR, language VARCHAR, "
        "start_line INTEGER, end_line INTEGER, symbol VARCHAR, text VARCHAR, "
        "content_hash VARCHAR, file_hash VARCHAR, lexemes VARCHAR, "
        f"{vectors}indexed_at TIMESTAMP, no_duplicate BOOLEAN, shape BLOB, kind VARCHAR)"
    )
    conn.con.execute(
        f"CREATE TABLE {conn.files_table} (path VARCHAR, size BIGINT, mtime_ns BIGINT, "
        "file_hash VARCHAR, chunk_count INTEGER, indexed_at TIMESTAMP)"
    )
    conn.postings.create()
    conn.references.create()
    conn.set_meta({k: str(v) for k, v in meta.__dict__.items()} | {"created_at": datetime.now(UTC).isoformat()})
    conn.unlogged()  # a new collection: its readers build their copies anew (nothing logged)


def drop(conn: Connection, collection: str | None = None) -> None:
    """Drop the tables and meta rows of the connection's collection (or of `collection`), in the transaction."""
    collection = collection or conn.collection
    if collection == conn.collection:
        conn.dirty = False
    for suffix in ("", *COMPANIONS):
        conn.con.execute(f"DROP TABLE IF EXISTS {collection}{suffix}")
    if conn.table_exists("sai_meta"):
        conn.con.execute("DELETE FROM sai_meta WHERE collection = ?", [collection])


def take_over(conn: Connection, collection: str) -> None:
    """Make this connection's collection (a rebuild) the collection `collection`, in the
    transaction: the tables and meta rows of `collection` are dropped, this one's renamed."""
    check_collection(collection)
    drop(conn, collection)
    for suffix in ("", *COMPANIONS):
        if conn.table_exists(conn.collection + suffix):
            conn.con.execute(f"ALTER TABLE {conn.collection}{suffix} RENAME TO {collection}{suffix}")
    if conn.table_exists("sai_meta"):
        conn.con.execute("UPDATE sai_meta SET collection = ? WHERE collection = ?", [collection, conn.collection])


def verify(conn: Connection) -> None:
    """Read every block of every table of the file (DuckDB checks each block's checksum as it
    reads it): raises duckdb.Error on a damaged file that still opens."""
    tables = conn.con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'sai'").fetchall()
    for schema, table in tables:
        conn.con.execute(f"SELECT sum(hash(COLUMNS(*))) FROM {quote_ident(schema)}.{quote_ident(table)}").fetchall()


def upgrade(conn: Connection) -> None:
    """Format 3: chunks carry a token-shape signature (sai/text/shape.py); 4: no HNSW index
    (vectors.py); 5: chunks carry their kind of unit; 6: the references table (references.py),
    and the postings of every chunk where an SAI before them left a DuckDB FTS index (postings.py)."""
    conn.con.execute(f"ALTER TABLE {conn.collection} ADD COLUMN IF NOT EXISTS shape BLOB")
    conn.con.execute(f"DROP INDEX IF EXISTS {conn.collection}_hnsw")
    conn.con.execute(f"ALTER TABLE {conn.collection} ADD COLUMN IF NOT EXISTS kind VARCHAR")
    conn.references.create()
    if not conn.table_exists(conn.postings.postings):
        conn.con.execute(f"DROP SCHEMA IF EXISTS fts_main_{conn.collection} CASCADE")
        conn.postings.rebuild()
    conn.con.execute("DELETE FROM sai_meta WHERE collection = ? AND key IN ('lexicon', 'lexicon_token', 'fts_token')",
                     [conn.collection])
    conn.set_meta({"schema_version": str(SCHEMA_VERSION)})
    conn.unlogged()  # a new token, not logged (changelog.py): readers compare every chunk
