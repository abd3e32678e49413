"""Cold route: what one fresh `toolsift route` process costs on an indexed 20,000-tool catalog.

    toolsift bench cold-route [--size 20000] [--runs 10] [--methods hybrid,bm25] [--build] [--out DIR]

The catalog is the scale benchmark's (benchmarks/retrieval/scale.py): replicas of 3,946 real tools, each
replica's vector its base record's plus a small seeded perturbation. Those vectors are put in the
index's embedding cache before `toolsift index` runs, so the index build encodes nothing (a cold
encode of 20k passages would take minutes and is not what this measures). The catalog and index
are kept under ``--work`` (default ~/.cache/toolsift/bench/) and reused while the catalog's
content is unchanged.

Each run is the installed console script in a fresh process, exactly as a user types it:
``toolsift route QUERY --db CATALOG -k 5 --json`` with a different real query each time, stdout to
a pipe. Wall time per run is measured around the subprocess; CPU (user + system) from the
children's rusage. The load average is printed next to the figure: on the shared 2-core machine
the wall time of a process that is mostly waiting for CPU grows with the load. Each method's runs
are interleaved with the others' (hybrid, bm25, hybrid, ...) so that a change of load hits all alike.

``--build`` also times what the route's index cost in the first place: a fresh
``toolsift index --db COPY --json`` on a copy of the same catalog with nothing cached (an empty
``$TOOLSIFT_CACHE`` but for the exported ONNX model, no index beside the copy), so every passage is
embedded: wall and CPU of the process, passages embedded, and documents per second end to end
(tokenizing, embedding, BM25 and the HNSW graph, the files written).

One more run per method under ``python -X importtime`` lists the modules that cost the most to
import, and whether torch or sentence-transformers were imported at all (the ONNX query encoder
must not need them).
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import BenchmarkError

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "cold_route"
TARGET_SECONDS = 1.5  # issue 14: a fresh hybrid route on an indexed 20k-tool catalog, idle machine
BUILD_TARGET = 250  # issue 15: documents per second of a whole index build


def _work_dir(work: Path | None) -> Path:
    if work is not None:
        return Path(work)
    from router.encoders.dense import default_cache_dir

    return default_cache_dir() / "bench"


def build_catalog(size: int, work: Path | None = None, quick: bool = False) -> tuple[Path, list[str]]:
    """The indexed ``size``-tool catalog (built once, then reused) and real queries to route."""
    from apidb.catalog import Catalog
    from router import text as rtext
    from router.encoders.dense import DEFAULT_MODEL, resolve_encoder, shared_cache
    from router.index.build import build_index, index_dir_for

    from ..retrieval.scale import (
        BASE_DATASETS,
        QUICK_BASE,
        base_catalog,
        base_vectors,
        replica_vectors,
        replicate,
    )

    names = QUICK_BASE if quick else BASE_DATASETS
    base, queries = base_catalog(names)
    if not base:
        raise BenchmarkError("no base records: the scale benchmark's datasets are missing")
    records, origin = replicate(base, size)
    encoder = resolve_encoder(None)
    db = _work_dir(work) / f"cold-route-{size}{'-quick' if quick else ''}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    with Catalog(db) as cat:
        report = cat.sync(records)
    idir = index_dir_for(db)
    if report.changed or not (idir / "manifest.json").exists():
        print(f"[cold-route] {size} tools: vectors into the index cache ...", file=sys.stderr, flush=True)
        vecs = replica_vectors(base_vectors(base, encoder), origin, len(base))
        cache = shared_cache(idir / "cache", DEFAULT_MODEL, encoder)
        cache.put_many([rtext.embedding_key(r) for r in records], vecs)
        cache.save()
    # always: a no-op when the index is current, a rebuild (from the cached vectors) when it was
    # written by an older toolsift; a route must never time an in-memory BM25 rebuild
    built = build_index(db, encoder=encoder)
    if not built.up_to_date:
        print(f"[cold-route] index rebuilt ({built.embedded} embedded)", file=sys.stderr, flush=True)
    queries = sorted(set(queries), key=lambda q: hashlib.sha1(q.encode()).hexdigest())
    return db, queries


def _script() -> list[str]:
    exe = Path(sys.executable).parent / "toolsift"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "router.cli"]


def _route(db: Path, query: str, method: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [*prefix, *_script()] if prefix else _script()
    proc = subprocess.run([*cmd, "route", query, "--db", str(db), "-k", "5", "--method", method, "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise BenchmarkError(f"toolsift route failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    answer = json.loads(proc.stdout)
    if answer["method"] != method or answer["warnings"]:  # a fallback is not the path being timed
        raise BenchmarkError(f"route answered with {answer['method']} ({method} asked), warnings: "
                             f"{answer['warnings']}")
    return proc


def time_runs(db: Path, queries: list[str], runs: int, methods: tuple[str, ...] = ("hybrid",)
              ) -> dict[str, list[dict[str, float]]]:
    """One fresh process per (query, method), methods interleaved: wall and CPU seconds of each."""
    out: dict[str, list[dict[str, float]]] = {m: [] for m in methods}
    for q in queries[:runs]:
        for method in methods:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            _route(db, q, method)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            out[method].append({"wall": wall, "cpu": cpu})
    return out


def import_profile(db: Path, query: str, method: str, top: int = 12) -> dict[str, Any]:
    """``python -X importtime`` of one fresh route: the costliest top-level packages (cumulative
    import time, ms) and whether torch / sentence-transformers were imported."""
    proc = _route(db, query, method, prefix=(sys.executable, "-X", "importtime"))
    cumulative: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:"):].split("|")]
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        name = parts[2]
        if not name.startswith(" ") and "." not in name.strip():  # a top-level package
            cumulative[name.strip()] = max(cumulative.get(name.strip(), 0.0), int(parts[1]) / 1000)
    imported = set(cumulative)
    return {"top": sorted(cumulative.items(), key=lambda kv: -kv[1])[:top],
            "torch": "torch" in imported, "sentence_transformers": "sentence_transformers" in imported,
            "total_ms": round(sum(cumulative.values()), 1)}


def time_build(db: Path) -> dict[str, Any]:
    """A fresh `toolsift index` of a copy of ``db`` with nothing cached (see the module doc)."""
    import shutil
    import tempfile

    from router.encoders.onnx_export import cache_root as export_root

    with tempfile.TemporaryDirectory(prefix="toolsift-build-") as tmp:
        copy, cache = Path(tmp) / "catalog.db", Path(tmp) / "cache"
        shutil.copyfile(db, copy)
        cache.mkdir()
        if export_root().is_dir():  # the exported model is an install step, not part of a build
            (cache / "onnx").symlink_to(export_root(), target_is_directory=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOOLSIFT_CACHE": str(cache)}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([*_script(), "index", "--db", str(copy), "--json"], capture_output=True, text=True,
                              env=env, timeout=3600)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise BenchmarkError(f"toolsift index failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    report = json.loads(proc.stdout)
    records = int(report.get("records") or 0)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
            "records": records, "embedded": report.get("embedded"),
            "docs_per_s": round(records / wall, 1) if wall else None,
            # what the run costs whatever else holds the cores: on the shared machine the figure to trust
            "docs_per_cpu_s": round(records / cpu, 1) if cpu else None,
            **passage_tokens(db)}


def passage_tokens(db: Path) -> dict[str, Any]:
    """How long the embedded texts are: the mean (and median, max) of the catalog's passages in
    the encoder's word pieces, as it reads them (cut at its max_seq_length). Documents per second
    mean little without it: the encoder's cost grows with the length of what it reads."""
    import statistics

    from apidb.catalog import Catalog
    from router import text as rtext
    from router.encoders.onnx_encoder import TextTokenizer
    from router.encoders.shipped import SHIPPED_DIR

    with Catalog(db, readonly=True) as cat:
        passages = [rtext.record_passage(r) for r in cat.records()]
    tokenizer = TextTokenizer(SHIPPED_DIR)
    lengths = [len(e.ids) for e in tokenizer(passages)]
    return {"passage_tokens": {"mean": round(statistics.fmean(lengths), 1), "median": statistics.median(lengths),
                               "max": max(lengths), "at_limit": sum(n >= max(lengths) for n in lengths),
                               "passages": len(lengths)}}


