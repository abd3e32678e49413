"""Scale: route latency, build time and memory against catalog size.

    toolsift bench scale [--sizes 2000,20000,100000] [--out DIR] [--quick]

Catalogs are synthetic replicas of real ones (StableToolBench union, LiveMCPBench,
APIBench HF, MetaTool, RestBench TMDB + Spotify: 3,946 real tools). Replica ``i`` of a record:
namespace ``<ns>_r<i>``, name ``<name>_v<i>`` (so every name is distinct), the
description's sentences shuffled with a seed of (record id, i) (a one-sentence
description instead loses one word), parameters unchanged. Encoding 100k texts with
MiniLM takes ~25 min here, so replicas reuse the embedding of their base record (from
the router's embedding cache) plus a small deterministic Gaussian perturbation
(sigma 0.02 per dimension, renormalized). Queries are real benchmark queries.
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import resource
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from apidb.record import ApiRecord, make_id

from ..data.datasets import load_dataset
from .methods import RankBM25, one_torch_thread
from .comparison import _loadavg, sample, versions

# Real catalogs of real tools (Seal-Tools' LLM-generated tools are left out of the base)
BASE_DATASETS = ("stabletoolbench_G1_instruction", "livemcpbench", "apibench_huggingface", "metatool_single",
                 "restbench_tmdb", "restbench_spotify")
QUICK_BASE = ("livemcpbench", "metatool_single")
SIZES = (2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
QUICK_SIZES = (1_000, 3_000)
METHODS = ("rank_bm25", "bm25", "dense", "hybrid")
N_QUERIES, QUICK_QUERIES = 60, 10
BUILD_DOCS, QUICK_BUILD_DOCS = 600, 40  # real passages encoded (uncached) per encoder for docs/s
RANK_BM25_QUERIES = 20  # rank-bm25 is ~100x slower per query: fewer timed queries keep the run short
SIGMA = 0.02
# The torch reference first (its figures keep the plain "dense"/"hybrid" keys), then the ONNX default.
ENCODERS = ("torch", "onnx")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "scale"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def base_catalog(names: tuple[str, ...]) -> tuple[list[ApiRecord], list[str]]:
    """Records of the base datasets (deduplicated by id) and their queries' texts."""
    records: dict[str, ApiRecord] = {}
    queries: list[str] = []
    for n in names:
        ds = load_dataset(n)
        for r in ds.records:
            records.setdefault(r.id, r)
        queries += [q.text for q in sample(ds.queries, 40)]
    return list(records.values()), queries


def _vary_text(text: str, rng: random.Random) -> str:
    sentences = [s for s in _SENTENCE.split(text.strip()) if s]
    if len(sentences) > 1:
        rng.shuffle(sentences)
        return " ".join(sentences)
    words = text.split()
    if len(words) > 3:
        del words[rng.randrange(1, len(words))]
    return " ".join(words)


def replica(record: ApiRecord, i: int) -> ApiRecord:
    """Copy ``i`` (>= 1) of ``record`` with a distinct id, namespace, name and shuffled text."""
    rng = random.Random(f"{record.id}#{i}")
    ns = f"{record.namespace}_r{i}"
    local = record.id.split("/", 1)[1] if "/" in record.id else record.id
    return replace(record, id=make_id(ns, local), namespace=ns, name=f"{record.name}_v{i}",
                   description=_vary_text(record.description, rng))


def replicate(base: list[ApiRecord], size: int,
              copy: Callable[[ApiRecord, int], ApiRecord] = replica) -> tuple[list[ApiRecord], list[int]]:
    """``size`` records (base first, then ``copy(record, i)`` round by round) and each one's base index."""
    out, origin = [], []
    i = 0
    while len(out) < size:
        for j, r in enumerate(base):
            if len(out) >= size:
                break
            out.append(r if i == 0 else copy(r, i))
            origin.append(j)
        i += 1
    return out, origin


