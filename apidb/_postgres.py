"""The PostgreSQL side of the catalog (psycopg 3): a database on a server many replicas share.

Tables live in their own schema, ``toolsift``, so pointing toolsift at an existing database never
touches anything else in it. Writers are serialized by one transaction-level advisory lock (the
counterpart of SQLite's write lock): a second writer waits for the first, up to the lock
timeout, then sees its result, so two syncs of one namespace never merge. A change announces
itself with ``NOTIFY toolsift_catalog`` inside its transaction; PostgreSQL delivers it on commit
only, so a listener never hears of a change it cannot read yet.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from .errors import CatalogError
from .urls import redact_text, redact_url, url_problem

SCHEMA = "toolsift"
CHANNEL = "toolsift_catalog"
BLOB = "BYTEA"
_WRITE_LOCK = 0x746F6F6C  # one advisory lock key for every write of this database ("tool")
SCHEMES = ("postgresql://", "postgres://")


def is_server_url(location: object) -> bool:
    """Whether a --db value names a PostgreSQL database rather than a SQLite file."""
    return isinstance(location, str) and location.startswith(SCHEMES)


def display_url(url: str) -> str:
    """The URL without its credentials (apidb.urls): what messages, /healthz and logs show."""
    return redact_url(url)


def connect_timeout() -> int:
    """``$TOOLSIFT_DB_CONNECT_TIMEOUT`` seconds (default 5): how long an unreachable server may
    keep a command waiting before it says so."""
    try:
        return max(1, int(float(os.environ.get("TOOLSIFT_DB_CONNECT_TIMEOUT", "5"))))
    except ValueError:
        return 5


def connect(url: str, *, readonly: bool = False, autocommit: bool = True):
    """A psycopg connection with the catalog's schema first on the search path; an unreachable or
    refusing server is one CatalogError line."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        raise CatalogError(f"{display_url(url)}: PostgreSQL catalogs need psycopg (pip install "
                           "'psycopg[binary]')") from None
    problem = url_problem(url)
    if problem is not None:  # before libpq: its messages about a bad URL would quote it whole
        raise CatalogError(f"{display_url(url)}: not a usable PostgreSQL URL: {problem}")
    options = f"-c search_path={SCHEMA}" + (" -c default_transaction_read_only=on" if readonly else "")
    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=connect_timeout(), options=options,
                               application_name="toolsift")
    except psycopg.Error as exc:
        raise CatalogError(f"{display_url(url)}: cannot connect to the PostgreSQL server "
                           f"({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = redact_text(" ".join(str(exc).split()))  # psycopg's messages span lines; ours are one
    return (text or type(exc).__name__)[:300]


class PostgresStore:
    """One catalog database. ``readonly`` makes every transaction of the session read-only."""

    kind = "postgresql"

    def __init__(self, url: str, *, readonly: bool, timeout: float) -> None:
        import psycopg

        self.url, self.where = url, display_url(url)
        self.readonly, self.timeout = readonly, timeout
        self.errors = (psycopg.Error,)
        self._psycopg = psycopg
        self._conn = connect(url, readonly=readonly)

    def close(self) -> None:
        self._conn.close()

    def create_schema(self) -> None:
        """The schema, created under the write lock (two first writers must not race on it)."""
        with self.transaction():
            self._conn.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")

    def tables(self) -> set[str]:
        return {name for (name,) in self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", (SCHEMA,))}

    def columns(self, table: str) -> list[str]:
        return [name for (name,) in self.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "ORDER BY ordinal_position", (SCHEMA, table))]

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._conn.execute(sql.replace("?", "%s"), params).fetchall()

    def execute(self, sql: str, params: tuple = ()) -> int:
        return self._conn.execute(sql.replace("?", "%s"), params).rowcount

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(sql.replace("?", "%s"), rows)

    def notify(self, payload: str) -> None:
        """Sent with the transaction's commit (and never if it rolls back)."""
        self._conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        conn = self._conn
        try:
            conn.execute("BEGIN")
            conn.execute(f"SET LOCAL lock_timeout = '{int(self.timeout * 1000)}ms'")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
        except self._psycopg.Error as exc:
            self._rollback()
            raise self.error(exc, "write") from None
        try:
            yield
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, self._psycopg.Error):
                raise self.error(exc, "write") from None
            raise

    def _rollback(self) -> None:
        try:
            if not self._conn.closed:
                self._conn.execute("ROLLBACK")
        except self._psycopg.Error:
            pass  # a lost connection rolls the transaction back on the server by itself

    def error(self, exc: Exception, doing: str = "") -> CatalogError:
        errors = self._psycopg.errors
        text = _first_line(exc)
        if isinstance(exc, errors.LockNotAvailable):
            return CatalogError(f"{self.where}: the catalog is being written by another process (waited "
                                f"{self.timeout:g}s; set TOOLSIFT_LOCK_TIMEOUT to wait longer)"
                                f"{'; nothing was changed' if doing == 'write' else ''}")
        # the connection is gone: closed, a client-side failure (no SQLSTATE), class 08 (connection)
        # or 57P (shutdown); a limit the server names (54000 ...) is an error of the write instead
        state = getattr(exc, "sqlstate", None) or ""
        if self._conn.closed or (isinstance(exc, self._psycopg.OperationalError)
                                 and (not state or state.startswith(("08", "57P")))):
            return CatalogError(f"{self.where}: lost the connection to the PostgreSQL server ({text})"
                                f"{'; nothing was changed' if doing == 'write' else ''}")
        if isinstance(exc, errors.ReadOnlySqlTransaction):
            return CatalogError(f"{self.where}: opened read-only")
        if doing == "write":
            return CatalogError(f"{self.where}: write failed, catalog unchanged ({text})")
        return CatalogError(f"{self.where}: cannot read the catalog ({text})")
