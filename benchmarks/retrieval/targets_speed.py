"""The router issue's targets, part two: route latency at 20,000 tools and the incremental
re-index of a 2,000-tool catalog (`toolsift bench router`, benchmarks/retrieval/targets_run.py).
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .targets import APIBENCH, STB, _cache_dir

SPEED_N = 20_000


def replicate(records: list, n: int) -> tuple[list, list[int]]:
    """``n`` records from the real ones: copy i of a record gets namespace ``<ns>_r<i>`` and a
    name suffix ``_r<i>``, so every id and name is distinct and vocabularies stay realistic.
    Returns (records, index of the original each one copies). Unlike the scale benchmark's
    replicas, descriptions are not varied."""
    from dataclasses import replace

    from apidb.record import make_id

    from .scale import replicate as rounds

    def copy(r, i: int):
        ns = f"{r.namespace}_r{i}"
        return replace(r, id=make_id(ns, r.id.split("/", 1)[1]), namespace=ns, name=f"{r.name}_r{i}")

    return rounds(records, n, copy)


def _pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.array(xs), p))


def speed(sets: dict, quick: bool) -> dict[str, Any]:
    """Route latency at 20k tools (hybrid, BM25-only), BM25 stage vs rank-bm25 on the same
    corpus and tokens, one query at a time, as a user of ``Router.select`` sees it. Hybrid route
    (wall and CPU per query) and the index-build encode (docs/s) once per encoder: the torch
    reference and the default, side by side in this run.

    The 20k catalog replicates the real corpora (StableToolBench union + the three APIBench
    hubs, 3,300 endpoints) with distinct names. Copies reuse their original's cached vector
    plus small noise (then renormalized) instead of 4+ minutes of encoding: exact faiss
    search costs the same whatever the vector values.
    """
    from rank_bm25 import BM25Okapi

    from router.index.vector_index import DenseIndex
    from router import Router
    from router.text import batch_tokens, tokenize

    from .scale import _latency, encode_throughput
    from router.encoders.dense import resolve_encoder
    from router import text as rtext

    real = list(sets[STB[0]].records) + [r for n in APIBENCH for r in sets[n].records]
    recs, src = replicate(real, SPEED_N)
    queries = [q.text for n in STB + APIBENCH for q in sets[n].queries]
    queries = [queries[i] for i in np.random.default_rng(1).permutation(len(queries))[: (50 if quick else 300)]]
    passages = sorted({rtext.record_passage(r) for r in real}, key=lambda t: hashlib.sha1(t.encode()).hexdigest())
    by_encoder: dict[str, Any] = {}
    # the torch reference first, the default last: its router stays for the figures below
    for encoder in ("torch", resolve_encoder()):
        print(f"[speed] {encoder}: embedding {len(real):,} real tools (cached after the first run), "
              f"then {len(queries)} routes at {len(recs):,} tools ...", file=sys.stderr, flush=True)
        base = Router(real, encoder=encoder)
        base.dense_index()
        rng = np.random.default_rng(0)
        vecs = base._dense.vectors[src] + rng.normal(0, 0.01, (len(recs), base._dense.vectors.shape[1])).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        t = time.perf_counter()
        router = Router(recs, dense=DenseIndex(vecs), encoder=encoder)
        build_s = time.perf_counter() - t
        router.select(queries[0], k=5)  # load the model, warm caches
        by_encoder[encoder] = {"route_hybrid": _latency(lambda q: router.select(q, k=5), queries),
                               "index_build_s": round(build_s, 2),  # BM25 + vector index over given vectors
                               "encode": encode_throughput(encoder, passages[:100 if quick else 600])}
    out: dict[str, Any] = {"catalog": len(recs), "real_records": len(real), "queries": len(queries),
                           "router_build_s": round(build_s, 2), "encoder": encoder, "by_encoder": by_encoder}
    for method in ("hybrid", "bm25", "dense"):
        lat = []
        for q in queries:
            t = time.perf_counter()
            router.select(q, k=5, method=method)
            lat.append((time.perf_counter() - t) * 1000)
        out[f"route_{method}_ms"] = {"p50": round(_pct(lat, 50), 2), "p95": round(_pct(lat, 95), 2)}
    enc = []
    for q in queries[:100]:
        t = time.perf_counter()
        router.encode_queries([q])
        enc.append((time.perf_counter() - t) * 1000)
    out["query_encode_ms"] = {"p50": round(_pct(enc, 50), 2), "p95": round(_pct(enc, 95), 2)}
    print("[speed] short vs agent-length requests ...", file=sys.stderr, flush=True)
    out["by_length"] = by_length(router, [q.text for n in STB + APIBENCH for q in sets[n].queries], quick)
    # BM25 stage alone, bm25s vs rank-bm25, same documents and query tokens
    docs = batch_tokens(recs, router.config.field_weights)
    t = time.perf_counter()
    okapi = BM25Okapi(docs)
    okapi_build = time.perf_counter() - t
    toks = [tokenize(q) for q in queries[:100]]
    b1, b2 = [], []
    for tk in toks:
        t = time.perf_counter()
        router.lexical.scores(tk)
        b1.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        okapi.get_scores(tk)
        b2.append((time.perf_counter() - t) * 1000)
    out["bm25_stage_ms"] = {"bm25s_p50": round(_pct(b1, 50), 3), "rank_bm25_p50": round(_pct(b2, 50), 2),
                            "speedup": round(_pct(b2, 50) / max(_pct(b1, 50), 1e-9), 1),
                            "rank_bm25_build_s": round(okapi_build, 2)}
    out["loadavg_1m"] = round(os.getloadavg()[0], 2)
    return out


SHORT_WORDS = 15          # a question as people type it (most APIBench queries)
AGENT_WORDS = (40, 60)    # an agent's request: several sentences (StableToolBench's queries)


def by_length(router, texts: list[str], quick: bool) -> dict[str, Any]:
    """Hybrid and dense route latency (wall p50/p95, CPU of the process) for short and for
    agent-length requests separately, with their words per request: a mix dominated by short
    questions says nothing of what an agent's several-sentence request costs. ``hybrid_one_thread``:
    the same hybrid routes with the encoder's two-threaded session for long queries off (the
    baseline it is measured against, router.encoders.onnx_encoder). ``hybrid_parts_encoded``: the
    same hybrid routes with ``part_signal="hybrid"`` (each part of a multi-part request also encoded
    apart, router.ranking.part_tools): what that setting costs over the default."""
    from .scale import _latency

    encoder = router.embedder.model
    wide = getattr(encoder, "wide_queries", None)

    def one_thread(q: str):
        encoder.wide_queries = False
        try:
            return router.select(q, k=5, method="hybrid")
        finally:
            encoder.wide_queries = wide

    rng = np.random.default_rng(2)
    groups = {"short": [t for t in texts if len(t.split()) <= SHORT_WORDS],
              "agent": [t for t in texts if AGENT_WORDS[0] <= len(t.split()) <= AGENT_WORDS[1]]}
    out: dict[str, Any] = {}
    for name, qs in groups.items():
        qs = [qs[i] for i in rng.permutation(len(qs))[: (30 if quick else 200)]]
        if not qs:
            continue
        words = [len(q.split()) for q in qs]
        out[name] = {"requests": len(qs), "mean_words": round(float(np.mean(words)), 1),
                     "words_range": [min(words), max(words)],
                     **{m: {k: round(v, 2) for k, v in _latency(lambda q, m=m: router.select(q, k=5, method=m),
                                                                 qs).items()}
                        for m in ("hybrid", "dense")}, "stages": stages(router, qs)}
        if wide is not None:
            out[name]["hybrid_one_thread"] = {k: round(v, 2) for k, v in _latency(one_thread, qs).items()}
        encoded = router.configured(part_signal="hybrid")
        out[name]["hybrid_parts_encoded"] = {
            k: round(v, 2) for k, v in _latency(lambda q: encoded.select(q, k=5, method="hybrid"), qs).items()}
    return out


def stages(router, texts: list[str]) -> dict[str, float]:
    """Where a hybrid route's CPU goes: ms per request (the process's CPU, so the encoder's second
    thread counts) spent in the query encoder, BM25 scoring, the dense search, shaping (coverage,
    exact names, abstention, adaptive k), the selection of the tools, and the rest (spans, fusion,
    ranking), over ``texts`` routed once each after a warm-up. The stages are timed by wrapping this router's own methods for the run."""
    import time

    from router.ranking import engine

    spent: dict[str, float] = {}

    def timed(label: str, fn):
        def run(*args, **kwargs):
            c0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - c0
        return run

    patched = {"encode_query_sentences": "encoder", "encode_queries": "encoder", "_assemble": "selection"}
    for name, label in patched.items():
        setattr(router, name, timed(label, getattr(router, name)))
    router.lexical.scores = timed("bm25", router.lexical.scores)
    dense = router.dense_index()
    dense.search, dense.search_with_parts = timed("dense search", dense.search), \
        timed("dense search", dense.search_with_parts)
    shape = engine.shape
    engine.shape = timed("shaping", shape)
    try:
        router.select(texts[0], k=5)
        spent.clear()
        c0 = time.process_time()
        for t in texts:
            router.select(t, k=5)
        total = time.process_time() - c0
    finally:
        engine.shape = shape
        for name in [*patched, "scores"]:
            (router.lexical if name == "scores" else router).__dict__.pop(name, None)
        for name in ("search", "search_with_parts"):
            dense.__dict__.pop(name, None)
    out = {label: round(v / len(texts) * 1000, 3) for label, v in spent.items()}
    out["rest"] = round(total / len(texts) * 1000 - sum(out.values()), 3)
    out["total"] = round(total / len(texts) * 1000, 3)
    return out