def _stats(values: list[float]) -> dict[str, float]:
    v = sorted(values)
    return {"median": statistics.median(v), "min": v[0], "max": v[-1]}


def run(out_dir: str | Path = DEFAULT_OUT, quick: bool = False, size: int | None = None, runs: int | None = None,
        methods: tuple[str, ...] = ("hybrid", "bm25"), work: Path | None = None,
        command: str | None = None, build: bool = False) -> dict[str, Any]:
    from ..retrieval.comparison import _loadavg, versions

    size = size or (2_000 if quick else 20_000)
    runs = runs or (3 if quick else 10)
    db, queries = build_catalog(size, work, quick)
    if len(queries) < runs:
        raise BenchmarkError(f"only {len(queries)} queries for {runs} runs")
    time_runs(db, queries[-1:], 1, methods)  # one untimed run: the page cache holds the files, as for a user
    load_start = _loadavg()
    timed = time_runs(db, queries, runs, methods)
    load_end = _loadavg()
    if build:  # after the routes: a build loads both cores, which the routes must not see
        built = {**time_build(db), "load_start": load_end, "load_end": _loadavg()}
    result = {
        "command": command or "toolsift bench cold-route " + " ".join(sys.argv[1:]), "versions": versions(),
        "size": size, "runs": runs, "methods": list(methods), "catalog": str(db),
        "load_average": {"start": load_start, "end": load_end}, "cpus": os.cpu_count(),
        "target_seconds": TARGET_SECONDS,
        "by_method": {m: {"wall_seconds": _stats([r["wall"] for r in rows]),
                          "cpu_seconds": _stats([r["cpu"] for r in rows]), "per_run": rows,
                          "imports": import_profile(db, queries[0], m)} for m, rows in timed.items()},
    }
    if build:
        result["index_build"] = built
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(report(result) + "\n", encoding="utf-8")
    return result


