"""Inner-product search over normalized vectors: exact (faiss IndexFlatIP) up to ``FLAT_MAX``
vectors, HNSW above, where a flat scan stops being cheap. The index manifest records which.

Measured on benchmarks/retrieval/scale.py's catalogs (replicas of 3,946 real tools) and its 60 real queries,
one thread, top 100, on the shared 2 cores at load 6.5-7.7 (absolute times ~3-4x an idle machine's):
flat 0.46 ms at 5k, 7.8-15.6 ms at 20k, 40-117 ms at 100k. HNSW recall@10 against flat:
M=32 efConstruction=80: 0.988 at 20k and 0.965 at 100k even with efSearch 256 (the replicas are
near-duplicates); M=32 efConstruction=200 efSearch=256: 1.000 at 20k (0.72 ms; build 28 s) and
1.000 at 100k (0.75 ms; build 323 s at load ~10). With the ONNX int8 vectors (the default encoder)
efSearch 256 gave 0.988 at 100k in two builds on an idle machine, 384 gave 1.000 (0.17 -> 0.24 ms a
query), so efSearch is 384. IVF-Flat (nlist 1-4 x sqrt(n)) needed nprobe 64
for 0.99 at 20k (1 ms) and a k-means training of 97 s at 100k, so HNSW it is. Returned scores
are exact cosines either way (HNSW keeps the full vectors).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import RouterError
from ..threads import intra_op_threads

FLAT_MAX = 10_000  # a flat scan of 10k x 384 is ~1 ms on one idle core; HNSW ~0.2 ms
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
HNSW_EF_SEARCH = 384


def _topn(scores: np.ndarray, docs: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``n`` of (docs, scores) by score, ties by doc index (as faiss orders them)."""
    if len(scores) > n:
        part = np.argpartition(-scores, n - 1)[:n]
        scores, docs = scores[part], docs[part]
    order = np.lexsort((docs, -scores))
    return docs[order], scores[order]


