"""A new big tool list through the proxy: time to its first answer, and until it is ranked hybrid.

    toolsift bench proxy --new-list [--new-list-tools 10000] [-k 5]

Issue 42: a request bringing 10,000 tools the proxy had never seen waited ~59 s for its answer,
every tool being embedded first. The list here is real tools from the shared data, in a fixed
order: the StableToolBench, Seal-Tools, MetaTool, LiveMCPBench, APIBench, RestBench corpora, then
the function docs of every BFCL file, a name seen before being qualified by its source
(``bfcl_multiple__get_weather``), cut to ``--new-list-tools``. The proxy is the real
`toolsift serve openai --method hybrid` without a catalog, the upstream the scripted one, each in
its own process. One client sends the list with a real StableToolBench query and times the
answer (``x-toolsift-route`` says how it was ranked); then the same list with the next queries,
one request every 2 s, until the route header no longer says ``dense=``: the time from the first
request to that answer is when hybrid ranking took over. The last request's latency is the
warm hybrid one. The load average is printed: the box is shared, and the embedding's CPU is too.
"""
from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from ..errors import BenchmarkError
from .proxy_overhead import RESULTS, _loadavg, _start_upstream, _stop
from .proxy_soak import _rss_mb, _start_proxy

DEFAULT_OUT = RESULTS / "proxy_new_list"
SOURCES = ("stabletoolbench_G1_instruction", "seal_tools", "metatool_single", "livemcpbench", "apibench_huggingface",
           "apibench_tensorflowhub", "apibench_torchhub", "restbench_tmdb", "restbench_spotify")
POLL_SECONDS = 2.0
GIVE_UP_SECONDS = 900.0


def tool_list(n: int) -> list[dict]:
    """``n`` real tools with distinct names (see the module doc)."""
    from apidb.loaders import load
    from apidb.names import qualified_name

    from ..data.datasets import available, load_dataset
    from ..data.shared_data import data_root

    sources: list[tuple[str, list[Any]]] = [(name, load_dataset(name).records) for name in SOURCES if available(name)]
    for path in sorted((data_root() / "bfcl").glob("BFCL_v4_*.json")):
        sources.append((path.stem.removeprefix("BFCL_v4_").lower(), load(path).records))
    tools, seen = [], set()
    for source, records in sources:
        for r in records:
            tool = r.to_openai_tool()
            name = tool["function"]["name"]
            if name in seen:
                name = qualified_name(source, name)[:64]
                if name in seen:
                    continue
                tool["function"]["name"] = name
            seen.add(name)
            tools.append(tool)
            if len(tools) == n:
                return tools
    raise BenchmarkError(f"the shared data holds {len(tools)} distinct tools, fewer than the {n} asked for")


def _queries() -> list[str]:
    from ..data.datasets import load_dataset

    return [q.text for q in load_dataset(SOURCES[0]).queries]


def run(out_dir: str | Path = DEFAULT_OUT, n_tools: int = 10_000, k: int = 5) -> dict:
    """Send one new ``n_tools`` list through a fresh proxy (see the module doc); write results.json and
    report.md into ``out_dir``; return the results."""
    import httpx

    t0, load_before = time.perf_counter(), _loadavg()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tools, queries = tool_list(n_tools), _queries()

    def body(i: int) -> bytes:
        return json.dumps({"model": "new-list", "messages": [{"role": "user", "content": queries[i % len(queries)]}],
                           "tools": tools}).encode()

    answers: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="toolsift-new-list-") as tmp:
        up_proc, upstream = _start_upstream(Path(tmp) / "upstream.log")
        try:
            proc, proxy = _start_proxy(upstream, "hybrid", k, Path(tmp) / "proxy.log")
            try:
                with httpx.Client(timeout=GIVE_UP_SECONDS, headers={"content-type": "application/json",
                                                                     "authorization": "Bearer sk-new-list"}) as c:
                    start = time.perf_counter()
                    while True:
                        i = len(answers)
                        sent = time.perf_counter()
                        r = c.post(f"{proxy}/v1/chat/completions", content=body(i))
                        if r.status_code != 200:
                            raise BenchmarkError(f"request {i + 1}: HTTP {r.status_code}: {r.text[:300]}")
                        route = r.headers.get("x-toolsift-route", "")
                        answers.append({"request": i + 1, "sent_s": round(sent - start, 2),
                                        "latency_s": round(time.perf_counter() - sent, 3), "route": route,
                                        "rss_mb": _rss_mb(proc.pid), "load_1m": _loadavg()})
                        if "dense=" not in route:  # ranked hybrid (before issue 42: already the first)
                            break
                        if time.perf_counter() - start > GIVE_UP_SECONDS:
                            raise BenchmarkError(f"still not hybrid after {GIVE_UP_SECONDS:.0f} s: {route}")
                        time.sleep(POLL_SECONDS)
                    # one more: the warm hybrid latency of the same list
                    sent = time.perf_counter()
                    r = c.post(f"{proxy}/v1/chat/completions", content=body(len(answers)))
                    warm = {"latency_s": round(time.perf_counter() - sent, 3), "route": r.headers.get("x-toolsift-route")}
            finally:
                _stop(proc)
        finally:
            _stop(up_proc)
    first, hybrid = answers[0], answers[-1]
    res = {"command": "toolsift bench proxy --new-list" + (f" --new-list-tools {n_tools}" if n_tools != 10_000 else "")
           + (f" -k {k}" if k != 5 else ""),
           "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
           "load_average_1m": {"before": load_before, "after": _loadavg()}, "tools": n_tools, "k": k,
           "request_mb": round(len(body(0)) / 2**20, 2),
           "first_answer_s": first["latency_s"], "first_route": first["route"],
           "hybrid_after_s": round(hybrid["sent_s"] + hybrid["latency_s"], 2), "hybrid_route": hybrid["route"],
           "warm_hybrid_s": warm["latency_s"], "answers": answers, "seconds": round(time.perf_counter() - t0, 1)}
    (out / "results.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "report.md").write_text(report(res))
    return res


def report(res: dict) -> str:
    rows = [f"| {a['request']} | {a['sent_s']} | {a['latency_s']} | `{a['route']}` | {a['rss_mb']} | {a['load_1m']} |"
            for a in res["answers"]]
    if len(rows) > 12:
        rows = rows[:5] + [f"| … {len(rows) - 10} more | | | | | |"] + rows[-5:]
    return "\n".join([
        "# A new big tool list through the proxy", "",
        f"Command: `{res['command']}`  ", f"Machine: {res['machine']}  ",
        f"Load average (1 min) before / after: {res['load_average_1m']['before']} / "
        f"{res['load_average_1m']['after']}  ", f"Took {res['seconds']} s.", "",
        f"One list of {res['tools']} real tools ({res['request_mb']} MB per request) the proxy has never seen, "
        f"proxy k={res['k']}, method hybrid, no catalog.", "",
        f"- first answer: **{res['first_answer_s']} s**, `x-toolsift-route: {res['first_route']}`",
        f"- hybrid ranking from {res['hybrid_after_s']} s after the first request "
        f"(`{res['hybrid_route']}`)",
        f"- warm hybrid answer of the same list: {res['warm_hybrid_s']} s", "",
        "| request | sent at s | latency s | x-toolsift-route | proxy RSS MB | load 1m |",
        "|---|---|---|---|---|---|", *rows, ""])