def summary(result: dict[str, Any]) -> str:
    load = result["load_average"]
    parts = []
    for m, r in result["by_method"].items():
        w, c = r["wall_seconds"], r["cpu_seconds"]
        parts.append(f"{m}: wall median {w['median']:.2f} s (min {w['min']:.2f}, max {w['max']:.2f}), "
                     f"CPU median {c['median']:.2f} s, torch imported: {'yes' if r['imports']['torch'] else 'no'}")
    b = result.get("index_build")
    if b:
        parts.append(f"`toolsift index` nothing cached: {b['wall_seconds']} s wall ({b['cpu_seconds']} s CPU), "
                     f"{b['embedded']} embedded, {b['docs_per_s']} docs/s ({b.get('docs_per_cpu_s')} per CPU second), "
                     f"passages of {_tokens_text(b)}")
    return (f"fresh `toolsift route` on {result['size']:,} indexed tools, {result['runs']} runs per method; "
            + "; ".join(parts) + f"; load average {load['start'][0] if load['start'] else '?'} -> "
            f"{load['end'][0] if load['end'] else '?'} (1 min) on {result['cpus']} cores")


def readme_rows(result: dict[str, Any]) -> list[str]:
    """The README speed table's rows for this run (pasted from the output, never typed)."""
    load = result["load_average"]
    cores = result["cpus"]
    rows = []
    if "hybrid" in result["by_method"]:
        parts = [f"{m} {r['wall_seconds']['median']:.2f} s wall ({r['cpu_seconds']['median']:.2f} s CPU)"
                 for m, r in result["by_method"].items()]
        torch = any(r["imports"]["torch"] for r in result["by_method"].values())
        rows.append(f"| a fresh `toolsift route` process, {result['size']:,} indexed tools | "
                    + ", ".join(parts) + f", medians of {result['runs']} runs, at load {_first(load['start'])}–"
                    f"{_first(load['end'])} on {cores} cores; torch {'imported' if torch else 'not imported'} "
                    f"(target ≤ {TARGET_SECONDS} s) | `{result['command']}` | "
                    "[cold_route](benchmarks/results/cold_route/report.md) |")
    b = result.get("index_build")
    if b:
        rows.append(f"| index build of {b['records']:,} tools, nothing cached (a fresh `toolsift index`) | "
                    f"{b['wall_seconds']} s wall: {b['docs_per_s']} docs/s, {b.get('docs_per_cpu_s')} docs per CPU "
                    f"second ({b['embedded']:,} passages embedded, the rest from the shipped vectors; passages of "
                    f"{_tokens_text(b)}); load {_first(b['load_start'])} → {_first(b['load_end'])} on {cores} cores; "
                    f"target ≥ {BUILD_TARGET} docs/s | `{result['command']}` | "
                    "[cold_route](benchmarks/results/cold_route/report.md) |")
    return rows


