"""Two parts of `toolsift bench routing` (benchmarks/routing/features.py): the per-query cost of the new
routing steps at 20,000 tools, and learning from use (a usage log replayed, then `tune`)."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from router.encoders.model import BASE_MODEL

from ..retrieval import targets as rt

SPEED_QUERIES = 200


def overhead(sets: dict, model: str | None, quick: bool) -> dict[str, Any]:
    """CPU time per `select` at 20k tools, today's router (fixed k=5, no coverage, no exact names,
    no abstention) vs the new defaults (adaptive k, coverage, exact names, abstention), measured
    interleaved on the same queries after one untimed pass (query vectors cached for both, so the
    figures are the steps' own cost; the clause vectors come from the same encoder pass)."""
    from router import Router
    from router.index.vector_index import DenseIndex

    from ..retrieval.targets_speed import SPEED_N, replicate

    from .common import NEW, TODAY

    real = list(sets["stabletoolbench_G2_instruction"].records) + [r for n in rt.APIBENCH if n in sets
                                                                    for r in sets[n].records]
    recs, src = replicate(real, 2_000 if quick else SPEED_N)
    base = Router(real, model=model or BASE_MODEL)
    base.dense_index()
    rng = np.random.default_rng(0)
    vecs = base._dense.vectors[src] + rng.normal(0, 0.01, (len(recs), base._dense.vectors.shape[1])).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    new = Router(recs, model=model or BASE_MODEL, dense=DenseIndex(vecs)).configured(**NEW)
    new.encode_queries = rt.QueryVectors(new)
    new.encode_query_sentences = new.encode_queries.sentences
    today = new.configured(**TODAY)
    queries = [q.text for n in (*rt.STB, "metatool_multi", *rt.APIBENCH) if n in sets for q in sets[n].queries]
    queries = [queries[i] for i in np.random.default_rng(1).permutation(len(queries))[:(30 if quick else SPEED_QUERIES)]]
    # "new_k5": the new steps at the same fixed k; "new": the new defaults (adaptive k sends more tools,
    # and each one sent is explained: matched terms, dense score)
    runs = {"today": lambda q: today.select(q, k=5, adaptive=False), "new_k5": lambda q: new.select(q, k=5),
            "new": lambda q: new.select(q)}
    for q in queries:  # untimed: vectors, name table, token counts
        for fn in runs.values():
            fn(q)
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for q in queries:
        for label, fn in runs.items():
            t = time.process_time()
            fn(q)
            cpu[label].append((time.process_time() - t) * 1000)
    out = {"catalog": len(recs), "queries": len(queries), "load": [round(x, 2) for x in os.getloadavg()]}
    for label, xs in cpu.items():
        out[label] = {"mean_ms": round(float(np.mean(xs)), 3), "p50_ms": round(float(np.median(xs)), 3)}
    for label in ("new_k5", "new"):
        out[f"{label}_added_mean_ms"] = round(out[label]["mean_ms"] - out["today"]["mean_ms"], 3)
        out[f"{label}_added_p50_ms"] = round(out[label]["p50_ms"] - out["today"]["p50_ms"], 3)
    out["steps"] = _steps(new, today, queries)
    return out


def _steps(new, today, queries: list[str], repeat: int = 5) -> dict[str, Any]:
    """CPU time of the added steps alone (clause cutting, per-part BM25, coverage, exact names,
    abstention evidence, the adaptive cut: router.ranking.shaping), on the inputs one request gives them,
    beside today's whole `select` timed the same way, interleaved: a difference of two noisy whole
    timings under load hides a millisecond, the steps' own time does not."""
    from router.ranking.adaptive_k import AdaptiveK
    from router.ranking.coverage import clause_spans
    from router.ranking.shaping import part_signals, shape

    steps, whole = [], []
    for q in queries:
        ranking, bm25_all, qvec, parts = new._rank(q, "hybrid", None, new.config.depth, False)
        vectors = None if parts is None else parts.vectors
        t = time.process_time()
        for _ in range(repeat):
            spans = clause_spans(q)
            p = part_signals(new, q, spans, "hybrid", vectors) if spans else None
            shape(new, q, ranking, p, None, "hybrid", 10, AdaptiveK(new.config.adaptive_ratio), qvec, bm25_all,
                  new.config.abstain_below)
        steps.append((time.process_time() - t) * 1000 / repeat)
        t = time.process_time()
        for _ in range(repeat):
            today.select(q, k=5, adaptive=False)
        whole.append((time.process_time() - t) * 1000 / repeat)
    return {"steps_mean_ms": round(float(np.mean(steps)), 3), "steps_p95_ms": round(float(np.percentile(steps, 95)), 3),
            "today_select_mean_ms": round(float(np.mean(whole)), 3),
            "share_of_today": round(float(np.mean(steps) / np.mean(whole)), 4), "repeat": repeat,
            "load": [round(x, 2) for x in os.getloadavg()]}


def log_replay(sets: dict, model: str | None, quick: bool) -> dict[str, Any]:
    """The dev half of the StableToolBench queries written as a usage log by the proxy's writer
    (router.training.usage_log.UsageLog, contents allowed: each gold tool a valid call), then
    `toolsift tune --from-log` in its own process (as a user runs it; training in this process,
    beside every benchmark router, once took 8 GB), scored on the test half before and after."""
    import subprocess
    import sys

    from apidb import Catalog
    from router import Router
    from router.encoders.dense import default_cache_dir
    from router.training.tune import TUNE_FILE, TuneConfig
    from router.training.usage_log import UsageLog, examples

    from .common import NEW, _metrics

    stb = [n for n in rt.STB if n in sets]
    records = sets[stb[0]].records
    by_id = {r.id: r for r in records}
    dev = [(n, q) for n in stb for q in sets[n].queries if rt._half(q.id, n) == "dev"]
    test = {n: [q for q in sets[n].queries if rt._half(q.id, n) == "test"] for n in stb}
    with tempfile.TemporaryDirectory() as tmp:
        log = UsageLog(Path(tmp) / "usage.jsonl", content=True)
        for _, q in dev:
            offered = sorted(by_id[g].openai_name() for g in q.relevant)
            for g in sorted(q.relevant):
                log.record(source="proxy", query=q.text, offered=offered, called=by_id[g].openai_name(),
                           verdict="correct", record_id=g, route="routed")
        found = examples([log.path], records)
        size = log.path.stat().st_size
        kept = Path(default_cache_dir()) / "usage-replay.jsonl"
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_bytes(log.path.read_bytes())
    pairs = [(text, rid) for _, text, rel in found.queries for rid in sorted(rel)]
    out: dict[str, Any] = {"log_lines": found.lines, "log_bytes": size, "queries": len(found.queries),
                           "pairs": len(pairs), "scored": sum(len(v) for v in test.values()), "summary": found.summary()}
    if quick:
        out["note"] = "quick: the log is written and read; no tuning"
        return out
    cfg = TuneConfig()
    key = hashlib.sha256(json.dumps([pairs, vars(cfg), model], sort_keys=True).encode()).hexdigest()[:12]
    folder = default_cache_dir() / "tuned" / f"usage-{key}"
    if not (folder / TUNE_FILE).is_file():
        t = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "stb.db"
            with Catalog(db) as cat:
                cat.sync(records)
            cmd = [str(Path(sys.executable).parent / "toolsift"), "tune", "--db", str(db), "--from-log", str(kept),
                   "--out", str(folder), "--holdout", "0", "--json", "--model", model or "all-MiniLM-L6-v2"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                from ..errors import BenchmarkError

                raise BenchmarkError(f"toolsift tune --from-log failed: {done.stderr.strip()[-500:]}")
        out["tune_seconds"] = round(time.perf_counter() - t, 1)
        out["tune_command"] = "toolsift tune --db <StableToolBench catalog> --from-log <log> --out <cache>/tuned/" \
                              f"{folder.name} --holdout 0"
    else:
        out["tune_seconds"] = "reused"
    out["model"] = f"<cache>/tuned/{folder.name}"
    for label, m in (("before", model), ("after", str(folder))):
        r = Router(records, model=m or BASE_MODEL).configured(**NEW)
        r.encode_queries = rt.QueryVectors(r)
        r.encode_query_sentences = r.encode_queries.sentences
        per = {}
        for n, qs in test.items():
            per[n] = _metrics(qs, {q.id: [s.record.id for s in r.select(q.text, k=10, adaptive=False)] for q in qs})
        out[label] = {"per_file": per, **{m_: float(np.mean([v[m_] for v in per.values()]))
                                          for m_ in ("ndcg@5", "all_gold@10", "recall@5")}}
        print(f"  {label}: nDCG@5 {out[label]['ndcg@5']:.3f}, all-gold@10 {out[label]['all_gold@10']:.3f}", flush=True)
    return out
