"""A collection's tables as a whole: creating, dropping, renaming (a rebuild taking over) and
checking them; the statements that change the schema rather than the rows (tables.py)."""

from __future__ import annotations

from sai.store.duckdb import changelog
from sai.store.duckdb.rows import IndexMeta, check_collection, now_iso, quote_ident
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
    conn.set_meta({k: str(v) for k, v in meta.__dict__.items()} | {"created_at": now_iso()})
    conn.dirty = True  # a new collection: its readers build their copies anew (nothing logged)


def drop(conn: Connection) -> None:
    """Drop the collection's tables and meta rows, in the transaction."""
    conn.dirty = False
    conn.con.execute(f"DROP TABLE IF EXISTS {conn.collection}")
    conn.con.execute(f"DROP TABLE IF EXISTS {conn.files_table}")
    conn.con.execute(f"DROP TABLE IF EXISTS {changelog.table_of(conn.collection)}")
    conn.postings.drop()
    conn.references.drop()
    if conn.table_exists("sai_meta"):
        conn.con.execute("DELETE FROM sai_meta WHERE collection = ?", [conn.collection])


def take_over(conn: Connection, collection: str) -> None:
    """Make this connection's collection (a rebuild) the collection `collection`, in the
    transaction: the tables and meta rows of `collection` are dropped, this one's renamed."""
    check_collection(collection)
    drop(Connection(conn.con, collection, read_only=False))
    for suffix in ("", "__files", "__terms", "__postings", "__refs", changelog.table_of("")):
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