def cosines(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``rows @ queries.T`` as (len(rows), len(queries)) float32, one matrix-vector product per query.

    Why not the one matrix product: for the few vectors of one request (the query, its sentences
    or parts: 2-8) numpy's OpenBLAS runs a 400 x 384 by 384 x m product on its own threads, whose
    wake-up is what costs: in a routing process, m = 4 took 1.5 ms and m = 7 0.7 ms CPU against
    0.03 ms per matrix-vector product (which stays on the calling thread), and under load the
    product inside search_with_parts took ~8 ms of a 24 ms long-request route (cProfile)."""
    queries = np.asarray(queries, dtype=np.float32).reshape(-1, rows.shape[1] if rows.ndim == 2 else len(rows))
    out = np.empty((len(rows), len(queries)), dtype=np.float32)
    for j, q in enumerate(queries):
        out[:, j] = rows @ q
    return out


class DenseIndex:
    """Top-n cosine search over normalized vectors; ``kind`` is "flat" or "hnsw" (None: by size)."""

    def __init__(self, vectors: np.ndarray, kind: str | None = None) -> None:
        import faiss

        # No faiss.omp_set_num_threads(1) here: it set the constructing thread's OpenMP count,
        # shared with torch, so later batch encodes in that thread ran on one thread too.
        # search() sets one thread for its own duration instead.
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.kind = kind or ("hnsw" if len(self.vectors) > FLAT_MAX else "flat")
        if not len(self.vectors):
            self.index = None
        elif self.kind == "flat":
            self.index = faiss.IndexFlatIP(self.vectors.shape[1])
        elif self.kind == "hnsw":
            self.index = faiss.IndexHNSWFlat(self.vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            self.index.hnsw.efSearch = HNSW_EF_SEARCH
        else:
            raise RouterError(f"unknown dense index kind {kind!r}: use flat or hnsw")
        if self.index is not None:
            self.index.add(self.vectors)  # builds use every core (OpenMP default)

    def __len__(self) -> int:
        return len(self.vectors)

    def describe(self) -> dict:
        """What the index manifest records about this index."""
        out = {"kind": self.kind, "vectors": len(self.vectors), "flat_max": FLAT_MAX}
        if self.kind == "hnsw":
            out.update(M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION, ef_search=HNSW_EF_SEARCH)
        return out

    def _search(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """One search for a (m, dim) batch: (scores, doc indices), each (m, n'), -1 = none."""
        import faiss

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        params = None
        if allowed is not None:
            allowed = np.asarray(allowed, dtype=np.int64)
            if len(allowed) == 0:
                return np.zeros((len(queries), 0), dtype=np.float32), np.zeros((len(queries), 0), dtype=np.int64)
            n = min(n, len(allowed))
            if self.kind != "flat" and len(allowed) <= FLAT_MAX:
                return self._exact_subset(queries, n, allowed)
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(allowed))
            if self.kind == "hnsw":
                params = faiss.SearchParametersHNSW(sel=params.sel, efSearch=max(HNSW_EF_SEARCH, n))
        elif self.kind == "hnsw" and n > HNSW_EF_SEARCH:
            params = faiss.SearchParametersHNSW(efSearch=n)  # HNSW returns at most efSearch hits
        n = min(n, len(self.vectors))
        with intra_op_threads(1):  # one query: threads cost more than they save
            return self.index.search(queries, n, params=params)

    def _exact_subset(self, queries: np.ndarray, n: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A filter that leaves few documents: scan just those (exact, and cheaper than a
        graph walk that skips most of the nodes it visits)."""
        sims = cosines(self.vectors[allowed], queries).T
        scores = np.full((len(queries), n), -np.inf, dtype=np.float32)
        idx = np.full((len(queries), n), -1, dtype=np.int64)
        for row in range(len(queries)):
            docs, s = _topn(sims[row], allowed, n)
            scores[row, :len(s)], idx[row, :len(docs)] = s, docs
        return scores, idx

    def search(self, query: np.ndarray, n: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``n`` (doc indices, cosine scores); ``allowed`` restricts to those doc indices."""
        if self.index is None or n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores, idx = self._search(query.reshape(1, -1), n, allowed)
        keep = idx[0] >= 0
        return idx[0][keep], scores[0][keep]

    def search_with_parts(self, query: np.ndarray, parts: np.ndarray, n: int, allowed: np.ndarray | None = None,
                          pool: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Top ``n`` by cos(query) + max(cos(query), cos(part) for each part).

        Candidates: with ``pool`` 0, the union of each vector's top ``n`` (one batched faiss
        call; costs about one catalog scan per vector); with ``pool`` > 0, the whole query's
        top ``pool`` only (one scan; the parts are scored on those rows). Candidates' scores
        are exact either way.
        """
        if self.index is None or n <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = np.vstack([query.reshape(1, -1), parts.reshape(len(parts), -1)]).astype(np.float32)
        _, idx = self._search(q[:1] if pool else q, max(pool, n), allowed)
        docs = np.unique(idx[idx >= 0])
        if not len(docs):
            return docs.astype(np.int64), np.zeros(0, dtype=np.float32)
        sims = cosines(self.vectors[docs], q)
        combined = sims[:, 0] + sims.max(axis=1)
        top = np.lexsort((docs, -combined))[:n]
        return docs[top].astype(np.int64), combined[top].astype(np.float32)

    def score(self, query: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """Cosine of the query with specific documents (for explanations)."""
        return self.vectors[docs] @ query.reshape(-1)

    def write(self, path: Path) -> None:
        import faiss

        if self.index is not None:
            faiss.write_index(self.index, str(path))

    @classmethod
    def read(cls, path: Path, n_expected: int) -> "DenseIndex":
        import faiss

        try:
            index = faiss.read_index(str(path))
        except Exception as exc:
            raise RouterError(f"{path}: dense index unreadable ({exc})") from exc
        if index.ntotal != n_expected:
            raise RouterError(f"{path}: dense index holds {index.ntotal} vectors, expected {n_expected}")
        obj = cls.__new__(cls)
        obj.kind = "hnsw" if isinstance(index, faiss.IndexHNSW) else "flat"
        if obj.kind == "hnsw":
            index.hnsw.efSearch = HNSW_EF_SEARCH
        vecs = index.reconstruct_n(0, index.ntotal)
        obj.vectors, obj.index = np.ascontiguousarray(vecs, dtype=np.float32), index
        return obj