def _first(load: list[float]) -> str:
    return str(load[0]) if load else "?"


def _tokens_cell(build: dict[str, Any]) -> str:
    t = build.get("passage_tokens")
    return "?" if not t else f"{t['mean']} ({t['median']:g}, {t['max']})"


def _tokens_text(build: dict[str, Any]) -> str:
    t = build.get("passage_tokens")
    return "?" if not t else f"{t['mean']} tokens on average, median {t['median']:g}, max {t['max']}"


def report(result: dict[str, Any]) -> str:
    doc = __doc__.split("\n\n", 2)[2].strip()
    load = result["load_average"]
    lines = ["# Cold route: one fresh `toolsift route` process", "",
             f"Command: `{result['command']}`  ",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + "  ",
             f"Load average (1/5/15 min) at start {load['start']}, at end {load['end']}, on {result['cpus']} "
             "CPUs: on a busy machine wall time is an upper bound; CPU time is the cost of the process.", "",
             f"{result['size']:,} indexed tools, {result['runs']} fresh processes per method.", "",
             "| method | wall median s | wall min s | wall max s | CPU median s | torch imported |",
             "|---|---|---|---|---|---|"]
    for m, r in result["by_method"].items():
        w, c = r["wall_seconds"], r["cpu_seconds"]
        lines.append(f"| {m} | {w['median']:.2f} | {w['min']:.2f} | {w['max']:.2f} | {c['median']:.2f} | "
                     f"{'yes' if r['imports']['torch'] else 'no'} |")
    lines += ["", f"Target (issue 14): at most {result['target_seconds']} s wall for hybrid on an idle machine.", ""]
    b = result.get("index_build")
    if b:
        lines += ["Index build (`--build`): a fresh `toolsift index` of a copy of the same catalog, nothing cached "
                  "(every passage embedded, BM25 and HNSW built, files written):", "",
                  "| records | embedded | passage tokens, mean (median, max) | wall s | CPU s | docs/s | "
                  "docs per CPU s | load start → end |", "|---|---|---|---|---|---|---|---|",
                  f"| {b['records']:,} | {b['embedded']:,} | {_tokens_cell(b)} | {b['wall_seconds']} | "
                  f"{b['cpu_seconds']} | {b['docs_per_s']} | {b.get('docs_per_cpu_s')} | "
                  f"{b['load_start']} → {b['load_end']} |", "",
                  "Passage tokens: the catalog's passages in the encoder's word pieces, as it reads them (cut "
                  "at its max_seq_length). Docs per CPU second is the build's cost whatever else runs; "
                  "docs/s (wall) reaches it times the free cores only on an idle machine.", "",
                  f"Target (issue 15): at least {BUILD_TARGET} docs/s (20,000 tools in under 90 s).", ""]
    for m, r in result["by_method"].items():
        lines += [f"Costliest imports, {m} (`python -X importtime`, cumulative ms): "
                  + ", ".join(f"{name} {ms:.0f}" for name, ms in r["imports"]["top"]), ""]
    return "\n".join(lines + [doc])