def base_vectors(base: list[ApiRecord], encoder: str = "torch") -> np.ndarray:
    """Embeddings of the base records through the router's cache (encodes only what it lacks)."""
    from router import text as rtext
    from router.encoders.dense import Embedder, embed_with_cache, shared_cache
    from router.encoders.dense import default_cache_dir

    emb = Embedder(encoder=encoder)
    vecs, _ = embed_with_cache(emb, shared_cache(default_cache_dir(), emb.model_id, encoder),
                               [rtext.embedding_key(r) for r in base], [rtext.record_passage(r) for r in base])
    return vecs


def replica_vectors(base_vecs: np.ndarray, origin: list[int], n_base: int) -> np.ndarray:
    """Base vectors for the originals; base + N(0, SIGMA) noise (seeded per row), renormalized, for replicas."""
    vecs = base_vecs[np.asarray(origin)].copy()
    if len(vecs) > n_base:
        noise = np.random.default_rng(12345).normal(0.0, SIGMA, size=(len(vecs) - n_base, vecs.shape[1]))
        vecs[n_base:] += noise.astype(np.float32)
        vecs[n_base:] /= np.linalg.norm(vecs[n_base:], axis=1, keepdims=True)
    return np.ascontiguousarray(vecs, dtype=np.float32)


def _traced(build: Callable[[], Any]) -> tuple[Any, float, float]:
    """(object, seconds, peak traced heap MB): tracemalloc sees Python and numpy, not faiss internals."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        obj = build()
        secs = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    return obj, secs, peak


def _latency(fn: Callable[[str], Any], queries: list[str]) -> dict[str, float]:
    """Wall p50/p95 of one call per query (after a warm-up call), and the process's CPU time per
    call: on the shared 2 cores the wall figure waits for other processes, the CPU time mostly does
    not. The process's, not the calling thread's: a long query's encoder runs two threads when a
    core is idle (router.encoders.onnx_encoder), and the second one's time is part of the cost."""
    fn(queries[0])  # warm-up
    lat, cpu = [], []
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        fn(q)
        cpu.append((time.process_time() - c0) * 1000)
        lat.append((time.perf_counter() - t0) * 1000)
    return {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)), "n": len(lat),
            "cpu_p50": float(np.percentile(cpu, 50)), "cpu_mean": float(np.mean(cpu)), "load": _loadavg()[0]}


def encode_throughput(encoder: str, texts: list[str]) -> dict[str, float]:
    """The index-build encode (``Embedder.encode``, every core) of ``texts``, nothing cached:
    documents per wall second and per CPU second of the whole process, with the load after."""
    from router.encoders.dense import Embedder

    emb = Embedder(encoder=encoder)
    emb.encode(texts[:4])  # warm-up: sessions, thread pool
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    emb.encode(texts)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"docs": len(texts), "seconds": wall, "docs_per_s": len(texts) / wall, "docs_per_cpu_s": len(texts) / cpu,
            "load": _loadavg()[0]}


def _ann_recall(index, queries: np.ndarray, k: int = 10) -> float | None:
    """Mean recall@k of the index's search against an exact scan (None for a flat index)."""
    if index.kind == "flat":
        return None
    exact = np.argsort(-(queries @ index.vectors.T), axis=1, kind="stable")[:, :k]
    return float(np.mean([len(set(index.search(q, k)[0]) & set(e)) / k for q, e in zip(queries, exact)]))


