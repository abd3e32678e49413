"""Encoders side by side: ONNX Runtime (fp32, int8) against the torch reference.

    toolsift bench encoders [--datasets a,b] [--max-passages 1000] [--out DIR] [--torch-cache]

Per benchmark catalog: per-vector cosine of each ONNX encoder's passage and query vectors to
torch's (min, mean, 1st percentile), and encode throughput (documents/s, the index-build path:
``Embedder.encode``). Over all queries: one-query encode latency of each encoder, measured
interleaved (torch, fp32, int8 for the same query in turn) so load changes hit all three alike.
Passages are each catalog's record passages (``router.text.record_passage``), a deterministic
sample of at most ``--max-passages`` (smallest sha1 of the embedding key).

Retrieval side by side (unless ``--no-retrieval``): every catalog's dense and hybrid rows of
``toolsift bench retrieval`` (same queries, same ranx metrics), with the torch encoder, ONNX
fp32 and the ONNX int8 default in turn, in this one process; the report gives each figure's
difference to torch (issue #15: every one within 0.005).
"""
from __future__ import annotations

import hashlib
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from .comparison import _loadavg, sample, versions

ENCODERS = ("onnx-fp32", "onnx-int8")
RETRIEVAL_ENCODERS = ("torch", "onnx-fp32", "onnx-int8")  # the reference first
RETRIEVAL_METHODS = ("dense", "hybrid_wsum")
RETRIEVAL_TOLERANCE = 0.005
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "encoders"


def _passages(records, limit: int) -> tuple[list[str], list[str]]:
    from router import text as rtext

    keyed = {rtext.embedding_key(r): r for r in records}
    keys = sorted(keyed, key=lambda k: hashlib.sha1(k.encode()).hexdigest())[:limit]
    return keys, [rtext.record_passage(keyed[k]) for k in keys]


def _torch_vectors(emb, keys: list[str], texts: list[str], use_cache: bool) -> np.ndarray:
    if not use_cache:
        return emb.encode(texts)
    from router.encoders.dense import embed_with_cache, shared_cache
    from router.encoders.dense import default_cache_dir

    return embed_with_cache(emb, shared_cache(default_cache_dir(), emb.model_id, "torch"), keys, texts)[0]


def _cos(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = np.sum(a * b, axis=1)
    return {"min": float(c.min()), "mean": float(c.mean()), "p1": float(np.percentile(c, 1)), "n": len(c)}


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)  # every thread of the process: the build's pool too
    return r.ru_utime + r.ru_stime


def retrieval_side_by_side(names: list[str], encoders: tuple[str, ...] = RETRIEVAL_ENCODERS,
                           max_queries: int | None = None) -> dict[str, Any]:
    """{dataset: {encoder: {method: {metric: value}}}} from benchmarks.retrieval.comparison's own evaluation
    (sample, metrics), each encoder over its own vectors; plus the largest difference to the first."""
    from ..data.datasets import load_dataset
    from .methods import METHODS
    from .comparison import _Builds, evaluate_dataset

    out: dict[str, Any] = {"encoders": list(encoders), "methods": list(RETRIEVAL_METHODS), "datasets": {}}
    worst = (0.0, "")
    for name in names:
        print(f"[encoders] retrieval {name} ...", file=sys.stderr, flush=True)
        ds = load_dataset(name)
        row = {}
        for enc in encoders:
            res = evaluate_dataset(ds, [METHODS[m] for m in RETRIEVAL_METHODS], max_queries, _Builds(True, enc))
            row[enc] = {m: res["methods"][m]["metrics"] for m in RETRIEVAL_METHODS}
            row["n_queries"] = res["n_queries"]
        for enc in encoders[1:]:
            for m in RETRIEVAL_METHODS:
                for metric, v in row[enc][m].items():
                    d = abs(v - row[encoders[0]][m][metric])
                    if d > worst[0]:
                        worst = (d, f"{name} {m} {metric} ({enc})")
        out["datasets"][name] = row
    out["max_abs_difference"], out["max_abs_difference_at"] = worst
    out["tolerance"] = RETRIEVAL_TOLERANCE
    return out


