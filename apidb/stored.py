"""What a catalog keeps for routing beside its records: vectors and snapshots.

Vectors are keyed by (model fingerprint, passage hash) and held as raw float32 bytes, so the
catalog needs no numpy; router.index.stored decides what they mean. Snapshots are named blobs
with a JSON meta (router.index.stored writes a BM25 term-count table and a faiss index), so a
replica that opens the catalog neither tokenizes 20k records nor builds an HNSW graph.
Storing vectors moves ``vector_generation`` (and notifies, on PostgreSQL): replicas waiting for
the vector of a changed record then read it.
"""
from __future__ import annotations

from collections.abc import Iterable

# Added after schema version 1 without changing it: older toolsift versions ignore both tables.
STORED_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    fingerprint TEXT NOT NULL,
    passage_hash TEXT NOT NULL,
    vec {blob} NOT NULL,
    PRIMARY KEY (fingerprint, passage_hash)
);
CREATE TABLE IF NOT EXISTS snapshots (name TEXT PRIMARY KEY, meta TEXT NOT NULL, data {blob} NOT NULL)
"""


class StoredData:
    """The vector and snapshot side of `apidb.Catalog` (a mixin: it uses the catalog's store)."""

    def _has_stored(self) -> bool:
        try:
            return "vectors" in self._db.tables()
        except self._db.errors as exc:
            raise self._db.error(exc) from None

    def vector_keys(self, fingerprint: str) -> set[str]:
        """The passage hashes that have a stored vector for this model fingerprint."""
        if not self._has_stored():
            return set()
        return {k for (k,) in self._rows("SELECT passage_hash FROM vectors WHERE fingerprint = ?", (fingerprint,))}

    def get_vectors(self, fingerprint: str, keys: Iterable[str] | None = None) -> dict[str, bytes]:
        """Stored vectors (raw float32 bytes) by passage hash: all of this fingerprint, or those of ``keys``."""
        if not self._has_stored():
            return {}
        if keys is None:
            return {k: bytes(v) for k, v in self._rows(
                "SELECT passage_hash, vec FROM vectors WHERE fingerprint = ?", (fingerprint,))}
        wanted, out = sorted(set(keys)), {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            out.update((k, bytes(v)) for k, v in self._rows(
                f"SELECT passage_hash, vec FROM vectors WHERE fingerprint = ? AND passage_hash IN "
                f"({','.join('?' * len(chunk))})", (fingerprint, *chunk)))
        return out

    def put_vectors(self, fingerprint: str, vectors: Iterable[tuple[str, bytes]],
                    keep_only: Iterable[str] | None = None) -> int:
        """Store vectors by passage hash, in one transaction; with ``keep_only``, vectors of this
        fingerprint whose hash is not in it are deleted (passages no record has any more)."""
        rows = [(fingerprint, key, bytes(vec)) for key, vec in vectors]
        with self._writing():
            self._run_script(STORED_SCHEMA)
            if rows:
                self._db.executemany("INSERT INTO vectors VALUES (?, ?, ?) ON CONFLICT (fingerprint, passage_hash) "
                                     "DO UPDATE SET vec = excluded.vec", rows)
            dropped = 0
            if keep_only is not None:
                keep = set(keep_only)
                stale = [(fingerprint, k) for (k,) in self._db.query(
                    "SELECT passage_hash FROM vectors WHERE fingerprint = ?", (fingerprint,)) if k not in keep]
                if stale:
                    self._db.executemany("DELETE FROM vectors WHERE fingerprint = ? AND passage_hash = ?", stale)
                dropped = len(stale)
            if rows or dropped:
                self._bump("vector_generation")
        return len(rows)

    def get_snapshot(self, name: str) -> tuple[str, bytes] | None:
        """A named snapshot: (its JSON meta, its bytes), or None."""
        if not self._has_stored():
            return None
        rows = self._rows("SELECT meta, data FROM snapshots WHERE name = ?", (name,))
        return (rows[0][0], bytes(rows[0][1])) if rows else None

    def snapshot_meta(self, name: str) -> str | None:
        if not self._has_stored():
            return None
        rows = self._rows("SELECT meta FROM snapshots WHERE name = ?", (name,))
        return rows[0][0] if rows else None

    def put_snapshot(self, name: str, meta: str, data: bytes) -> None:
        with self._writing():
            self._run_script(STORED_SCHEMA)
            self._db.execute("INSERT INTO snapshots VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                             "meta = excluded.meta, data = excluded.data", (name, meta, data))

