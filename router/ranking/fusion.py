"""Fusing the BM25 and dense rankings: reciprocal rank fusion and weighted-score fusion.

Both formulas are the ones ranx implements (``ranx.fuse(..., method="rrf")`` and
``method="wsum", norm="min-max"``), written here on numpy because ranx is too slow for
the per-request path: measured in this venv, ``import ranx`` takes ~2 s and its first
``fuse`` call JIT-compiles numba code for ~35 s, then ~2 ms per fusion of two 100-doc
runs (the whole hybrid budget is 30 ms). benchmarks/retrieval/targets.py checks that these
functions give ranx's fused ranking on real queries, and uses ranx for the metrics.
"""
from __future__ import annotations

import numpy as np

from ..index.scores import Ranking, min_max

__all__ = ["Ranking", "fuse", "interleave", "min_max", "rrf", "wsum"]


def _combine(parts: list[tuple[np.ndarray, np.ndarray]]) -> Ranking:
    """Sum per-document contributions, then sort (score desc, doc index asc for ties)."""
    parts = [(d, s) for d, s in parts if len(d)]
    if not parts:
        return Ranking.empty()
    docs = np.concatenate([d for d, _ in parts]).astype(np.int64)
    vals = np.concatenate([s for _, s in parts]).astype(np.float64)
    uniq, inv = np.unique(docs, return_inverse=True)
    total = np.bincount(inv, weights=vals, minlength=len(uniq))  # float64 sums; np.add.at was ~3x slower
    order = np.lexsort((uniq, -total))
    return Ranking(uniq[order], total[order])


def wsum(rankings: list[Ranking], weights: list[float]) -> Ranking:
    """Weighted sum of min-max normalized scores; a document absent from a run adds 0."""
    return _combine([(r.docs, w * min_max(r.scores)) for r, w in zip(rankings, weights)])


def rrf(rankings: list[Ranking], k: float = 60.0, weights: list[float] | None = None) -> Ranking:
    """Reciprocal rank fusion: sum of w / (k + rank), ranks starting at 1."""
    weights = weights or [1.0] * len(rankings)
    return _combine([(r.docs, w / (k + np.arange(1, len(r) + 1, dtype=np.float64)))
                     for r, w in zip(rankings, weights)])


def fuse(rankings: list[Ranking], method: str, weights: list[float], rrf_k: float = 60.0) -> Ranking:
    if method == "rrf":
        return rrf(rankings, rrf_k, weights)
    if method == "wsum":
        return wsum(rankings, weights)
    raise ValueError(f"unknown fusion method {method!r} (rrf or wsum)")


def interleave(rankings: list[Ranking]) -> Ranking:
    """Merge sub-query rankings round-robin (1st of each, then 2nd of each, ...), dropping
    repeats; the score is the best score a document got in any sub-query."""
    seen: dict[int, float] = {}
    order: list[int] = []
    depth = max((len(r) for r in rankings), default=0)
    for i in range(depth):
        for r in rankings:
            if i < len(r):
                d, s = int(r.docs[i]), float(r.scores[i])
                if d not in seen:
                    order.append(d)
                    seen[d] = s
                else:
                    seen[d] = max(seen[d], s)
    return Ranking(np.array(order, dtype=np.int64), np.array([seen[d] for d in order], dtype=np.float64))