def run(out_dir: str | Path = DEFAULT_OUT, datasets: list[str] | None = None, max_passages: int = 1000,
        max_queries: int = 60, torch_cache: bool = False, retrieval: bool = True) -> dict[str, Any]:
    from router.encoders.dense import Embedder

    from ..data.datasets import DATASETS, available, load_dataset

    started, load_start = time.time(), _loadavg()
    names = [n for n in (datasets or DATASETS) if available(n)]
    torch_emb = Embedder(encoder="torch")
    onnx = {e: Embedder(encoder=e) for e in ENCODERS}
    for emb in (torch_emb, *onnx.values()):
        emb.encode(["warm-up text", "a second warm-up text"])
    results: dict[str, Any] = {"command": "toolsift bench encoders " + " ".join(sys.argv[sys.argv.index("encoders") + 1:])
                               if "encoders" in sys.argv else "toolsift bench encoders",
                               "versions": versions(), "max_passages": max_passages, "torch_cache": torch_cache,
                               "datasets": {}, "query_latency_ms": {}}
    all_queries: list[str] = []
    for name in names:
        print(f"[encoders] {name} ...", file=sys.stderr, flush=True)
        ds = load_dataset(name)
        keys, texts = _passages(ds.records, max_passages)
        queries = [q.text for q in sample(ds.queries, max_queries)]
        all_queries += queries
        row: dict[str, Any] = {"passages": len(texts), "queries": len(queries)}
        ref = _torch_vectors(torch_emb, keys, texts, torch_cache)
        qref = torch_emb.encode_queries(queries)
        for enc, emb in onnx.items():
            t0, c0 = time.perf_counter(), _cpu_seconds()
            vecs = emb.encode(texts)
            secs, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
            row[enc] = {"passages": _cos(vecs, ref), "queries": _cos(emb.encode_queries(queries), qref),
                        "docs_per_s": len(texts) / secs, "docs_per_cpu_s": len(texts) / cpu, "load": _loadavg()[0]}
        results["datasets"][name] = row
    lat: dict[str, list[float]] = {"torch": [], **{e: [] for e in ENCODERS}}
    encs = {"torch": torch_emb, **onnx}
    for q in all_queries:
        for enc, emb in encs.items():
            t0 = time.perf_counter()
            emb.encode_query(q)
            lat[enc].append((time.perf_counter() - t0) * 1000)
    results["query_latency_ms"] = {e: {"p50": float(np.median(v)), "p95": float(np.percentile(v, 95)), "n": len(v)}
                                   for e, v in lat.items()}
    if retrieval:
        results["retrieval"] = retrieval_side_by_side(names)
    results["wall_seconds"] = time.time() - started
    results["load_average"] = {"start": load_start, "end": _loadavg()}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(report(results), encoding="utf-8")
    return results


def report(results: dict[str, Any]) -> str:
    from ..report import load_line, md_table

    rows = []
    for name, row in results["datasets"].items():
        for enc in ENCODERS:
            r = row[enc]
            rows.append([name, enc, str(row["passages"]), f"{r['passages']['min']:.4f}", f"{r['passages']['mean']:.4f}",
                         f"{r['queries']['min']:.4f}", f"{r['queries']['mean']:.4f}", f"{r['docs_per_s']:.0f}",
                         f"{r['docs_per_cpu_s']:.0f}" if "docs_per_cpu_s" in r else "-", f"{r['load']:.1f}"])
    lat = [[e, f"{v['p50']:.2f}", f"{v['p95']:.2f}", str(v["n"])] for e, v in results["query_latency_ms"].items()]
    return "\n".join([
        "# Encoders: ONNX Runtime vs the torch reference", "",
        f"Command: `{results.get('command', 'toolsift bench encoders').strip()}`  ", load_line(results), "",
        "Cosine of each vector to the torch (sentence-transformers) vector of the same text; docs/s = "
        "`Embedder.encode` over the catalog's passages (the index-build path), with the 1-min load average "
        "right after." + (" Torch passage vectors read from the router's fp32 embedding cache where present."
                          if results["torch_cache"] else ""), "",
        md_table(["catalog", "encoder", "passages", "passage cos min", "mean", "query cos min", "mean", "docs/s",
                  "docs/CPU-s", "load"], rows), "",
        "One-query encode latency (ms), all catalogs' queries, encoders interleaved per query:", "",
        md_table(["encoder", "p50", "p95", "queries"], lat), "", *_retrieval_report(results.get("retrieval"))])


def _retrieval_report(side: dict[str, Any] | None) -> list[str]:
    from ..report import md_table

    if not side:
        return []
    ref, encs = side["encoders"][0], side["encoders"][1:]
    metrics = ("ndcg@5", "recall@5", "recall@10", "mrr")
    rows = []
    for name, row in side["datasets"].items():
        for m in side["methods"]:
            for enc in encs:
                cells = [f"{row[ref][m][k]:.3f} / {row[enc][m][k]:.3f} ({row[enc][m][k] - row[ref][m][k]:+.3f})"
                         for k in metrics]
                rows.append([f"{name} ({row['n_queries']} q)", m, enc, *cells])
    worst = {enc: max(abs(row[enc][m][k] - row[ref][m][k]) for row in side["datasets"].values()
                      for m in side["methods"] for k in row[ref][m]) for enc in encs}
    return ["## Retrieval, torch vs ONNX, side by side", "",
            f"Every query of each catalog, `toolsift bench retrieval`'s dense and hybrid rows, ranx metrics; each "
            f"cell {ref} / ONNX (difference). Largest difference to {ref} over all metrics ({', '.join(side['methods'])}; "
            "recall@1/5/10, nDCG@5/10, MRR) and catalogs: "
            + "; ".join(f"{enc} **{w:.4f}** (" + ("within" if w <= side["tolerance"] else "**outside**")
                        + f" the {side['tolerance']} tolerance)" for enc, w in worst.items()) + ".", "",
            md_table(["catalog", "method", "encoder", *metrics], rows), ""]