def measure_size(records: list[ApiRecord], vecs_by_encoder: dict[str, np.ndarray], queries: list[str],
                 methods: tuple[str, ...]) -> dict:
    """Latency of each method; dense and hybrid once per encoder. The first encoder's figures
    keep the plain keys ("dense", "hybrid"); the others' are "dense@<encoder>", "hybrid@<encoder>"."""
    from router.index.vector_index import DenseIndex
    from router import Router

    out: dict[str, Any] = {}
    if "rank_bm25" in methods:
        bm, secs, peak = _traced(lambda: RankBM25(records))
        out["rank_bm25"] = {"build_seconds": secs, "peak_heap_mb": peak,
                            "latency_ms": _latency(lambda q: bm.search(q, 5), queries[:RANK_BM25_QUERIES])}
        del bm
    router, secs, peak = _traced(lambda: Router(records, dense_enabled=False))
    lexical = {"build_seconds": secs, "peak_heap_mb": peak}
    if "bm25" in methods:
        out["bm25"] = {**lexical, "latency_ms": _latency(lambda q: router.select(q, k=5, method="bm25"), queries)}
    for n, (encoder, vecs) in enumerate(vecs_by_encoder.items()):
        tag = "" if n == 0 else f"@{encoder}"
        dense, dsecs, dpeak = _traced(lambda: DenseIndex(vecs))
        # faiss keeps its own copy of the vectors outside the traced heap
        dense_cost = {"build_seconds": dsecs, "peak_heap_mb": dpeak + vecs.nbytes / 2**20, "encoder": encoder,
                      "index": dense.describe()}
        full = Router(records, dense=dense, lexical=router.lexical, encoder=encoder)
        if "dense" in methods:
            out["dense" + tag] = {**dense_cost,
                                  "latency_ms": _latency(lambda q: full.select(q, k=5, method="dense"), queries)}
        if "hybrid" in methods:
            out["hybrid" + tag] = {**dense_cost, "build_seconds": lexical["build_seconds"] + dense_cost["build_seconds"],
                                   "peak_heap_mb": lexical["peak_heap_mb"] + dense_cost["peak_heap_mb"],
                                   "latency_ms": _latency(lambda q: full.select(q, k=5, method="hybrid"), queries)}
        out["ann_recall@10" + tag] = _ann_recall(dense, full.encode_queries(queries))
        full = dense = None  # free this encoder's index before the next one is built
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run(out_dir: str | Path = DEFAULT_OUT, quick: bool = False, sizes: list[int] | None = None,
        methods: list[str] | None = None, command: str | None = None,
        encoders: list[str] | None = None) -> dict[str, Any]:
    import faiss  # noqa: F401  (imported before any timed build)
    from router.encoders.dense import Embedder, resolve_encoder

    started = time.time()
    load_start = _loadavg()
    meths = tuple(methods or METHODS)
    encs = [resolve_encoder(e) for e in (encoders or ENCODERS)]
    sizes = sorted(sizes or (QUICK_SIZES if quick else SIZES))
    base, queries = base_catalog(QUICK_BASE if quick else BASE_DATASETS)
    queries = sorted(queries, key=lambda q: hashlib.sha1(q.encode()).hexdigest())[:QUICK_QUERIES if quick else N_QUERIES]
    for e in encs:
        Embedder(encoder=e).model  # load (and for ONNX export) before anything is timed
    if "torch" in encs:
        one_torch_thread()
    from router import text as rtext

    sample_texts = sorted({rtext.record_passage(r) for r in base}, key=lambda t: hashlib.sha1(t.encode()).hexdigest())
    build = {e: encode_throughput(e, sample_texts[:QUICK_BUILD_DOCS if quick else BUILD_DOCS]) for e in encs}
    t0 = time.perf_counter()
    bvecs = {e: base_vectors(base, e) for e in encs}
    results: dict[str, Any] = {
        "command": command or "toolsift bench scale " + " ".join(sys.argv[1:]), "versions": versions(),
        "quick": quick, "base_datasets": list(QUICK_BASE if quick else BASE_DATASETS), "base_records": len(base),
        "base_embedding_seconds": time.perf_counter() - t0, "n_queries": len(queries), "sigma": SIGMA,
        "how": __doc__.split("\n\n", 2)[2].strip(), "methods": list(meths), "encoders": encs,
        "encode_throughput": build, "sizes": {}}
    for size in sizes:
        print(f"[scale] {size} tools ...", file=sys.stderr, flush=True)
        records, origin = replicate(base, size)
        vecs = {e: replica_vectors(v, origin, len(base)) for e, v in bvecs.items()}
        try:
            results["sizes"][str(size)] = measure_size(records, vecs, queries, meths)
        except MemoryError:
            results["sizes"][str(size)] = {"error": "out of memory"}
            break
        del records, vecs
    results["wall_seconds"] = time.time() - started
    results["load_average"] = {"start": load_start, "end": _loadavg()}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    write_scale_report(results, out)
    return results


