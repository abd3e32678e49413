"""Routing state read from the catalog itself: what a replica loads, and how it follows changes.

`toolsift index` on a catalog stores, beside the records (apidb.stored): each passage's vector
keyed by (model fingerprint, passage hash), a snapshot of every record's BM25 term counts and
passage hash (``bm25``), and the faiss index over the vectors (``dense:<fingerprint>``). A replica
(`StoredIndex.open`) then reads records and snapshots, tokenizes only records changed since the
snapshot, takes their vectors from the catalog, and never embeds: a replica never loads more
than the query encoder. `StoredIndex.refresh` applies a change (new, changed, removed records;
vectors that arrived) to the in-memory state and returns the next immutable `CatalogView`.

A record without a stored vector (changed since the last `toolsift index`) is *pending*: BM25
ranks it, dense search does not see it, and its selections say so (router.ranking.watch).
"""
from __future__ import annotations

import gc
import hashlib
import io
import json
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from apidb.catalog import Catalog
from apidb.record import ApiRecord

from .. import text as rtext
from ..encoders.dense import DEFAULT_MODEL, Embedder, cache_identity, resolve_encoder
from .dense_delta import SlotStore, SlottedIndex, place
from .lexical import LexicalIndex
from .lexical_delta import TermCounts
from .vector_index import FLAT_MAX, DenseIndex
from .vector_store import vector_cache

LEXICAL_SNAPSHOT = "bm25"
FORMAT = 1


def catalog_digest(hashes: dict[str, str]) -> str:
    """A digest of (id, stored content hash) of every record and of the text rules
    (rtext.rules_fingerprint): equal to a build's only if every passage and BM25 document is the
    one that build used. It renders no passage: at 20k records rendering them took ~2.5 s of a
    fresh `toolsift route` (cProfile), this ~20 ms."""
    h = hashlib.sha256(rtext.rules_fingerprint().encode())
    for rid in sorted(hashes):
        h.update(f"{rid}\0{hashes[rid]}\n".encode())
    return h.hexdigest()


def dense_snapshot_name(fingerprint: str) -> str:
    return f"dense:{fingerprint}"


def _encode(vec: np.ndarray) -> bytes:
    return np.ascontiguousarray(vec, dtype=np.float32).tobytes()


