"""The catalog: one row per API record, in a SQLite file or a PostgreSQL database.

``Catalog("catalog.db")`` is a file (apidb._sqlite), ``Catalog("postgresql://user@host/db")`` a
database on a server that many replicas share (apidb._postgres); both behave the same, and one
test suite runs against both. Every write is one transaction, so a failure leaves the catalog
exactly as before. Syncing is per namespace: loading a source replaces what that source's
namespaces held, record by record, so unchanged records are never rewritten.

Beside the records the catalog keeps what routing needs and must not recompute on every start:
vectors keyed by (model fingerprint, passage hash), and named snapshots (router.index.stored
writes a BM25 term-count table and a faiss index there). Each change moves a counter
(``generation`` for records, ``vector_generation`` for vectors) and, on PostgreSQL, sends a
NOTIFY on commit, which running replicas follow (router.ranking.watch).
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import _postgres, _sqlite
from .rows import COLUMNS, record_to_row, row_to_record
from .stored import STORED_SCHEMA, StoredData
from ._postgres import display_url, is_server_url
from .errors import CatalogError
from .limits import check_limits
from .location import default_db_path
from .record import ApiRecord

if TYPE_CHECKING:
    from .relations import Relation

# Version of the file layout below. A file that declares a higher version, or whose
# records table has columns this code does not know, was written by a newer toolsift:
# it may still be read (by column name), but never written.
SCHEMA_VERSION = 1
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM records"
_UPSERT = (f"INSERT INTO records ({', '.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))}) "
           f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS[1:])}")
_SET_META = "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
# {blob}: BLOB in SQLite, BYTEA in PostgreSQL; everything else reads the same in both
_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    parameters TEXT NOT NULL,
    call TEXT,
    source_format TEXT NOT NULL,
    metadata TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_namespace ON records(namespace);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '{version}') ON CONFLICT DO NOTHING;
"""
DEFAULT_LOCK_TIMEOUT = 30.0  # seconds a command waits for another process's write


def lock_timeout() -> float:
    """``$TOOLSIFT_LOCK_TIMEOUT`` seconds, else DEFAULT_LOCK_TIMEOUT."""
    try:
        value = float(os.environ.get("TOOLSIFT_LOCK_TIMEOUT", ""))
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT
    return value if value >= 0 else DEFAULT_LOCK_TIMEOUT


@dataclass(frozen=True)
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)