def _targets_report(results: dict[str, Any]) -> list[str]:
    """Issue #15's targets side by side per encoder: hybrid route p50 (wall, CPU) at 20k / 100k,
    index-build docs/s (encode measured here + the BM25 and vector index builds at each size)."""
    from ..report import md_table

    encs = results.get("encoders") or ["torch"]
    thr = results.get("encode_throughput") or {}
    rows = []
    for i, e in enumerate(encs):
        key = "hybrid" + ("" if i == 0 else f"@{e}")
        for s, want in (("20000", 5.0), ("100000", 8.0)):
            lat = results["sizes"].get(s, {}).get(key, {}).get("latency_ms")
            if lat and "cpu_p50" in lat:
                rows.append([e, f"hybrid route p50, {int(s):,} tools (target ≤ {want:g} ms)", f"{lat['p50']:.2f} ms",
                             f"{lat['cpu_p50']:.2f} ms", f"{lat['load']:.1f}"])
    if "rank_bm25" in results.get("methods", []):
        for s in ("20000", "100000"):
            lat = results["sizes"].get(s, {}).get("rank_bm25", {}).get("latency_ms")
            if lat and "cpu_p50" in lat:
                rows.append(["-", f"rank-bm25 route p50, {int(s):,} tools", f"{lat['p50']:.2f} ms", f"{lat['cpu_p50']:.2f} ms",
                             f"{lat['load']:.1f}"])
    for i, e in enumerate(encs):
        t = thr.get(e)
        if not t:
            continue
        key = "hybrid" + ("" if i == 0 else f"@{e}")
        index_s = results["sizes"].get("20000", {}).get(key, {}).get("build_seconds")
        whole = "" if index_s is None else (f"; 20,000 tools: {20000 / t['docs_per_s'] + index_s:.0f} s "
                                            f"({20000 / (20000 / t['docs_per_s'] + index_s):.0f} docs/s) with the "
                                            f"{index_s:.1f} s BM25 + vector index build")
        rows.append([e, "index build encode (target ≥ 250 docs/s)", f"{t['docs_per_s']:.0f} docs/s{whole}",
                     f"{t['docs_per_cpu_s']:.0f} docs/CPU-s (x2 cores: {2 * t['docs_per_cpu_s']:.0f})", f"{t['load']:.1f}"])
    if not rows:
        return []
    return ["## Targets (issue #15), side by side", "",
            f"Encode throughput: {next(iter(thr.values()))['docs'] if thr else 0} real passages of the base catalog, "
            "uncached, `Embedder.encode` (the index-build path, all cores). Wall figures on this shared machine wait "
            "for other processes: the CPU column is what a query or document costs; on 2 idle cores a build "
            "runs at up to twice the docs/CPU-s.", "",
            md_table(["encoder", "what", "wall", "CPU", "load"], rows), ""]


