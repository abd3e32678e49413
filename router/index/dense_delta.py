"""A dense index that follows a changing catalog without being rebuilt.

An HNSW graph over 20k vectors takes ~28 s to build here (router.index.vector_index), far over a
replica's 2 s budget for a change, and HNSW cannot delete. So the faiss index holds *slots*,
append-only and shared: a new or changed record's vector is added as a new slot (``add`` on
HNSW links it into the graph in milliseconds), a removed or changed record's old slot becomes a
tombstone that searches skip. Each `SlottedIndex` is an immutable view, position -> slot and
slot -> position, over that shared store: a router keeps answering on its view while the next
one is built, and the swap is one reference (router.ranking.watch). A position without a slot (a record
changed but not embedded yet) is never a dense hit: it is ranked by BM25 alone until its vector
arrives.

Searches and additions take one lock: faiss does not allow adding while another thread searches.
"""
from __future__ import annotations

import threading

import numpy as np

from .scores import Ranking, min_max
from .vector_index import FLAT_MAX, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_M, DenseIndex
from ..threads import intra_op_threads


class SlotStore:
    """The shared faiss index and its slots' vectors (a slot is never reused)."""

    def __init__(self, dim: int, kind: str, index=None, vectors: np.ndarray | None = None) -> None:
        import faiss

        self.dim, self.kind = dim, kind
        if index is None:
            if kind == "hnsw":
                index = faiss.IndexHNSWFlat(dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
                index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            else:
                index = faiss.IndexFlatIP(dim)
        if kind == "hnsw":
            index.hnsw.efSearch = HNSW_EF_SEARCH
        self.index = index
        self.vectors = np.zeros((0, dim), np.float32) if vectors is None else np.ascontiguousarray(vectors, np.float32)
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.vectors)

    def add(self, vecs: np.ndarray) -> np.ndarray:
        """Append vectors; their new slot numbers."""
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        with self.lock:
            first = len(self.vectors)
            if len(vecs):
                self.index.add(vecs)
                self.vectors = np.vstack([self.vectors, vecs])
        return np.arange(first, first + len(vecs), dtype=np.int64)

    def to_bytes(self) -> bytes:
        import faiss

        with self.lock:
            return faiss.serialize_index(self.index).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "SlotStore":
        import faiss

        index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        kind = "hnsw" if isinstance(index, faiss.IndexHNSW) else "flat"
        vectors = index.reconstruct_n(0, index.ntotal) if index.ntotal else None
        return cls(index.d, kind, index, vectors)


