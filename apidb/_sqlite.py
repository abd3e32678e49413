"""The SQLite side of the catalog: one file, SQLite's own write lock, nothing to notify.

`apidb.catalog.Catalog` speaks to a store through a few calls (query, execute, a write
transaction, errors as one line); this module and `apidb._postgres` are the two stores. The SQL
they are given is the subset both engines read the same way (``?`` placeholders, ``ON CONFLICT``).
"""
from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from .errors import CatalogError

BLOB = "BLOB"


class SqliteStore:
    """A catalog file. ``readonly`` opens it with ``mode=ro``: not even the schema is written."""

    kind = "sqlite"

    def __init__(self, path: Path, *, readonly: bool, timeout: float) -> None:
        self.where = str(path)
        self.readonly = readonly
        self.timeout = timeout
        try:
            if readonly:
                uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro"
                self._conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
            else:
                self._conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def close(self) -> None:
        self._conn.close()

    errors = (sqlite3.Error,)

    def tables(self) -> set[str]:
        return {name for (name,) in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def columns(self, table: str) -> list[str]:
        return [row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")]

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params: tuple = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        self._conn.executemany(sql, rows)

    def notify(self, payload: str) -> None:
        """Readers of a file poll its generation counter (router.ranking.watch): nothing to send."""

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction holding SQLite's write lock from its first statement: a second
        writer waits (up to the lock timeout) and then sees the first one's result."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self.error(exc, "write") from None
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self.error(exc, "write") from None
            raise

    def error(self, exc: Exception, doing: str = "") -> CatalogError:
        """A one-line CatalogError saying what kind of failure this was."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc)
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
            return CatalogError(f"{self.where}: the catalog is locked by another process (waited "
                                f"{self.timeout:g}s; set TOOLSIFT_LOCK_TIMEOUT to wait longer)"
                                f"{'; nothing was changed' if doing == 'write' else ''}")
        if name == "SQLITE_NOTADB" or "not a database" in text:
            return CatalogError(f"{self.where}: not a toolsift catalog (not an SQLite database)")
        if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
            return CatalogError(f"{self.where}: the catalog file is damaged ({text})")
        if doing == "write":
            return CatalogError(f"{self.where}: write failed, catalog unchanged ({text})")
        return CatalogError(f"{self.where}: cannot read the catalog ({text})")
