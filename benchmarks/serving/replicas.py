"""Replicas: several proxies over one catalog, PostgreSQL beside SQLite.

    toolsift bench replicas [--size 20000] [--replicas 3] [--changes 20] [--quick]

A catalog of ``size`` tools (the scale benchmark's replicas of 3,946 real tools, with their
vectors: benchmarks/retrieval/scale.py) is written to a throwaway PostgreSQL server (tests/support/postgres.py,
run as its own process) and indexed there (`toolsift index --db postgresql://...`: vectors and
snapshots stored with the catalog). ``replicas`` proxies (`toolsift serve openai --db ...
--inject-catalog`) start from it; for each: its cold start (process start to /healthz ok, model
load and warm-up included) and how many passages it embedded (its /healthz). Then ``changes``
times a new tool is committed (what `toolsift catalog add` does: one `Catalog.sync`; the tool is shaped
like the catalog's ToolBench tools, with a ``tool_name``), and every
replica is asked every 50 ms until its ``x-toolsift-selected`` header offers the
new tool: the time from the commit until all replicas route it. Last, route p50 per replica
over real queries. The same on a SQLite file (the replicas poll its generation counter).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import BenchmarkError
from .proxy_overhead import ROOT, _cpu_seconds, _free_port, _start_upstream, _stop

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "replicas"
PROBE_GAP = 0.05  # seconds between two probes of one replica while waiting for a change


def _start_server(log: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.postgres"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=log.open("wb"), text=True)
    url = proc.stdout.readline().strip() if proc.stdout else ""
    if not url.startswith("postgresql://"):
        proc.kill()
        raise BenchmarkError(f"no PostgreSQL server for the benchmark: {log.read_text()[-1000:]}")
    return proc, url


def _catalog(db: str, size: int, quick: bool) -> list[str]:
    """Records and vectors into ``db``; then `toolsift index` on it. Real queries to route."""
    from apidb.catalog import Catalog, is_server_url
    from router import text as rtext
    from router.encoders.dense import DEFAULT_MODEL, cache_identity, resolve_encoder, shared_cache
    from router.index.build import index_dir_for

    from ..retrieval.scale import BASE_DATASETS, QUICK_BASE, base_catalog, base_vectors, replica_vectors, replicate

    base, queries = base_catalog(QUICK_BASE if quick else BASE_DATASETS)
    if not base:
        raise BenchmarkError("no base records: the scale benchmark's datasets are missing")
    records, origin = replicate(base, size)
    encoder = resolve_encoder(None)
    vecs = replica_vectors(base_vectors(base, encoder), origin, len(base))
    keys = [rtext.embedding_key(r) for r in records]
    with Catalog(db) as cat:
        cat.sync(records)
        if is_server_url(db):  # the vectors as `toolsift index` would have stored them (no 20k embeds)
            cat.put_vectors(cache_identity(DEFAULT_MODEL, encoder), [(k, v.tobytes()) for k, v in zip(keys, vecs)])
    if not is_server_url(db):
        cache = shared_cache(index_dir_for(db) / "cache", DEFAULT_MODEL, encoder)
        cache.put_many(keys, vecs)
        cache.save()
    proc = subprocess.run([*_script(), "index", "--db", db, "--json"], capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if proc.returncode != 0:
        raise BenchmarkError(f"toolsift index failed: {proc.stderr.strip()[-500:]}")
    report = json.loads(proc.stdout)
    if report["embedded"]:
        raise BenchmarkError(f"toolsift index embedded {report['embedded']} passages (vectors were stored first)")
    return sorted(set(queries))[:40]


def _script() -> list[str]:
    exe = Path(sys.executable).parent / "toolsift"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "router.cli"]


def _start_replica(db: str, upstream: str, log: Path) -> tuple[subprocess.Popen, str, float, float | None]:
    import httpx

    port = _free_port()
    t0 = time.perf_counter()
    proc = subprocess.Popen([*_script(), "serve", "openai", "--db", db, "--inject-catalog", "--upstream", upstream,
                             "--port", str(port), "-k", "5"], stdout=subprocess.DEVNULL, stderr=log.open("wb"),
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    while time.perf_counter() - t0 < 600:
        if proc.poll() is not None:
            raise BenchmarkError(f"replica exited with {proc.returncode}: {log.read_text()[-1500:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).json().get("status") == "ok":
                return proc, url, time.perf_counter() - t0, _cpu_seconds(proc.pid)
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.05)
    proc.kill()
    raise BenchmarkError("a replica did not become ready within 600 s")


def _offers(client, url: str, question: str) -> list[str]:
    r = client.post(f"{url}/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": question}]})
    if r.status_code != 200:
        raise BenchmarkError(f"replica {url} answered {r.status_code}: {r.text[:200]}")
    return [t["name"] for t in json.loads(r.headers["x-toolsift-selected"])]


def _changes(db: str, urls: list[str], n: int) -> list[float]:
    """Seconds from each commit until every replica offers the committed tool."""
    import httpx

    from apidb.catalog import Catalog
    from apidb.record import ApiRecord, make_id

    out, added = [], []
    for i in range(n):
        word = f"vexa{i}q{os.getpid() % 97}"
        rec = ApiRecord(id=make_id("probe", f"probe_tool_{i}"), namespace="probe", name=f"probe_tool_{i}",
                        description=f"Zorblaxify the {word} ledger of a warehouse.", source_format="toolbench",
                        metadata={"tool_name": f"warehouse_ledger_{i}"})  # shaped like the catalog's ToolBench tools:
        # their tool_name groups them, and the router's group boost favours grouped tools (router.ranking.engine)
        added.append(rec)
        seen: dict[str, float] = {}
        with Catalog(db) as cat:
            cat.sync(added, ["probe"])
        t0 = time.perf_counter()

        def watch(url: str) -> None:
            with httpx.Client(timeout=30) as client:
                while time.perf_counter() - t0 < 120:
                    if rec.name in _offers(client, url, f"zorblaxify the {word} ledger"):
                        seen[url] = time.perf_counter() - t0
                        return
                    # a probe every PROBE_GAP s: asking back to back kept three replicas busy routing
                    # (load 12-16 on 2 cores), slowing the very swap being timed
                    time.sleep(PROBE_GAP)
        threads = [threading.Thread(target=watch, args=(u,)) for u in urls]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if len(seen) != len(urls):
            raise BenchmarkError(f"change {i}: not every replica routed it within 120 s")
        out.append(max(seen.values()))
    return out


def _route_p50(url: str, queries: list[str]) -> float:
    import httpx

    times = []
    with httpx.Client(timeout=60) as client:
        for q in queries:
            t0 = time.perf_counter()
            _offers(client, url, q)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _backend(label: str, db: str, upstream: str, replicas: int, changes: int, size: int, quick: bool,
             work: Path) -> dict[str, Any]:
    import httpx

    print(f"[replicas] {label}: {size} tools into the catalog, `toolsift index` ...", file=sys.stderr, flush=True)
    queries = _catalog(db, size, quick)
    procs, rows = [], []
    try:
        for i in range(replicas):
            proc, url, seconds, cpu = _start_replica(db, upstream, work / f"{label}-replica{i}.log")
            procs.append(proc)
            rows.append({"url": url, "cold_start_s": round(seconds, 2), "cold_start_cpu_s": cpu and round(cpu, 2),
                         "load": [round(x, 2) for x in os.getloadavg()]})
        print(f"[replicas] {label}: {changes} changes ...", file=sys.stderr, flush=True)
        lat = _changes(db, [r["url"] for r in rows], changes)
        for row in rows:
            row["route_p50_ms"] = round(1000 * _route_p50(row["url"], queries), 2)
            sync = httpx.get(f"{row['url']}/healthz", timeout=5).json()["catalog_sync"]
            row["passages_embedded"] = sync["passages_embedded"]
            row["changes_applied"] = sync["changes_applied"]
    finally:
        for proc in procs:
            _stop(proc)
    return {"replicas": rows, "commit_to_routing_s": {"p50": round(statistics.median(lat), 3),
                                                      "max": round(max(lat), 3), "all": [round(x, 3) for x in lat]},
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def run(out: Path = DEFAULT_OUT, *, size: int = 20_000, replicas: int = 3, changes: int = 20, quick: bool = False,
        command: str = "") -> dict[str, Any]:
    import tempfile

    if quick:
        size, changes = min(size, 2_000), min(changes, 5)
    work = Path(tempfile.mkdtemp(prefix="toolsift-replicas-"))
    up_proc, upstream = _start_upstream(work / "upstream.log")
    server, url = None, None
    try:
        server, url = _start_server(work / "postgres.log")
        result = {"command": command, "size": size, "replicas": replicas, "changes": changes, "cores": os.cpu_count(),
                  "load_before": [round(x, 2) for x in os.getloadavg()],
                  "postgresql": _backend("postgresql", url, upstream, replicas, changes, size, quick, work),
                  "sqlite": _backend("sqlite", str(work / "catalog.db"), upstream, replicas, changes, size, quick, work)}
    finally:
        _stop(up_proc)
        if server is not None:
            _stop(server)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(report(result) + "\n", encoding="utf-8")
    return result


def report(res: dict[str, Any]) -> str:
    lines = [f"# Replicas: {res['replicas']} proxies over one {res['size']:,}-tool catalog", "",
             f"Command: `{res['command'] or 'toolsift bench replicas'}`. {res['cores']} cores, load average before "
             f"{res['load_before']}. Cold start: process start to /healthz ok (catalog read, BM25 and the faiss "
             "index loaded from the catalog's snapshots, the query encoder loaded and warmed). Commit to routing: "
             f"from a committed `Catalog.sync` (what `catalog add` runs) of one new tool until every replica's "
             f"`x-toolsift-selected` offers it (each replica asked every {int(PROBE_GAP * 1000)} ms), over "
             f"{res['changes']} changes. Route p50: one Chat Completions "
             "request through the replica (to a scripted upstream), real queries.", "",
             "| catalog | replica | cold start s (CPU s) | passages embedded | route p50 ms | load at start |",
             "|---|---|---|---|---|---|"]
    for backend in ("postgresql", "sqlite"):
        for i, row in enumerate(res[backend]["replicas"]):
            lines.append(f"| {backend} | {i + 1} | {row['cold_start_s']} ({row['cold_start_cpu_s']}) | "
                         f"{row['passages_embedded']} | {row['route_p50_ms']} | {row['load']} |")
    lines += ["", "| catalog | commit to routing on all replicas: p50 s | max s | load after |", "|---|---|---|---|"]
    for backend in ("postgresql", "sqlite"):
        c = res[backend]["commit_to_routing_s"]
        lines.append(f"| {backend} | {c['p50']} | {c['max']} | {res[backend]['load_after']} |")
    lines += ["", "Targets (issue 17): cold start ≤ 10 s with the model load, 0 passages embedded by a replica, "
              "a change routed by every replica ≤ 2 s after its commit."]
    return "\n".join(lines)


def summary(res: dict[str, Any]) -> str:
    parts = []
    for backend in ("postgresql", "sqlite"):
        b = res[backend]
        colds = ", ".join(f"{r['cold_start_s']}s" for r in b["replicas"])
        parts.append(f"{backend}: cold start {colds}; embedded {sum(r['passages_embedded'] for r in b['replicas'])}; "
                     f"commit→routing p50 {b['commit_to_routing_s']['p50']}s max {b['commit_to_routing_s']['max']}s")
    return "\n".join(parts) + f"\nload {os.getloadavg()}"