class SlottedIndex(DenseIndex):
    """A `DenseIndex` whose documents (router positions) map to slots of a `SlotStore`.

    ``pos_slot[i]`` is position i's slot, -1 when it has no vector. Only the search is
    different; scoring and sentence-part search use the position-ordered ``vectors`` (zero rows
    for positions without a vector)."""

    def __init__(self, store: SlotStore, pos_slot: np.ndarray) -> None:  # noqa: D107 - no DenseIndex.__init__
        self.store, self.kind, self.index = store, store.kind, store.index
        self.pos_slot = np.asarray(pos_slot, dtype=np.int64)
        self.slot_pos = np.full(len(store), -1, dtype=np.int64)
        has = self.pos_slot >= 0
        self.slot_pos[self.pos_slot[has]] = np.flatnonzero(has)
        self.has_vector = has
        self.vectors = np.zeros((len(self.pos_slot), store.dim), dtype=np.float32)
        self.vectors[has] = store.vectors[self.pos_slot[has]]
        self._dead = np.flatnonzero(self.slot_pos < 0)

    def __len__(self) -> int:
        return len(self.pos_slot)

    def describe(self) -> dict:
        return {"kind": self.kind, "vectors": int(self.has_vector.sum()), "slots": len(self.slot_pos),
                "tombstones": len(self._dead), "flat_max": FLAT_MAX}

    def _search(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        live = int(self.has_vector.sum())
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=np.int64)
            allowed = allowed[self.has_vector[allowed]]
        if allowed is not None and (len(allowed) <= FLAT_MAX or self.kind == "flat"):
            if not len(allowed):
                return (np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64))
            return self._exact_subset(queries, min(n, len(allowed)), allowed)
        if allowed is not None:
            selector = faiss.IDSelectorBatch(self.pos_slot[allowed])
            n = min(n, len(allowed))
        elif len(self._dead):
            selector = faiss.IDSelectorNot(faiss.IDSelectorBatch(self._dead))
        else:
            selector = None
        n = min(n, live)
        if n <= 0:
            return (np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64))
        if self.kind == "hnsw":
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=max(HNSW_EF_SEARCH, n))
        else:
            params = faiss.SearchParameters(sel=selector) if selector is not None else None
        with self.store.lock, intra_op_threads(1):
            scores, slots = self.index.search(queries, n, params=params)
        # a slot added after this view was made (by the next view) is not one of its documents
        known = (slots >= 0) & (slots < len(self.slot_pos))
        pos = np.where(known, self.slot_pos[np.where(known, slots, 0)], -1)
        return scores, pos

    def search(self, query: np.ndarray, n: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        if n <= 0 or not self.has_vector.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores, idx = self._search(query.reshape(1, -1), n, allowed)
        keep = idx[0] >= 0
        return idx[0][keep], scores[0][keep]

    def search_with_parts(self, query, parts, n, allowed=None, pool=0):
        if not self.has_vector.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        return super().search_with_parts(query, parts, n, allowed, pool)

    def stand_in(self, lexical: Ranking, dense: Ranking) -> Ranking:
        """The dense run with BM25 standing in for the documents that have no vector yet: each such
        document in the BM25 run gets the dense score at the same place of the dense run's range
        (its min-max BM25 value), so a pending record is routed by its BM25 evidence alone instead
        of losing the dense share of every fused score."""
        if not len(lexical):
            return dense
        missing = ~self.has_vector[lexical.docs]
        if not missing.any():
            return dense
        lo, hi = (float(dense.scores.min()), float(dense.scores.max())) if len(dense) else (0.0, 1.0)
        if hi <= lo:
            lo, hi = min(lo, 0.0), max(hi, 1.0)
        filled = lo + min_max(lexical.scores)[missing] * (hi - lo)
        docs = np.concatenate([dense.docs, lexical.docs[missing]]).astype(np.int64)
        scores = np.concatenate([dense.scores, filled]).astype(np.float32)
        order = np.lexsort((docs, -scores))
        return Ranking(docs[order], scores[order])

    def write(self, path) -> None:  # pragma: no cover - a slotted index lives in the catalog, not a file
        raise NotImplementedError("a SlottedIndex is stored with its catalog (router.index.stored)")


def place(store: SlotStore, keys: list[str], old: dict[str, tuple[str, int]], vectors: dict[str, np.ndarray],
          ids: list[str]) -> tuple[np.ndarray, dict[str, tuple[str, int]]]:
    """Slots for the records ``ids`` (positions, in order) whose passages are ``keys``: a record keeps
    its slot in ``old`` (id -> (key, slot)) while its passage is the same; otherwise it gets a new
    slot if ``vectors`` has its passage's vector, else none (-1). Returns (pos_slot, the new map)."""
    pos_slot = np.full(len(ids), -1, dtype=np.int64)
    todo: list[int] = []
    placed: dict[str, tuple[str, int]] = {}
    for i, (rid, key) in enumerate(zip(ids, keys)):
        prev = old.get(rid)
        if prev is not None and prev[0] == key:
            pos_slot[i] = prev[1]
            placed[rid] = prev
        elif key in vectors:
            todo.append(i)
    if todo:
        slots = store.add(np.vstack([vectors[keys[i]] for i in todo]))
        for i, slot in zip(todo, slots.tolist()):
            pos_slot[i] = slot
            placed[ids[i]] = (keys[i], slot)
    return pos_slot, placed
