"""Proxy soak: 2,000 requests with distinct tool lists, RSS and latency along the way (issue 19).

    toolsift bench proxy --soak [--quick] [--method hybrid|bm25] [-k 5] [--soak-requests 2000]

Before issue 19 the proxy kept every request tool list's vectors in memory and rewrote its
on-disk embedding cache after each new list: over 2,000 distinct lists RSS grew by 193 MB and
the median latency went from 133 ms to 1,039 ms. Here each request brings 30 tools: 29 from a
fixed pool of 300 (a window that moves by one each request) and one tool seen nowhere else, so
every list is distinct and each request has one new tool to embed. The proxy (the real
`toolsift serve openai`, no catalog) and the scripted upstream (its own process) run on this
machine; one client sends the requests one after another. Reported per window of 10 % of the
requests: latency p50 / p95 and the proxy's RSS at the window's end (/proc), then the proxy's
cache counters from /metrics. Flat is the target.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..errors import BenchmarkError
from .proxy_overhead import RESULTS, ROOT, _free_port, _loadavg, _pct, _start_upstream, _stop

DEFAULT_OUT = RESULTS / "proxy_soak"
_WORDS = ("weather forecast city flight hotel booking currency exchange stock price news email calendar music "
          "timer translate recipe movie train parcel parking book podcast crypto lottery holiday air quality "
          "dictionary unit sports score restaurant map route traffic invoice payment").split()


def _tool(name: str, i: int) -> dict:
    words = " ".join(_WORDS[(i * 7 + j * 3) % len(_WORDS)] for j in range(6))
    return {"type": "function", "function": {"name": name, "description": f"Look up {words} (#{i}).",
                                             "parameters": {"type": "object", "properties": {
                                                 "query": {"type": "string", "description": words}},
                                                 "required": ["query"]}}}


def bodies(n: int) -> list[bytes]:
    """``n`` request bodies, each with a distinct 30-tool list (29 pool tools + 1 unique)."""
    pool = [_tool(f"pool_tool_{i}", i) for i in range(300)]
    out = []
    for r in range(n):
        tools = [pool[(r + j) % len(pool)] for j in range(29)] + [_tool(f"unique_tool_{r}", 1000 + r)]
        query = f"find the {_WORDS[r % len(_WORDS)]} and {_WORDS[(r * 5) % len(_WORDS)]} for me, please"
        out.append(json.dumps({"model": "soak", "messages": [{"role": "user", "content": query}],
                               "tools": tools}).encode())
    return out


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _start_proxy(upstream: str, method: str, k: int, log: Path) -> tuple[subprocess.Popen, str]:
    import httpx

    port = _free_port()
    cmd = [sys.executable, "-m", "router.cli", "serve", "openai", "--upstream", upstream, "--port", str(port),
           "-k", str(k), "--method", method, "--timeout", "120"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log.open("wb"), env=env, cwd=ROOT)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchmarkError(f"proxy exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise BenchmarkError("proxy did not become healthy within 180 s")


def run(out_dir: str | Path = DEFAULT_OUT, quick: bool = False, method: str = "hybrid", k: int = 5,
        requests: int | None = None) -> dict:
    """Run the soak; write results.json and report.md into ``out_dir``; return the results."""
    import httpx

    n = requests or (200 if quick else 2000)
    t0, load_before = time.perf_counter(), _loadavg()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reqs = bodies(n)
    window = max(1, n // 10)
    rows, lat, statuses = [], [], {}
    with tempfile.TemporaryDirectory(prefix="toolsift-soak-") as tmp:
        up_proc, upstream = _start_upstream(Path(tmp) / "upstream.log")
        try:
            proc, proxy = _start_proxy(upstream, method, k, Path(tmp) / "proxy.log")
            try:
                start_rss = _rss_mb(proc.pid)
                with httpx.Client(timeout=300, headers={"content-type": "application/json",
                                                        "authorization": "Bearer sk-soak"}) as client:
                    for i, body in enumerate(reqs):
                        t = time.perf_counter()
                        r = client.post(f"{proxy}/v1/chat/completions", content=body)
                        lat.append((time.perf_counter() - t) * 1000)
                        statuses[str(r.status_code)] = statuses.get(str(r.status_code), 0) + 1
                        if (i + 1) % window == 0 or i + 1 == n:
                            part = lat[-window:]
                            rows.append({"requests": i + 1, "p50_ms": _pct(part, 0.5), "p95_ms": _pct(part, 0.95),
                                         "mean_ms": round(statistics.fmean(part), 2), "rss_mb": _rss_mb(proc.pid)})
                    metrics = client.get(f"{proxy}/metrics?format=json").json()
            finally:
                _stop(proc)
        finally:
            _stop(up_proc)
    first, last = rows[0], rows[-1]
    res = {"command": "toolsift bench proxy --soak" + (" --quick" if quick else "")
           + (f" --method {method}" if method != "hybrid" else "") + (f" -k {k}" if k != 5 else "")
           + (f" --soak-requests {requests}" if requests else ""),
           "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
           "load_average_1m": {"before": load_before, "after": _loadavg()}, "requests": n, "method": method, "k": k,
           "tools_per_request": 30, "statuses": statuses, "rss_mb_at_start": start_rss, "windows": rows,
           "rss_growth_mb": round((last["rss_mb"] or 0) - (first["rss_mb"] or 0), 1),
           "p50_ratio_last_to_first": round(last["p50_ms"] / first["p50_ms"], 2) if first["p50_ms"] else None,
           "caches": metrics.get("caches"), "seconds": round(time.perf_counter() - t0, 1)}
    (out / "results.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "report.md").write_text(report(res))
    return res


def report(res: dict) -> str:
    rows = [f"| {w['requests']} | {w['p50_ms']} | {w['p95_ms']} | {w['mean_ms']} | {w['rss_mb']} |"
            for w in res["windows"]]
    c = res.get("caches") or {}
    caches = [f"| {name} | {s.get('entries')} | {s.get('hits')} | {s.get('misses')} | {s.get('evictions')} |"
              for name, s in sorted(c.items())]
    return "\n".join([
        "# Proxy soak: distinct tool lists, RSS and latency", "",
        f"Command: `{res['command']}`  ", f"Machine: {res['machine']}  ",
        f"Load average (1 min) before / after: {res['load_average_1m']['before']} / "
        f"{res['load_average_1m']['after']}  ", f"Took {res['seconds']} s. Statuses: {res['statuses']}.", "",
        f"{res['requests']} sequential requests, {res['tools_per_request']} tools each (every list distinct, one "
        f"new tool per request), proxy k={res['k']}, method {res['method']}, no catalog. Proxy RSS at start "
        f"{res['rss_mb_at_start']} MB.", "",
        "| after request | latency p50 ms | p95 ms | mean ms | proxy RSS MB |", "|---|---|---|---|---|", *rows, "",
        f"RSS growth first → last window: {res['rss_growth_mb']} MB; latency p50 last / first window: "
        f"{res['p50_ratio_last_to_first']}.", "",
        "| cache (/metrics) | entries | hits | misses | evictions |", "|---|---|---|---|---|", *caches, ""])