def _decode(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


@dataclass(frozen=True)
class CatalogView:
    """What one router routes over: records in id order, their BM25 and dense indexes, the
    records still waiting for a vector, and the catalog counters this view is current with."""

    records: list[ApiRecord]
    lexical: LexicalIndex
    dense: SlottedIndex | None
    pending: frozenset[str]
    generation: int
    vector_generation: int
    warnings: list[str] = field(default_factory=list)


class StoredIndex:
    """The in-memory routing state of one catalog (see the module doc); not thread-safe: one
    watcher thread owns it, routers only read the views it returns."""

    def __init__(self, model_id: str | None = None, encoder: str | None = None,
                 field_weights: dict[str, int] | None = None, with_dense: bool = True) -> None:
        self.model_id = model_id or DEFAULT_MODEL
        self.encoder = resolve_encoder(encoder)
        self.fingerprint = cache_identity(self.model_id, self.encoder)
        self.weights = dict(field_weights or rtext.DEFAULT_FIELD_WEIGHTS)
        self.with_dense = with_dense
        self.counts = TermCounts()
        self.records: dict[str, ApiRecord] = {}
        self.hashes: dict[str, str] = {}  # id -> content hash as stored (recomputing it costs ~20 us a record)
        self.keys: dict[str, str] = {}
        self.store: SlotStore | None = None
        self.slots: dict[str, tuple[str, int]] = {}
        self.view: CatalogView | None = None
        self.index_cache = None  # a file catalog's <db>.index/cache: vectors `toolsift index` cached there

    def _lexical_meta(self) -> dict:
        return {"format": FORMAT, "rules": rtext.rules_fingerprint(), "weights": self.weights}

    # -- a cold start ----------------------------------------------------------------
    def open(self, cat: Catalog) -> CatalogView:
        generation, vector_generation = cat.generation, cat.vector_generation  # before reading: a change
        gc.disable()  # 20k records allocate ~1M objects (see router.index.build)   during the load is seen next
        try:
            records = cat.records()
        finally:
            gc.enable()
        self.hashes = cat.hashes()
        warnings: list[str] = []
        fresh = self._read_lexical(cat, warnings)
        for rec in records:
            self.records[rec.id] = rec
            if rec.id not in fresh:
                self._tokenize(rec)
        lexical = self.counts.index(sorted(self.records))
        dense = self._open_dense(cat, warnings) if self.with_dense else None
        self.view = self._view(lexical, dense, generation, vector_generation, warnings)
        return self.view

    def _tokenize(self, rec: ApiRecord, tokens: list[str] | None = None) -> None:
        self.counts.set(rec.id, rtext.record_tokens(rec, self.weights) if tokens is None else tokens)
        self.keys[rec.id] = rtext.embedding_key(rec)

    def _read_lexical(self, cat: Catalog, warnings: list[str]) -> set[str]:
        """Counts and passage hashes from the catalog's snapshot, for records unchanged since;
        the ids it covered."""
        snap = cat.get_snapshot(LEXICAL_SNAPSHOT)
        if snap is None or json.loads(snap[0]) != self._lexical_meta():
            what = "no BM25 snapshot" if snap is None else "a BM25 snapshot of other text rules or field weights"
            warnings.append(f"the catalog has {what}: {len(self.hashes)} records tokenized at start "
                            f"(`toolsift index --db {cat.path}` stores one)")
            return set()
        current = self.hashes
        counts, extra = TermCounts.from_bytes(snap[1])
        fresh = {rid for rid, h in zip(extra["ids"], extra["hashes"]) if current.get(rid) == h}
        counts.docs = {rid: v for rid, v in counts.docs.items() if rid in fresh}
        self.counts = counts
        self.keys = {rid: key for rid, key in zip(extra["ids"], extra["keys"]) if rid in fresh}
        return fresh

    def _open_dense(self, cat: Catalog, warnings: list[str]) -> SlottedIndex | None:
        snap = cat.get_snapshot(dense_snapshot_name(self.fingerprint))
        if snap is not None:
            with np.load(io.BytesIO(snap[1]), allow_pickle=False) as z:
                strings = json.loads(z["strings"].tobytes().decode())
                self.store = SlotStore.from_bytes(z["faiss"].tobytes())
            self.slots = {rid: (key, slot) for slot, (rid, key) in enumerate(zip(strings["ids"], strings["keys"]))}
        built_here = self.store is None
        dense = self._refresh_dense(cat)
        if dense is None:
            warnings.append(f"the catalog has no vectors for {self.model_id} ({self.encoder}): dense search "
                            f"off, BM25 only (`toolsift index --db {cat.path}` embeds and stores them)")
        elif built_here and dense.kind == "hnsw":
            warnings.append(f"the catalog has no dense snapshot: HNSW built over {len(dense.store)} vectors at "
                            f"start (`toolsift index --db {cat.path}` stores one)")
        return dense

    def _vectors(self, cat: Catalog, keys: set[str]) -> dict[str, np.ndarray]:
        """Vectors of these passages: the catalog's, then (a file catalog indexed by an older toolsift)
        the embedding caches; never the model."""
        if not keys:
            return {}
        found = {k: _decode(v) for k, v in cat.get_vectors(self.fingerprint, keys).items()}
        rest = sorted(keys - found.keys())
        if rest:
            cache = vector_cache(self.model_id, self.encoder, index_cache=self.index_cache)
            found.update((k, v) for k, v in zip(rest, cache.get_many(rest)) if v is not None)
        return found

    def _view(self, lexical: LexicalIndex, dense: SlottedIndex | None, generation: int, vector_generation: int,
              warnings: list[str]) -> CatalogView:
        order = sorted(self.records)
        pending = frozenset(order[i] for i in np.flatnonzero(~dense.has_vector)) if dense is not None else frozenset()
        if pending:
            warnings = [*warnings, f"{len(pending)} record(s) have no stored vector yet: ranked by BM25 only "
                                   "until `toolsift index` stores them"]
        return CatalogView([self.records[r] for r in order], lexical, dense, pending, generation, vector_generation,
                           warnings)

    # -- a change --------------------------------------------------------------------
    def refresh(self, cat: Catalog) -> CatalogView | None:
        """The next view if the catalog changed since the last one (records or vectors), else None."""
        old = self.view
        generation, vector_generation = cat.generation, cat.vector_generation
        if old is not None and generation == old.generation and vector_generation == old.vector_generation:
            return None
        lexical = old.lexical if old is not None else None
        if old is None or generation != old.generation:
            hashes = cat.hashes()
            gone = [rid for rid in self.records if rid not in hashes]
            changed = [rid for rid, h in hashes.items() if self.hashes.get(rid) != h]
            fetched = {r.id: r for r in cat.get_many(changed)}
            for rid in gone + [rid for rid in changed if rid not in fetched]:  # (removed between the reads)
                self.counts.remove(rid)
                self.records.pop(rid, None)
                self.keys.pop(rid, None)
                self.hashes.pop(rid, None)
            for rid, rec in fetched.items():
                self.records[rid], self.hashes[rid] = rec, hashes[rid]
                self._tokenize(rec)
            if gone or changed:
                lexical = self.counts.index(sorted(self.records))
        dense = self._refresh_dense(cat) if self.with_dense else None
        self.view = self._view(lexical, dense, generation, vector_generation, [])
        return self.view

    def _refresh_dense(self, cat: Catalog) -> SlottedIndex | None:
        order = sorted(self.records)
        wanted = {self.keys[rid] for rid in order if self.slots.get(rid, ("",))[0] != self.keys[rid]}
        vectors = self._vectors(cat, wanted)
        if self.store is None:
            if not vectors:
                return None
            self.store = SlotStore(len(next(iter(vectors.values()))), "hnsw" if len(order) > FLAT_MAX else "flat")
        pos_slot, self.slots = place(self.store, [self.keys[r] for r in order], self.slots, vectors, order)
        return SlottedIndex(self.store, pos_slot)


# -- `toolsift index` on a catalog: vectors and snapshots into it -------------------------
@dataclass
class StoredReport:
    records: int
    embedded: int
    reused: int
    stored: int
    up_to_date: bool


def store_index(cat: Catalog, *, model: str | None = None, encoder: str | None = None,
                field_weights: dict[str, int] | None = None, dense: DenseIndex | None = None,
                index_cache=None, on_start: Callable[[int], None] | None = None,
                on_batch: Callable[[int], None] | None = None, digest: str | None = None,
                tokens: Mapping[str, list[str]] | None = None) -> StoredReport:
    """Bring the catalog's stored vectors and snapshots up to date: embed only passages with no
    vector in the catalog or a cache, store them, drop vectors no record uses, write the BM25
    snapshot and the faiss snapshot. ``dense``: a DenseIndex already built over the records' vectors
    in id order (the file index's), used instead of building a second HNSW graph.
    ``digest``: the catalog's `catalog_digest` if the caller has it; when the stored snapshots were
    made at the same one (and the same text rules, weights and model), nothing is read or written.
    ``tokens``: BM25 tokens by content hash that the caller made with these field weights (build_index's),
    so a build tokenizes each record once (tokenizing 20k records again was ~5 s of a build)."""
    state = StoredIndex(model, encoder, field_weights)
    digest = digest or catalog_digest(cat.hashes())
    lex_meta = json.dumps(state._lexical_meta())
    snap_meta = cat.snapshot_meta(dense_snapshot_name(state.fingerprint))
    if snap_meta is not None and json.loads(snap_meta).get("catalog_digest") == digest \
            and cat.snapshot_meta(LEXICAL_SNAPSHOT) == lex_meta:
        if on_start:
            on_start(0)
        n = len(cat)
        return StoredReport(n, 0, n, 0, True)
    records = sorted(cat.records(), key=lambda r: r.id)
    order = [r.id for r in records]
    hashes = [r.content_hash for r in records]  # also what the BM25 snapshot records
    tokens = tokens or {}
    for rec, h in zip(records, hashes):
        state._tokenize(rec, tokens.get(h))
    keys = [state.keys[rid] for rid in order]
    fp = state.fingerprint
    stored = cat.vector_keys(fp)
    wanted = sorted(set(keys) - stored)
    found: dict[str, np.ndarray] = {}
    embedded = 0
    if wanted:
        cache = vector_cache(state.model_id, state.encoder, index_cache=index_cache)
        found = {k: v for k, v in zip(wanted, cache.get_many(wanted)) if v is not None}
        missing = [k for k in wanted if k not in found]
        if on_start:
            on_start(len(missing))
        if missing:
            by_key = {state.keys[r.id]: r for r in records}
            embedder = Embedder(state.model_id, state.encoder)
            for start in range(0, len(missing), 1024):  # stored in chunks: a killed run keeps its work
                chunk = missing[start:start + 1024]
                vecs = embedder.encode([rtext.record_passage(by_key[k]) for k in chunk], on_batch=on_batch)
                cat.put_vectors(fp, [(k, _encode(v)) for k, v in zip(chunk, vecs)])
                embedded += len(chunk)
    elif on_start:
        on_start(0)
    cat.put_vectors(fp, [(k, _encode(v)) for k, v in found.items()], keep_only=keys)
    # the digest differed above: some record changed since the snapshots were written
    cat.put_snapshot(LEXICAL_SNAPSHOT, lex_meta, state.counts.to_bytes(order, {"hashes": hashes, "keys": keys}))
    if dense is None or len(dense) != len(order):
        vectors = {k: _decode(v) for k, v in cat.get_vectors(fp).items()}
        dense = DenseIndex(np.vstack([vectors[k] for k in keys]))
    import faiss

    buf = io.BytesIO()
    strings = json.dumps({"ids": order, "keys": keys}).encode()
    np.savez(buf, faiss=faiss.serialize_index(dense.index), strings=np.frombuffer(strings, dtype=np.uint8))
    meta = {"format": FORMAT, "kind": dense.kind, "catalog_digest": digest, "model": state.model_id,
            "created": time.time()}
    cat.put_snapshot(dense_snapshot_name(fp), json.dumps(meta), buf.getvalue())
    return StoredReport(len(records), embedded, len(records) - embedded, len(wanted), False)


def stored_status(url: str) -> dict:
    """What `toolsift doctor` says of a server catalog's index: its stored dense snapshot."""
    from ..encoders.dense import vector_space

    with Catalog(url, readonly=True) as cat:
        meta = cat.snapshot_meta(dense_snapshot_name(cache_identity(DEFAULT_MODEL, None)))
        if meta is None:
            return {"path": str(cat.path), "exists": False}
        info = json.loads(meta)
        return {"path": str(cat.path), "exists": True, "records": len(cat), "model": info.get("model"),
                "encoder": resolve_encoder(None), "vectors": vector_space(None), "built": info.get("created"),
                "stale": info.get("catalog_digest") != catalog_digest(cat.hashes())}
