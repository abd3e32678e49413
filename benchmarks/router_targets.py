"""The router issue's targets: quality on StableToolBench + APIBench, speed at 20k tools,
incremental re-index; plus the grid that chose the router's field and fusion weights.

    python -m benchmarks.router_targets [--quick] [--out DIR] [--no-grid]

Writes DIR/results.json and DIR/report.md (default benchmarks/results/router_targets).
Metrics come from ranx (Qrels/Run/evaluate). Embeddings are cached by (model, content
hash) under $TOOLSIFT_CACHE or ~/.cache/toolsift, query vectors under its queries/ folder.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

STB = [f"stabletoolbench_{g}" for g in ("G1_instruction", "G1_category", "G1_tool", "G2_instruction")]
APIBENCH = [f"apibench_{h}" for h in ("torchhub", "tensorflowhub", "huggingface")]
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "router_targets"
QUICK_QUERIES = 60


def _cache_dir() -> Path:
    from router.router import default_cache_dir

    return default_cache_dir()


class QueryVectors:
    """Query embeddings cached by (model, sha256 of the text), so grids never re-encode."""

    def __init__(self, router) -> None:
        from router.dense import shared_cache

        self.router = router
        self.cache = shared_cache(_cache_dir() / "queries", router.model_id)

    def __call__(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found = self.cache.get_many(keys)
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            vecs = self.router.embedder.encode([texts[i] for i in missing], batch_size=64)
            self.cache.put_many([keys[i] for i in missing], vecs)
            for i, v in zip(missing, vecs):
                found[i] = v
        return np.vstack(found).astype(np.float32)

    def warm(self, texts: list[str]) -> None:
        self(texts)
        self.cache.save()


def _sample(queries: list, n: int | None) -> list:
    if n is None or len(queries) <= n:
        return list(queries)
    return sorted(queries, key=lambda q: hashlib.sha1(q.id.encode()).hexdigest())[:n]


def load_sets(quick: bool) -> dict[str, Any]:
    """Dataset name → Dataset (queries sampled deterministically with --quick)."""
    from benchmarks.datasets import load_dataset

    out = {}
    for name in STB + APIBENCH:
        d = load_dataset(name)
        d.queries = _sample(d.queries, QUICK_QUERIES if quick else None)
        out[name] = d
    return out


def build_routers(sets: dict[str, Any], weights: dict[str, int] | None = None, base: dict | None = None) -> dict:
    """One router per corpus (the four StableToolBench files share one corpus). With
    ``base`` the dense index is reused, so a field-weight grid never re-embeds."""
    from router.router import Router, RouterConfig

    cfg = RouterConfig(field_weights=weights) if weights else RouterConfig()
    routers: dict[str, Any] = {}
    for name, d in sets.items():
        corpus = "stabletoolbench" if name.startswith("stabletoolbench") else name
        if corpus in routers:
            continue
        dense = base[corpus]._dense if base else None
        r = Router(d.records, config=cfg, dense=dense)
        r.encode_queries = QueryVectors(r)
        routers[corpus] = r
    return routers


def router_for(routers: dict, name: str):
    return routers["stabletoolbench" if name.startswith("stabletoolbench") else name]


def warm(quick: bool = False) -> None:
    """Embed every corpus and query once (minutes on 2 cores; cached afterwards)."""
    sets = load_sets(quick)
    routers = build_routers(sets)
    for name, d in sets.items():
        r = router_for(routers, name)
        t = time.perf_counter()
        r.dense_index()
        r.encode_queries.warm([q.text for q in d.queries])
        print(f"{name}: {len(d.records)} records, {len(d.queries)} queries, {time.perf_counter() - t:.1f}s",
              flush=True)


if __name__ == "__main__" and "--warm" in sys.argv:
    warm("--quick" in sys.argv)