class Catalog(StoredData):
    """An API catalog in one SQLite file or one PostgreSQL database (see the module doc).

    ``readonly=True`` never writes, not even the schema (SQLite: ``mode=ro``, so inspecting
    another program's file leaves it byte-identical; PostgreSQL: read-only transactions). Writes
    take the catalog's write lock *before* reading what they replace (SQLite ``BEGIN IMMEDIATE``,
    a PostgreSQL advisory lock), so two processes syncing the same namespace run one after the
    other and the second sees the first's result: last writer wins, never a merge.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, readonly: bool = False) -> None:
        self.readonly = readonly
        self._newer: str | None = None  # why this catalog must not be written, if it is newer
        if is_server_url(path):
            self.path: Path | str = display_url(str(path))  # what messages show: never a password
            self.url: str | None = str(path)
            self._db = _postgres.PostgresStore(self.url, readonly=readonly, timeout=lock_timeout())
        else:
            self.path, self.url = Path(path), None
            self._db = _sqlite.SqliteStore(self._file(path, create, readonly), readonly=readonly,
                                           timeout=lock_timeout())
        try:
            self._inspect(create=create and not readonly)
        except BaseException:
            self._db.close()
            raise

    def _file(self, path: str | os.PathLike[str], create: bool, readonly: bool) -> Path:
        if str(path) != ":memory:" and not self.path.exists():
            if not create or readonly:
                raise CatalogError(f"{self.path}: no catalog here (create one with "
                                   f"`toolsift catalog add SOURCE --db {self.path}`)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CatalogError(f"{self.path}: cannot create the catalog's folder "
                                   f"({exc.strerror or exc})") from None
        return self.path

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, create: bool = False,
             readonly: bool = False) -> "Catalog":
        return cls(path or default_db_path(), create=create, readonly=readonly)

    @property
    def kind(self) -> str:
        """"sqlite" or "postgresql"."""
        return self._db.kind

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the schema ----------------------------------------------------------------
    def _inspect(self, create: bool) -> None:
        """Check that this is a toolsift catalog this code may read (and write); create the
        schema in a new file or database when ``create``."""
        try:
            tables = self._db.tables()
            if not tables and create:  # (a file with other tables is another program's: refused below)
                if self.url is not None:
                    self._db.create_schema()
                with self._db.transaction():
                    if not self._db.tables():  # another first writer may have won
                        self._run_script(_SCHEMA.format(version=SCHEMA_VERSION))
                        self._run_script(STORED_SCHEMA)
                return
            if "records" not in tables:
                if self.url is not None:
                    raise CatalogError(f"{self.path}: no catalog here (create one with "
                                       f"`toolsift catalog add SOURCE --db {self.path}`)")
                what = f"it holds tables {', '.join(sorted(tables))}" if tables else "an empty database"
                raise CatalogError(f"{self.path}: not a toolsift catalog ({what})")
            self._newer = self._newer_schema()
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    def _run_script(self, script: str) -> None:
        blob = _postgres.BLOB if self.url is not None else _sqlite.BLOB
        for statement in script.split(";"):
            if statement.strip():
                self._db.execute(statement.replace("{blob}", blob))

    def _newer_schema(self) -> str | None:
        columns = self._db.columns("records")
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            raise CatalogError(f"{self.path}: not a toolsift catalog (its records table lacks "
                               f"{', '.join(missing)})")
        version = SCHEMA_VERSION
        if "meta" in self._db.tables():
            row = self._db.query("SELECT value FROM meta WHERE key = 'schema_version'")
            version = int(row[0][0]) if row and str(row[0][0]).isdigit() else SCHEMA_VERSION
        extra = [c for c in columns if c not in COLUMNS]
        if version > SCHEMA_VERSION or extra:
            detail = f"schema version {version}" if version > SCHEMA_VERSION else f"unknown columns {', '.join(extra)}"
            return (f"written by a newer toolsift ({detail}; this one writes version {SCHEMA_VERSION})")
        return None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write transaction on a catalog this code may write: the schema is checked again
        under the lock (another process may have upgraded it since we opened)."""
        if self.readonly:
            raise CatalogError(f"{self.path}: opened read-only")
        with self._db.transaction():
            try:
                self._newer = self._newer_schema()
            except self._db.errors as exc:
                raise self._db.error(exc, "write") from None
            if self._newer:
                raise CatalogError(f"{self.path}: {self._newer}; refusing to change it (upgrade toolsift)")
            yield

    def _rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        try:
            return self._db.query(sql, params)
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    # -- reading -------------------------------------------------------------------
    def __len__(self) -> int:
        return self._rows("SELECT COUNT(*) FROM records")[0][0]

    def get(self, record_id: str) -> ApiRecord | None:
        rows = self._rows(f"{_SELECT} WHERE id = ?", (record_id,))
        return row_to_record(self.path, rows[0]) if rows else None

    def get_many(self, record_ids: Iterable[str]) -> list[ApiRecord]:
        """The records with these ids that exist, in id order (a replica's delta)."""
        ids = sorted(set(record_ids))
        out: list[ApiRecord] = []
        for start in range(0, len(ids), 500):  # well under either engine's parameter limit
            chunk = ids[start:start + 500]
            rows = self._rows(f"{_SELECT} WHERE id IN ({','.join('?' * len(chunk))})", tuple(chunk))
            out += [row_to_record(self.path, row) for row in rows]
        return sorted(out, key=lambda r: r.id)

    def records(self, namespace: str | Iterable[str] | None = None) -> list[ApiRecord]:
        """All records (of one or several namespaces), in id order."""
        return list(self.iter_records(namespace))

    def iter_records(self, namespace: str | Iterable[str] | None = None) -> Iterator[ApiRecord]:
        if namespace is None:
            rows = self._rows(f"{_SELECT} ORDER BY id")
        else:
            names = [namespace] if isinstance(namespace, str) else list(namespace)
            marks = ",".join("?" * len(names))
            rows = self._rows(f"{_SELECT} WHERE namespace IN ({marks}) ORDER BY id", tuple(names))
        if self.url is not None:  # PostgreSQL collates by locale: the same order as SQLite's bytes
            rows.sort(key=lambda row: row[0])
        for row in rows:
            yield row_to_record(self.path, row)

    def namespaces(self) -> dict[str, int]:
        rows = self._rows("SELECT namespace, COUNT(*) FROM records GROUP BY namespace")
        return {ns: int(n) for ns, n in sorted(rows)}

    def hashes(self) -> dict[str, str]:
        """record id -> content hash, for every record (what indexes are keyed on)."""
        return dict(self._rows("SELECT id, content_hash FROM records"))

    def stats(self) -> dict[str, object]:
        formats = {f: int(n) for f, n in sorted(self._rows(
            "SELECT source_format, COUNT(*) FROM records GROUP BY source_format"))}
        by_ns_fmt: dict[str, dict[str, int]] = {}
        for ns, fmt, n in sorted(self._rows(
                "SELECT namespace, source_format, COUNT(*) FROM records GROUP BY namespace, source_format")):
            by_ns_fmt.setdefault(ns, {})[fmt] = int(n)
        code = self._rows("SELECT COUNT(*) FROM records WHERE call IS NOT NULL")[0][0]
        return {"path": str(self.path), "records": len(self), "namespaces": self.namespaces(),
                "formats": formats, "namespace_formats": by_ns_fmt, "code_style": int(code)}

    # -- writing -------------------------------------------------------------------
    def sync(self, records: Iterable[ApiRecord], namespaces: Iterable[str] | None = None) -> SyncReport:
        """Make the given namespaces hold exactly ``records``, in one transaction.

        ``namespaces`` defaults to the namespaces of ``records``; pass it explicitly to
        empty a namespace whose source now yields nothing.
        """
        incoming: dict[str, ApiRecord] = {}
        for rec in records:
            check_limits(rec)
            if rec.id in incoming:
                raise CatalogError(f"duplicate record id {rec.id!r} in one load")
            incoming[rec.id] = rec
        touched = set(namespaces or ()) | {r.namespace for r in incoming.values()}
        rows = {rid: record_to_row(rec, self.url is not None) for rid, rec in incoming.items()}  # bad text fails before the lock
        added = updated = unchanged = 0
        # the lock is taken before reading what is replaced: a concurrent sync of the
        # same namespace waits here, then sees (and replaces) this one's result
        with self._writing():
            existing: dict[str, tuple[str, str]] = {}
            for ns in sorted(touched):
                for rid, digest, meta in self._db.query(
                        "SELECT id, content_hash, metadata FROM records WHERE namespace = ?", (ns,)):
                    existing[rid] = (digest, meta)
            writes, quiet = [], []
            for rid, rec in incoming.items():
                old = existing.pop(rid, None)
                if old is None:
                    added += 1
                elif old[0] != rec.content_hash:
                    updated += 1
                else:
                    unchanged += 1
                    if old[1] != rows[rid][7]:  # only positional metadata moved: refresh it quietly
                        quiet.append((rows[rid][7], rid))
                    continue
                writes.append(rows[rid])
            if writes:
                self._db.executemany(_UPSERT, writes)
            if quiet:
                self._db.executemany("UPDATE records SET metadata = ? WHERE id = ?", quiet)
            if existing:
                self._db.executemany("DELETE FROM records WHERE id = ?", [(rid,) for rid in existing])
            report = SyncReport(added, updated, len(existing), unchanged)
            if report.changed:
                self._bump("generation")
        return report

    def remove_namespace(self, namespace: str) -> int:
        with self._writing():
            n = self._db.execute("DELETE FROM records WHERE namespace = ?", (namespace,))
            if n:
                self._bump("generation")
        return n

    def _meta(self, key: str) -> int:
        try:
            row = self._db.query("SELECT value FROM meta WHERE key = ?", (key,))
        except self._db.errors as exc:
            if self.url is None and "no such table" in str(exc):  # a file written before meta existed
                return 0
            raise self._db.error(exc) from None
        return int(row[0][0]) if row and str(row[0][0]).isdigit() else 0

    def co_use(self) -> list["Relation"]:
        """The learned co-use relations stored with the catalog (apidb.relations; [] when none)."""
        from .relations import Relation

        try:
            row = self._db.query("SELECT value FROM meta WHERE key = 'co_use'")
        except self._db.errors as exc:
            if self.url is None and "no such table" in str(exc):
                return []
            raise self._db.error(exc) from None
        if not row:
            return []
        try:
            pairs = json.loads(row[0][0])
            return [Relation(str(a), str(b), "co_use", float(w)) for a, b, w in pairs]
        except (ValueError, TypeError):
            raise CatalogError(f"{self.path}: the stored co-use relations are not readable; "
                               "learn them again (toolsift catalog relations --learn-from-log FILE)") from None

    def set_co_use(self, relations: Iterable["Relation"]) -> int:
        """Replace the stored co-use relations; returns how many were stored."""
        pairs = [[r.source, r.target, round(float(r.strength), 4)] for r in relations]
        with self._writing():
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._db.execute(_SET_META, ("co_use", json.dumps(pairs, separators=(",", ":"))))
        return len(pairs)

    @property
    def generation(self) -> int:
        """Increases on every change of the records; indexes record the generation they were built at."""
        return self._meta("generation")

    @property
    def vector_generation(self) -> int:
        """Increases whenever vectors are stored (a replica then looks for the vectors it lacked)."""
        return self._meta("vector_generation")

    def _bump(self, key: str) -> None:
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        value = self._meta(key) + 1
        self._db.execute(_SET_META, (key, str(value)))
        self._db.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING",
                         (str(SCHEMA_VERSION),))
        self._db.notify(f"{key}:{value}")
