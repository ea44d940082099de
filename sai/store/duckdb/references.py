"""The references table, `<collection>__refs`: one row per use of a name (sai/chunking/references.py),
replaced file by file with the file's chunks, in the same transaction.

A row carries its unit's chunk_id and language, so a read touches this table alone; a name is
looked up by `name_key`, a 64-bit hash of it (an integer column scans ~5x faster than the
strings: 5M rows in ~10 ms), the name compared too. A file's rows are written together, so
the zone maps of `path` skip the rest of the table when one file's rows are read.
"""

from __future__ import annotations

import functools
import hashlib

import duckdb
import pyarrow as pa

from sai.models import Reference
from sai.store.duckdb.rows import INTS, TEXTS, int_list, registered, text_list

_READ = "path, name, kind, line, col, qualifier, module, target, unit, unit_start, unit_end, unit_id, language"


# One name is compared; up to _LISTED names, each row's key is looked for in the list of keys;
# past it, the keys are joined. DuckDB 1.5.5 plans an IN over two or more values as a join: at
# 1.35M rows (100,000 chunks) 2 names' rows took 16 ms by the list against 55 by the join, 16
# names 30 against 60, 40 alike (~90), 300 names 336 against 163; at 13.5M rows (1M chunks) 2
# names 68 against 370 ms, and one name 20 ms compared, 23-30 joined, 45-70 by the list.
_LISTED = 32


def _named(names: list[str]) -> tuple[str, list[object]]:
    """The condition selecting the rows of these names, and its parameters."""
    if len(names) == 1:
        return "name_key = ? AND name = ?", [name_key(names[0]), names[0]]
    keys, texts = int_list([name_key(n) for n in names]), text_list(names)
    if len(names) > _LISTED:
        return f"name_key IN {INTS} AND name IN {TEXTS}", [keys, texts]
    return ("list_contains(CAST(?::VARCHAR AS BIGINT[]), name_key) "
            "AND list_contains(CAST(json_extract_string(?::VARCHAR, '$[*]') AS VARCHAR[]), name)", [keys, texts])


# a name recurs in every file (`self`, `len`): a blake2b each was a third of a write's Python time
@functools.lru_cache(maxsize=1 << 16)
def name_key(name: str) -> int:
    """The signed 64-bit key a name is looked up by."""
    return int.from_bytes(hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little", signed=True)


class References:
    """The references of one collection, through one connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, collection: str) -> None:
        self.con = con
        self.collection = collection
        self.table = f"{collection}__refs"

    def create(self) -> None:
        self.con.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} (path VARCHAR, name_key BIGINT, name VARCHAR, kind VARCHAR, "
            "line INTEGER, col INTEGER, qualifier VARCHAR, module VARCHAR, target VARCHAR, unit VARCHAR, "
            "unit_start INTEGER, unit_end INTEGER, unit_id VARCHAR, language VARCHAR)"
        )

    def delete(self, keys: list[str]) -> None:
        if keys:
            self.con.execute(f"DELETE FROM {self.table} WHERE path IN {TEXTS}", [text_list(keys)])

    def replace(self, by_key: dict[str, pa.Table]) -> None:
        """The references of these files are these (tables of store/uses.py's SCHEMA; a file
        mapped to an empty one has none now)."""
        self.delete(list(by_key))
        keys = [key for key in sorted(by_key) if by_key[key].num_rows]
        if not keys:
            return
        table = pa.concat_tables([by_key[key].append_column("path", pa.array([key] * by_key[key].num_rows, pa.string()))
                                  for key in keys])
        keyed = pa.array(list(map(name_key, table.column("name").to_pylist())), pa.int64())
        with registered(self.con, "sai_refs", table.append_column("name_key", keyed)):
            self.con.execute(f"INSERT INTO {self.table} BY NAME SELECT * FROM sai_refs")

    def named(self, names: list[str]) -> list[Reference]:
        """Every use of one of these names, by path and position."""
        return self._read(*_named(names))

    def files_using(self, names: list[str]) -> dict[str, set[str]]:
        """The files holding a use of each name (name -> keys)."""
        out: dict[str, set[str]] = {name: set() for name in names}
        where, params = _named(names)
        for name, path in self.con.execute(f"SELECT DISTINCT name, path FROM {self.table} WHERE {where}",
                                           params).fetchall():
            out[name].add(path)
        return out

    def within(self, key: str, start: int, end: int) -> list[Reference]:
        """Every use in lines start..end of one file, by position."""
        return self._read("path = ? AND line BETWEEN ? AND ?", [key, int(start), int(end)])

    def _read(self, where: str, params: list[object]) -> list[Reference]:
        rows = self.con.execute(
            f"SELECT {_READ} FROM {self.table} WHERE {where} ORDER BY path, line, col", params).fetchall()
        return [Reference(name=n, kind=k, line=line, column=col, qualifier=q or "", module=m or "", target=t or "",
                          unit=u, unit_start=us or 0, unit_end=ue or 0, unit_id=i or "", language=lang, path=p)
                for p, n, k, line, col, q, m, t, u, us, ue, i, lang in rows]