def write_scale_report(results: dict[str, Any], out: Path) -> None:
    from ..report import _pyplot, load_line, md_table

    sizes = [s for s, v in results["sizes"].items() if "error" not in v]
    encs = results.get("encoders") or ["torch"]
    meths = [m + ("" if i == 0 else f"@{e}") for m in results["methods"]
             for i, e in enumerate(encs if m in ("dense", "hybrid") else encs[:1])]
    rows = []
    for s in sizes:
        v = results["sizes"][s]
        for m in meths:
            if m in v:
                enc = v[m].get("encoder", "-")
                kind = v[m].get("index", {}).get("kind", "-")
                recall = v.get("ann_recall@10" + m[len(m.split("@")[0]):]) if "index" in v[m] else None
                lat = v[m]["latency_ms"]
                rows.append([f"{int(s):,}", m.split("@")[0], enc, kind, "-" if recall is None else f"{recall:.3f}",
                             f"{lat['p50']:.2f}", f"{lat['p95']:.2f}",
                             f"{lat['cpu_p50']:.2f}" if "cpu_p50" in lat else "-",
                             f"{lat['load']:.1f}" if "load" in lat else "-",
                             f"{v[m]['build_seconds']:.2f}", f"{v[m]['peak_heap_mb']:.0f}", f"{v['max_rss_mb']:.0f}"])
    text = ["# Scale: route latency and memory vs catalog size", "",
            f"Command: `{results['command']}`  ", f"Wall time: {results['wall_seconds']:.0f} s  ",
            "Versions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()) + "  ",
            load_line(results), "",
            f"Base catalog: {results['base_records']} real records from {', '.join(results['base_datasets'])}; "
            f"{results['n_queries']} real queries (rank-bm25: the first {RANK_BM25_QUERIES}), k=5, one query at a "
            "time, after a warm-up query; queries encoded on one thread (torch: see benchmarks/retrieval/methods.py; ONNX: a "
            "single-threaded session). Dense and hybrid run once per encoder in the same process (torch = the "
            "sentence-transformers reference; onnx-int8 / onnx-fp32 = router/encoders/onnx_encoder.py), each over its own "
            "vectors. Index: flat below router.index.vector_index.FLAT_MAX vectors, HNSW above; ANN recall@10 = overlap "
            "of its top 10 with an exact scan, over the benchmark's queries.", "", results["how"], "",
            "Build times are measured with tracemalloc on (it slows Python-heavy builds). The dense build is the "
            "faiss index over vectors already computed (replicas reuse their base record's vector); encoding is "
            f"not in it: the {results['base_records']} base vectors took {results['base_embedding_seconds']:.1f} s "
            "from the router's embedding cache; a cold encode ran at ~70 docs/s with torch "
            "(../shared/notes/embedding.md) and ~5.9x that with ONNX int8 (toolsift bench encoders). "
            "Hybrid build = BM25 + dense (HNSW above router.index.vector_index.FLAT_MAX). Peak heap: tracemalloc "
            "peak during the build (dense adds the vectors faiss copies); max RSS: the process high-water mark "
            "so far.", "",
            md_table(["tools", "method", "encoder", "index", "ANN recall@10", "p50 ms", "p95 ms", "CPU ms p50", "load",
                      "build s", "peak heap MB", "max RSS MB"], rows), "",
            "CPU ms p50 = the median CPU time of the process per query (`time.process_time`); load = the "
            "1-min load average right after the size's queries, on 2 cores.", "", *_targets_report(results)]
    errs = {s: v["error"] for s, v in results["sizes"].items() if "error" in v}
    if errs:
        text.append("Stopped: " + "; ".join(f"{s}: {e}" for s, e in errs.items()))
    (out / "report.md").write_text("\n".join(text) + "\n", encoding="utf-8")
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = [int(s) for s in sizes]
    for m in meths:
        ys = [results["sizes"][s][m]["latency_ms"]["p50"] for s in sizes if m in results["sizes"][s]]
        ms = [results["sizes"][s][m]["peak_heap_mb"] for s in sizes if m in results["sizes"][s]]
        if ys:
            axes[0].plot(xs[:len(ys)], ys, marker="o", label=m)
            axes[1].plot(xs[:len(ms)], ms, marker="o", label=m)
    for ax, title, ylabel in ((axes[0], "Route latency p50 (k=5)", "ms"), (axes[1], "Index build peak heap", "MB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("catalog size (tools)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=110)
    plt.close(fig)
