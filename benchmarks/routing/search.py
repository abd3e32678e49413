"""Routing and a tool search the model can call, side by side (issue 37).

    toolsift bench search [--quick] [--out DIR]

Labelled multi-tool queries (StableToolBench G2 / G1 instruction and MetaTool multi-tool, the dev
half of benchmarks/data/halves.py), each sent as one request carrying its corpus's every tool, as
the proxy receives it. A simulated model stands in for the LLM: it needs exactly the gold tools,
and when one of them is not among its tools and it has a search tool, it searches with its
request (the query text). Methods:

- all tools: every tool sent;
- routing: the proxy's routing alone (k=5; router/middleware/request.py);
- routing + search: routing, and one search round when a gold tool is missing: toolsift answers
  with its router (the next 5 tools the request brought; router/middleware/search.py);
- search only (toolsift): the providers' way — nothing sent up front but the search tool; up to
  two searches of 5, toolsift's router answering;
- search only (keyword): the same, answered the way gateways do today (OpenRouter, orq.ai, the
  Vercel AI SDK: regex / keyword matching over names, descriptions and parameter names), tools
  ranked by how many of the query's words they contain.

For each: the share of tasks whose gold tools were all offered by the end, gold recall, the
tokens of tool schemas per request (cl100k, router/tokens.py; the search tool counted), and
requests per task. Writes OUT/results.json and OUT/report.md (default benchmarks/results/search).
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Callable

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "search"
DATASETS = ("stabletoolbench_G2_instruction", "stabletoolbench_G1_instruction", "metatool_multi")
QUICK = ("stabletoolbench_G2_instruction",)
K, FOUND, MAX_SEARCHES = 5, 5, 2
MAX_QUERIES = 150  # per dataset, dev half, deterministic: two CPU cores shared by several jobs
_STOP = frozenset("the a an and or of to in on for with from by at is are be it this that me my i you your "
                  "can could would should please what which who how get give find also all any some".split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _STOP}


class KeywordSearch:
    """The gateways' search: a tool's score is how many query words its name, description and
    parameter names contain (a regex alternation of the words, counted)."""

    def __init__(self, tools: list[dict]) -> None:
        self.names = [t["function"]["name"] for t in tools]
        self.text = [_words(" ".join([t["function"]["name"].replace("_", " "), t["function"].get("description") or "",
                                      " ".join((t["function"].get("parameters") or {}).get("properties") or {})]))
                     for t in tools]

    def search(self, query: str, exclude: set[str], n: int) -> list[str]:
        q = _words(query)
        scored = sorted(((len(q & words), -i) for i, words in enumerate(self.text) if self.names[i] not in exclude),
                        reverse=True)
        return [self.names[-i] for s, i in scored[:n] if s > 0]


def _tasks(name: str, quick: bool) -> tuple[list[dict], list[tuple[str, set[str]]]]:
    from apidb.names import unique_names

    from ..data.datasets import load_dataset
    from ..data.halves import half_of

    d = load_dataset(name)
    names = unique_names(d.records)
    tools = [r.to_openai_tool(name=n) for r, n in zip(d.records, names)]
    by_id = dict(zip((r.id for r in d.records), names))
    tasks = [(q.text, {by_id[i] for i in q.relevant if i in by_id}) for q in d.queries
             if half_of(q.id, name) == "dev" and len(q.relevant) > 1]
    return tools, [t for t in tasks if t[1]][: (20 if quick else MAX_QUERIES)]


def evaluate(tools: list[dict], tasks: list[tuple[str, set[str]]], method: str,
             ) -> tuple[dict[str, dict[str, float]], int]:
    """The rows of each method, and how many requests routing ranked without their dense side."""
    from router.middleware.request import RequestRouter
    from router.middleware.search import chat_search_tool
    from router.tokens import tool_tokens

    # the whole list embedded on the first request, as a proxy that has seen it holds it: left to the
    # background (lists over INLINE_MAX), early requests ranked by BM25 alone, as many as the machine's
    # load and the vector cache decided (a run after a new encoder: StableToolBench 75 % -> 58 %)
    rr = RequestRouter(k=K, method=method, embed_inline=len(tools))
    keyword = KeywordSearch(tools)
    index = {t["function"]["name"]: t for t in tools}
    cost: dict[str, int] = {}

    def tokens(names: list[str]) -> int:
        for n in names:
            if n not in cost:
                cost[n] = tool_tokens(index[n])
        return sum(cost[n] for n in names)

    search_cost = tool_tokens(chat_search_tool())
    every = [t["function"]["name"] for t in tools]
    rows: dict[str, list[tuple[bool, float, list[int]]]] = {m: [] for m in METHODS}
    without_dense = 0
    for text, gold in tasks:
        body = {"messages": [{"role": "user", "content": text}], "tools": tools}
        decision = rr.route(body)
        without_dense += "dense" in decision.extra
        routed = [s["name"] for s in decision.selected]
        rows["all tools"].append(_score(gold, every, [tokens(every)]))
        rows["routing"].append(_score(gold, routed, [tokens(routed)]))
        sent = [tokens(routed) + search_cost]
        offered = list(routed)
        if not gold <= set(offered):
            offered += rr.search(tools, text, set(offered), FOUND)
            sent.append(tokens(offered) + search_cost)
        rows["routing + search"].append(_score(gold, offered, sent))
        for label, find in (("search only (toolsift)", lambda q, ex: rr.search(tools, q, ex, FOUND)),
                            ("search only (keyword)", lambda q, ex: keyword.search(q, ex, FOUND))):
            rows[label].append(_search_only(gold, text, find, tokens, search_cost))
    return {m: _summary(r) for m, r in rows.items()}, without_dense


def _search_only(gold: set[str], text: str, find: Callable[[str, set[str]], list[str]],
                 tokens: Callable[[list[str]], int], search_cost: int) -> tuple[bool, float, list[int]]:
    offered: list[str] = []
    sent = [search_cost]
    for _ in range(MAX_SEARCHES):
        offered += find(text, set(offered))
        sent.append(tokens(offered) + search_cost)
        if gold <= set(offered):
            break
    return _score(gold, offered, sent)


def _score(gold: set[str], offered: list[str], sent: list[int]) -> tuple[bool, float, list[int]]:
    have = gold & set(offered)
    return gold <= set(offered), len(have) / len(gold), sent


def _summary(rows: list[tuple[bool, float, list[int]]]) -> dict[str, float]:
    requests = [len(sent) for _, _, sent in rows]
    return {"all_gold": round(sum(ok for ok, _, _ in rows) / len(rows), 4),
            "recall": round(sum(r for _, r, _ in rows) / len(rows), 4),
            "tokens_per_request": round(sum(sum(s) for _, _, s in rows) / sum(requests), 1),
            "requests_per_task": round(sum(requests) / len(rows), 3)}


METHODS = ("all tools", "routing", "routing + search", "search only (toolsift)", "search only (keyword)")


def run(out: Path | None = None, quick: bool = False, method: str | None = None) -> dict[str, Any]:
    from ..data.datasets import available
    from ..errors import BenchmarkError

    out = Path(out or DEFAULT_OUT)
    method = method or ("bm25" if quick else "hybrid")
    names = [n for n in (QUICK if quick else DATASETS) if available(n)]
    if not names:
        raise BenchmarkError("no labelled multi-tool data under ../shared/data (StableToolBench, MetaTool)")
    t0 = time.time()
    results: dict[str, Any] = {"method": method, "k": K, "found_per_search": FOUND, "max_searches": MAX_SEARCHES,
                               "quick": quick, "datasets": {}}
    for name in names:
        tools, tasks = _tasks(name, quick)
        rows, without_dense = evaluate(tools, tasks, method)
        results["datasets"][name] = {"tools": len(tools), "tasks": len(tasks), "rows": rows,
                                     "routed_without_dense": without_dense}
    results["wall_seconds"] = round(time.time() - t0, 1)
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(report(results), encoding="utf-8")
    return results


def report(results: dict[str, Any]) -> str:
    lines = [f"# Routing and a tool search the model can call (k={results['k']}, {results['method']})", "",
             "A simulated model needs exactly the gold tools and searches with its request when one is "
             f"missing ({results['found_per_search']} tools per search, at most {results['max_searches']} "
             "searches in the search-only rows). Dev half of each dataset's multi-tool queries.", ""]
    for name, d in results["datasets"].items():
        lines += [f"## {name} ({d['tasks']} tasks, {d['tools']:,} tools per request)", "",
                  "| method | all gold offered | gold recall | tool tokens / request | requests / task |",
                  "|---|---:|---:|---:|---:|"]
        for m, r in d["rows"].items():
            lines.append(f"| {m} | {r['all_gold']:.1%} | {r['recall']:.1%} | {r['tokens_per_request']:,.0f} | "
                         f"{r['requests_per_task']:.2f} |")
        if d.get("routed_without_dense"):
            lines.append(f"{d['routed_without_dense']} requests routed by BM25 alone (the list's vectors not ready).")
        lines.append("")
    lines.append(f"{results['wall_seconds']} s; load average {results['load_average']}.")
    return "\n".join(lines) + "\n"
