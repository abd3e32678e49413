"""Bounded caches for the tool lists requests bring (issue 19: 2,000 distinct tool lists once
grew the proxy by 193 MB and its median latency ×8).

Two caches, both LRU, both bounded by entries *and* size, both counting hits and misses for
``/metrics``:

- `RouterCache`: one in-memory router per distinct tool list (keyed by the list's content hash),
  at most ``max_entries`` routers holding at most ``max_tools`` tools between them;
- `VectorCache`: one embedding per tool passage (keyed by `router.text.embedding_key`), at most
  ``max_bytes`` of vectors. It replaces the persistent embedding cache for request tool lists:
  that one keeps every vector it ever saw in memory and rewrites its whole file after each new
  tool list, which is what made latency grow with the number of lists seen.

Tool lists are caller data, so nothing of theirs is written to disk.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

import numpy as np


class LRU:
    """A thread-safe LRU bounded by entry count and by a total of per-entry weights."""

    def __init__(self, max_entries: int, max_weight: float, weigh: Callable[[Any], float]) -> None:
        self.max_entries, self.max_weight, self._weigh = max(1, max_entries), max_weight, weigh
        self._data: OrderedDict[Hashable, tuple[Any, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.weight = 0.0
        self.hits = self.misses = self.evictions = 0

    def get(self, key: Hashable) -> Any:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                self.misses += 1
                return None
            self.hits += 1
            self._data.move_to_end(key)
            return hit[0]

    def peek(self, key: Hashable) -> Any:
        """The value or None, without counting a hit or a miss or refreshing its place."""
        with self._lock:
            hit = self._data.get(key)
            return None if hit is None else hit[0]

    def put(self, key: Hashable, value: Any) -> None:
        w = float(self._weigh(value))
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.weight -= old[1]
            if w > self.max_weight:  # larger than the whole cache: used once, never kept
                return
            self._data[key] = (value, w)
            self.weight += w
            while len(self._data) > self.max_entries or self.weight > self.max_weight:
                _, (_, ow) = self._data.popitem(last=False)
                self.weight -= ow
                self.evictions += 1

    def discard(self, key: Hashable) -> None:
        """Drop ``key`` if it is there (not an eviction)."""
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.weight -= old[1]

    def __len__(self) -> int:
        return len(self._data)

    def stats(self) -> dict[str, float]:
        with self._lock:
            return {"entries": len(self._data), "weight": round(self.weight, 1), "hits": self.hits,
                    "misses": self.misses, "evictions": self.evictions}


class VectorCache:
    """Embeddings of tool passages, at most ``max_bytes`` of them (LRU)."""

    def __init__(self, max_bytes: int = 64 * 2**20) -> None:
        self._lru = LRU(max_entries=10**9, max_weight=max_bytes, weigh=lambda v: v.nbytes)

    def vectors(self, embedder: Any, keys: list[str], text_of: Callable[[int], str]) -> np.ndarray:
        """One row per key: cached rows, and one encoder call for the rest."""
        found = [self._lru.get(k) for k in keys]
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            new = embedder.encode([text_of(i) for i in missing])
            for i, v in zip(missing, new):
                found[i] = v
                self._lru.put(keys[i], np.array(v, dtype=np.float32))
        if not found:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.ascontiguousarray(np.vstack(found), dtype=np.float32)

    def missing(self, keys: list[str]) -> int:
        """How many of ``keys`` have no vector here (not counted as hits or misses)."""
        return sum(self._lru.peek(k) is None for k in keys)

    def stats(self) -> dict[str, float]:
        s = self._lru.stats()
        return {"entries": s["entries"], "bytes": int(s["weight"]), "hits": s["hits"], "misses": s["misses"],
                "evictions": s["evictions"]}


class RouterCache:
    """One router per distinct tool list, built once even when concurrent requests bring it."""

    def __init__(self, max_entries: int = 16, max_tools: int = 50_000) -> None:
        self._lru = LRU(max_entries, max_tools, weigh=lambda entry: len(entry[1]))
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}

    def get(self, key: str) -> tuple[Any, dict[str, int]] | None:
        return self._lru.get(key)

    def put(self, key: str, entry: tuple[Any, dict[str, int]]) -> None:
        self._lru.put(key, entry)

    def discard(self, key: str) -> None:
        self._lru.discard(key)

    def get_or_build(self, key: str, build: Callable[[], tuple[Any, dict[str, int]]]) -> tuple[Any, dict[str, int]]:
        entry = self._lru.get(key)
        if entry is not None:
            return entry
        with self._lock:
            lock = self._building.setdefault(key, threading.Lock())
        try:
            with lock:  # concurrent first requests with one tool list build it once
                entry = self._lru._data.get(key)
                if entry is not None:
                    return entry[0]
                entry = build()
                self._lru.put(key, entry)
                return entry
        finally:
            with self._lock:  # also when the build failed (a bad tool list): no lock is left behind
                self._building.pop(key, None)

    def __len__(self) -> int:
        return len(self._lru)

    def __contains__(self, key: str) -> bool:
        return self._lru.peek(key) is not None

    def stats(self) -> dict[str, float]:
        s = self._lru.stats()
        return {"entries": s["entries"], "tools": int(s["weight"]), "hits": s["hits"], "misses": s["misses"],
                "evictions": s["evictions"]}
