"""In-memory routers for the tool lists requests bring, and embeddings built in the background.

A request whose tools are not all catalog tools is ranked by a router over exactly its list
(`RouterCache`, keyed by the list's content hash). Hybrid ranking needs a vector per tool, and a
new list's tools are embedded first: at 10,000 tools that made the first request wait ~59 s
(issue 42). So a list with more than ``inline_max`` tools not embedded yet is answered at once
from BM25, its embeddings are computed by one background thread, and the hybrid router replaces
the BM25 one when they are done; a request ranked while they are being built says so
(``x-toolsift-route: ...; dense=building``). Small lists, and big ones whose tools are already
embedded (the same tools in another order, a list that grew by a few), are built in the request
as before.

Bounded: one background thread; at most ``max_pending`` lists waiting for it or being embedded
(a further one stays on BM25, ``dense=waiting``, and is queued by a later request); each list is
embedded once, however many concurrent requests bring it.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable, Sequence

import numpy as np

from .errors import RequestError
from .tool_cache import RouterCache, VectorCache

log = logging.getLogger("toolsift.proxy")

INLINE_MAX = 512   # new tools embedded in the request itself: ~3 s on 2 idle cores (10,000 took 59 s)
MAX_PENDING = 2    # tool lists waiting for, or in, the background embedding
CHUNK = 256        # passages per encoder call in the background: progress, and vectors cached as they come
BM25_SUFFIX = "#bm25"  # the RouterCache key of a list's BM25 router while its embeddings are built

Built = tuple[Any, dict[str, int]]  # (router, record id -> position in the request's list)


class BackgroundEmbedding:
    """One daemon worker thread; at most ``max_pending`` jobs, one per key. A daemon, because a
    process that is stopping (Ctrl-C on the proxy, the end of a script using ``wrap()``) must not wait
    minutes for an embedding nobody will use."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self.max_pending = max(1, max_pending)
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}  # key -> tools embedded so far
        self._jobs: queue.SimpleQueue[tuple[str, Callable[[Callable[[int], None]], None]]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self.done = self.failed = self.refused = 0

    def submit(self, key: str, job: Callable[[Callable[[int], None]], None]) -> bool:
        """Queue ``job(progress)`` for ``key`` unless it is queued or running already; False when
        ``max_pending`` jobs are."""
        with self._lock:
            if key in self._pending:
                return True
            if len(self._pending) >= self.max_pending:
                self.refused += 1
                return False
            self._pending[key] = 0
            self._jobs.put((key, job))
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="toolsift-embed", daemon=True)
                self._worker.start()
        return True

    def _work(self) -> None:
        while True:
            key, job = self._jobs.get()

            def progress(n: int, key: str = key) -> None:
                with self._lock:
                    self._pending[key] = self._pending.get(key, 0) + n

            try:
                job(progress)
                self.done += 1
            except Exception as exc:  # noqa: BLE001 - the list stays on BM25; a later request queues it again
                self.failed += 1
                log.warning("background embedding of tool list %s failed: %s", key[:12], exc)
            finally:
                with self._lock:
                    self._pending.pop(key, None)

    def building(self, key: str) -> bool:
        with self._lock:
            return key in self._pending

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"pending": len(self._pending), "done": self.done, "failed": self.failed,
                    "refused": self.refused}


class ListRouters:
    """The routers of request tool lists: built once per distinct list, hybrid when the
    embeddings are there, BM25 while they are built in the background (see the module doc)."""

    def __init__(self, routers: RouterCache, vectors: VectorCache, embedder: Callable[[str | None], Any], *,
                 inline_max: int = INLINE_MAX, max_pending: int = MAX_PENDING) -> None:
        self.routers, self.vectors, self._embedder = routers, vectors, embedder
        self.inline_max = inline_max
        self.background = BackgroundEmbedding(max_pending)

    def get(self, key: str, tools: Sequence[dict], *, model: str | None, config: Any,
            dense: bool) -> tuple[Built, str | None]:
        """The router for ``tools`` and, when it ranks by BM25 only because the embeddings are not
        there yet, why (``building`` or ``waiting``; None otherwise)."""
        if not dense:
            return self.routers.get_or_build(key, lambda: self._lexical(tools, model, config)), None
        ready = self.routers.get(key)
        if ready is not None:
            return ready, None
        if len(tools) <= self.inline_max:  # embedding it all costs about what one request may take
            return self.routers.get_or_build(key, lambda: self._hybrid(self._lexical(tools, model, config),
                                                                       model)), None
        lexical = self.routers.get_or_build(key + BM25_SUFFIX, lambda: self._lexical(tools, model, config))
        ready = self.routers.get(key)  # finished while the BM25 router was looked up
        if ready is not None:
            return ready, None
        # its tools are embedded already, or nearly (the same tools in another order, a list grown by a
        # few); not while the background is embedding this very list, which would embed the rest twice
        if not self.background.building(key) and self._missing(lexical[0]) <= self.inline_max:
            built = self.routers.get_or_build(key, lambda: self._hybrid(lexical, model))
            self.routers.discard(key + BM25_SUFFIX)
            return built, None

        def job(progress: Callable[[int], None]) -> None:
            if key in self.routers:
                return
            built = self._hybrid(lexical, model, progress)
            self.routers.put(key, built)
            self.routers.discard(key + BM25_SUFFIX)
            log.info("tool list %s: %d tools embedded, hybrid ranking from now on", key[:12],
                     len(lexical[0].records))

        return lexical, "building" if self.background.submit(key, job) else "waiting"

    def _lexical(self, tools: Sequence[dict], model: str | None, config: Any) -> Built:
        from apidb.errors import LoadError
        from apidb.loaders.openai import records_from_openai_tools

        from router.ranking.engine import Router

        try:
            records = records_from_openai_tools(list(tools), namespace="request")
        except LoadError as exc:
            raise RequestError(str(exc)) from exc
        index = {r.id: i for i, r in enumerate(records)}
        return Router(records, model=model, config=config, dense_enabled=False), index

    def _missing(self, router: Any) -> int:
        from router import text as rtext

        return self.vectors.missing([rtext.embedding_key(r) for r in router.records])

    def _hybrid(self, lexical: Built, model: str | None, progress: Callable[[int], None] | None = None) -> Built:
        """The BM25 router's records and index with a dense index over their vectors (from the
        `VectorCache`, the rest encoded ``CHUNK`` at a time)."""
        from router import text as rtext
        from router.index.vector_index import DenseIndex
        from router.ranking.engine import Router

        base, index = lexical
        records = base.records
        embedder = self._embedder(model)
        keys = [rtext.embedding_key(r) for r in records]
        parts = []
        for start in range(0, len(records), CHUNK):
            span = range(start, min(start + CHUNK, len(records)))
            parts.append(self.vectors.vectors(embedder, [keys[i] for i in span],
                                              lambda j, s=start: rtext.record_passage(records[s + j])))
            if progress is not None:
                progress(len(span))
        vecs = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        return Router(records, model=base.model_id, config=base.config, lexical=base.lexical,
                      dense=DenseIndex(vecs)), index

    def stats(self) -> dict[str, int]:
        return self.background.stats()
