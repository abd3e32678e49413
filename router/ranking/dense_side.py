"""The router's dense side: the query encoder, loaded on first use; the dense index, built on first
use from cached vectors (the model encodes only what no cache holds); the query's and its
sentences' vectors. Mixed into `Router` (router.ranking.engine), whose records, model, encoder
and cache folders it reads; split from the engine to keep modules under ~400 lines.
"""
from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from .. import text as rtext
from ..encoders.dense import Embedder, embed_with_cache, encode_with_spans
from ..index.vector_index import DenseIndex
from ..index.vector_store import vector_cache

_DENSE_BUILD = threading.RLock()


class DenseSide:
    """`Router`'s encoder and dense index, each made on first use (see the module doc)."""

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.model_id, self.encoder)
        return self._embedder

    def dense_index(self, *, on_start: Callable[[int], None] | None = None,
                    on_batch: Callable[[int], None] | None = None) -> DenseIndex | None:
        """The dense index, built from cached/new embeddings on first use (None if disabled).
        ``on_start(n_to_encode)`` and ``on_batch(n)`` report the encoding's progress."""
        if self._dense is None and self._dense_enabled:
            with _DENSE_BUILD:  # concurrent first requests build it once
                if self._dense is None:
                    self._dense = self._build_dense(on_start, on_batch)
        return self._dense

    def _build_dense(self, on_start: Callable[[int], None] | None = None,
                     on_batch: Callable[[int], None] | None = None) -> DenseIndex:
        # the index's cache, the user-level one, the shipped vectors; the model only for the rest
        cache = vector_cache(self.model_id, self.encoder, index_cache=self._index_cache, user_dir=self._cache_dir)
        keys = [rtext.embedding_key(r) for r in self.records]
        if on_start is not None:
            on_start(sum(v is None for v in cache.get_many(keys)))
        vecs, _ = embed_with_cache(self.embedder, cache, keys, lambda i: rtext.record_passage(self.records[i]),
                                   on_batch=on_batch)
        return DenseIndex(vecs)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors. Benchmarks replace this with a cached version."""
        return self.embedder.encode_queries(texts)

    def encode_query_sentences(self, query: str, spans: list[tuple[int, int]], how: str) -> np.ndarray:
        """Rows: the query's vector, then one per sentence span (see RouterConfig.sentence_vectors)."""
        if how == "separate":
            return self.encode_queries([query] + [query[s:e] for s, e in spans])
        return encode_with_spans(self.embedder.model, query, spans)

    def phrase_vector(self, phrase: str) -> np.ndarray:
        """The vector of a fixed phrase the router itself ranks by (an implied step's words:
        router.ranking.output_file, relative_time), encoded once per router: it is the same for every
        request."""
        cache = self.__dict__.setdefault("_phrase_vectors", {})
        if phrase not in cache:
            cache[phrase] = np.asarray(self.encode_queries([phrase]))[0]
        return cache[phrase]
