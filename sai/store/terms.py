"""The BM25 terms of a lexeme string exactly as DuckDB's FTS index makes them: English stop words
dropped, the rest Porter-stemmed. Asked of DuckDB itself (an in-memory connection with the fts
extension), so that the Qdrant backend's sparse vectors hold the terms the DuckDB file's BM25
index holds, and both backends rank alike (docs/design.md, "The Qdrant backend").

Each distinct lexeme is looked up once per process and kept (with its sparse dimension).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import duckdb

from sai.errors import StoreError
from sai.store.duckdb import interrupts
from sai.store.duckdb.rows import FTS_OPTIONS, extension_path

_MAX_HELD = 1 << 20  # distinct lexemes kept; past this the table starts again


class Terms:
    """lexeme -> its term's sparse dimension (`index_of(stem)`), or None for a stop word."""

    def __init__(self, index_of: Callable[[str], int]) -> None:
        self.index_of = index_of
        self._lock = threading.Lock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._stop: frozenset[str] = frozenset()
        self._held: dict[str, int | None] = {}

    def dimensions(self, lexemes: str) -> list[int]:
        """The sparse dimension of each term of `lexemes` (repeats kept, stop words left out)."""
        words = lexemes.split()
        held = self._held
        missing = [w for w in set(words) if w not in held]
        if missing:
            self._look_up(missing)
            held = self._held
        return [d for w in words if (d := held.get(w)) is not None]

    def _look_up(self, words: list[str]) -> None:
        with self._lock:
            try:
                with interrupts.kept():
                    con = self._connection()
                    stems = con.execute("SELECT t, stem(t, 'porter') FROM unnest(?::VARCHAR[]) AS u(t)",
                                        [words]).fetchall()
            except duckdb.InterruptException as exc:
                raise KeyboardInterrupt from exc
            except duckdb.Error as exc:
                raise StoreError(f"cannot stem BM25 terms with DuckDB's fts extension ({exc}); "
                                 "reinstall duckdb-extension-fts") from exc
            if len(self._held) > _MAX_HELD:
                self._held = {}
            for word, stem in stems:
                self._held[word] = None if word in self._stop else self.index_of(stem)

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": "true"})
            con.execute(f"LOAD '{extension_path('fts')}'")
            # the stop-word list DuckDB's FTS uses: made by indexing one row with the same options
            con.execute("CREATE TABLE sai_probe (id INTEGER, t VARCHAR)")
            con.execute("INSERT INTO sai_probe VALUES (1, 'x')")
            con.execute(f"PRAGMA create_fts_index('sai_probe', 'id', 't', {FTS_OPTIONS})")
            self._stop = frozenset(r[0] for r in con.execute("SELECT sw FROM fts_main_sai_probe.stopwords").fetchall())
            self._con = con
        return self._con
