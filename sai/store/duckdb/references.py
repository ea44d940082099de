"""The references table, `<collection>__refs`: one row per use of a name (sai/chunking/references.py),
replaced file by file with the file's chunks, in the same transaction.

Reads join the chunk table on the unit's exact lines for the content hash a chunk_id needs.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from sai.models import Reference

_FIELDS = ("name", "kind", "line", "column", "qualifier", "module", "target", "unit", "unit_start", "unit_end")
_TYPES = (pa.string(), pa.string(), pa.int32(), pa.int32(), pa.string(), pa.string(), pa.string(),
          pa.string(), pa.int32(), pa.int32())
_READ = ("r.path, r.name, r.kind, r.line, r.col, r.qualifier, r.module, r.target, r.unit, r.unit_start, "
         "r.unit_end, c.content_hash, c.language")


class References:
    """The references of one collection, through one connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, collection: str) -> None:
        self.con = con
        self.collection = collection
        self.table = f"{collection}__refs"

    def create(self) -> None:
        self.con.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} (path VARCHAR, name VARCHAR, kind VARCHAR, "
            "line INTEGER, col INTEGER, qualifier VARCHAR, module VARCHAR, target VARCHAR, unit VARCHAR, "
            "unit_start INTEGER, unit_end INTEGER)"
        )

    def drop(self) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {self.table}")

    def delete(self, keys: list[str]) -> None:
        if keys:
            self.con.execute(f"DELETE FROM {self.table} WHERE path IN (SELECT unnest(?::VARCHAR[]))", [keys])

    def replace(self, by_key: dict[str, list[Reference]]) -> None:
        """The references of these files are these (a file mapped to [] has none now)."""
        self.delete(list(by_key))
        rows = [(key, ref) for key, refs in by_key.items() for ref in refs]
        if not rows:
            return
        columns = {"path": pa.array([key for key, _ in rows], pa.string())}
        for field, kind in zip(_FIELDS, _TYPES, strict=True):
            columns["col" if field == "column" else field] = pa.array([getattr(r, field) for _, r in rows], kind)
        self.con.register("sai_refs", pa.table(columns))
        try:
            self.con.execute(f"INSERT INTO {self.table} BY NAME SELECT * FROM sai_refs")
        finally:
            self.con.unregister("sai_refs")

    def named(self, names: list[str]) -> list[Reference]:
        """Every use of one of these names, by path and position."""
        return self._read("r.name IN (SELECT unnest(?::VARCHAR[]))", [names])

    def within(self, key: str, start: int, end: int) -> list[Reference]:
        """Every use in lines start..end of one file, by position."""
        return self._read("r.path = ? AND r.line BETWEEN ? AND ?", [key, int(start), int(end)])

    def count(self) -> int:
        row = self.con.execute(f"SELECT count(*) FROM {self.table}").fetchone()
        return int(row[0]) if row else 0

    def _read(self, where: str, params: list[object]) -> list[Reference]:
        rows = self.con.execute(
            f"SELECT {_READ} FROM {self.table} r LEFT JOIN {self.collection} c ON c.path = r.path "
            f"AND c.start_line = r.unit_start AND c.end_line = r.unit_end WHERE {where} "
            "QUALIFY row_number() OVER (PARTITION BY r.path, r.line, r.col, r.name ORDER BY c.id) = 1 "
            "ORDER BY r.path, r.line, r.col", params,
        ).fetchall()
        return [Reference(name=n, kind=k, line=line, column=col, qualifier=q or "", module=m or "", target=t or "",
                          unit=u, unit_start=us, unit_end=ue, path=p, unit_hash=h or "", language=lang)
                for p, n, k, line, col, q, m, t, u, us, ue, h, lang in rows]