def reindex(sets: dict) -> dict[str, Any]:
    """Incremental re-index of a 2k-tool catalog after one record changes (embedding cache
    seeded from the shared cache, as after an earlier full build)."""
    import shutil
    from dataclasses import replace

    from apidb import Catalog
    from router.encoders.dense import shared_cache
    from router import text as rtext
    from router.index.build import build_index, index_dir_for

    recs = list(sets[STB[0]].records)[:2000]
    base = Router_with_vectors(recs)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "catalog.db"
        with Catalog(db) as cat:
            cat.sync(recs)
        cache = index_dir_for(db) / "cache"
        cache.mkdir(parents=True)
        src = shared_cache(_cache_dir(), base.model_id, base.encoder)
        dst = shared_cache(cache, base.model_id, base.encoder)
        hashes = [rtext.embedding_key(r) for r in recs]
        dst.put_many(hashes, np.vstack(src.get_many(hashes)))
        dst.save()
        first = build_index(db)
        changed = replace(recs[7], description=recs[7].description + " (updated)")
        with Catalog(db) as cat:
            cat.sync([changed] + recs[:7] + recs[8:])
        t = time.perf_counter()
        rep = build_index(db)
        total = time.perf_counter() - t
        shutil.rmtree(index_dir_for(db), ignore_errors=True)
    return {"catalog": len(recs), "first_build_embedded": first.embedded, "reindex_embedded": rep.embedded,
            "reindex_s": round(total, 2)}


def Router_with_vectors(recs):
    from router import Router

    r = Router(recs)
    r.dense_index()  # make sure the shared cache holds these records' vectors
    return r


