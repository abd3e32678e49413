"""Gorilla hallucination-audit reproduction: both checker modes over the 24 released response files.

    toolsift bench gorilla [--out DIR] [--quick]

Writes DIR/results.json and DIR/report.md: our Gorilla-compatible figures beside the
upstream ones (shared/data/README.md §1.5), the strict-mode table, a per-hub breakdown
of where the two modes disagree, strict-mode throughput and wall time.
"""
from __future__ import annotations

import json
import os
import platform
import time
from collections import Counter
from pathlib import Path
from typing import Any


from ..data.shared_data import data_dir

ROOT = Path(__file__).resolve().parents[2]
HUBS = {  # namespace -> (API database, APIBench eval file)
    "torchhub": ("torchhub_api.jsonl", "torchhub_eval.json"),
    "tensorflowhub": ("tensorflowhub_api.jsonl", "tensorflow_eval.json"),
    "huggingface": ("huggingface_api.jsonl", "huggingface_eval.json"),
}
VARIANTS = [f"{v}_{r}" for v in ("FT", "RT") for r in ("0_shot", "bm25", "gpt_index", "oracle")]
# Reference figures, not results: accuracy / hallucination (% of N) of the upstream
# ast_eval_{th,tf,hf}.py scorer on these files, copied from shared/data/README.md §1.5
# (tree_sitter 0.21.3 + tree-sitter-python 0.21.0). Our figures are computed below.
UPSTREAM: dict[str, dict[str, tuple[float, float]]] = {
    "torchhub": {"FT_0_shot": (75.81, 16.13), "FT_bm25": (44.62, 17.20), "FT_gpt_index": (77.42, 5.38),
                 "FT_oracle": (59.14, 39.25), "RT_0_shot": (0.00, 0.00), "RT_bm25": (50.00, 5.91),
                 "RT_gpt_index": (76.88, 3.23), "RT_oracle": (93.01, 6.99)},
    "tensorflowhub": {"FT_0_shot": (83.94, 5.26), "FT_bm25": (34.60, 20.73), "FT_gpt_index": (52.85, 19.27),
                      "FT_oracle": (82.92, 13.28), "RT_0_shot": (0.00, 100.00), "RT_bm25": (41.90, 2.77),
                      "RT_gpt_index": (64.96, 2.19), "RT_oracle": (93.87, 2.34)},
    "huggingface": {"FT_0_shot": (69.36, 10.95), "FT_bm25": (10.62, 47.68), "FT_gpt_index": (25.55, 42.48),
                    "FT_oracle": (43.47, 53.76), "RT_0_shot": (89.49, 6.42), "RT_bm25": (15.71, 6.42),
                    "RT_gpt_index": (43.47, 7.96), "RT_oracle": (89.27, 6.97)},
}
TOLERANCE = 1.0  # points, per cell (issue 4)
QUICK_N = 40     # responses per file in --quick mode


def shared_dir() -> Path:
    return data_dir("gorilla", what="Gorilla")


def response_file(hub: str, variant: str) -> Path:
    return shared_dir() / "eval-data" / "responses" / hub / f"response_{hub}_Gorilla_{variant}.jsonl"


def load_hub(hub: str) -> tuple[Any, dict[int, dict[str, Any]]]:
    """(CodeIndex over the hub's API database in file order, gold by question id)."""
    from apidb.loaders import load
    from checker.audit import read_gold
    from checker.code import CodeIndex

    api_file, eval_file = HUBS[hub]
    records = load(shared_dir() / "api" / api_file).records  # loader keeps first-occurrence order
    return CodeIndex(records, hub), read_gold(shared_dir() / "apibench" / eval_file)


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100 * x, 2)


def audit_file(index: Any, gold: dict, hub: str, variant: str, quick: bool) -> dict[str, Any]:
    from checker.audit import audit, read_jsonl

    rows = read_jsonl(response_file(hub, variant), "responses")
    if quick:
        rows = rows[:QUICK_N]
    t0 = time.perf_counter()
    g = audit(rows, index, gold, "gorilla")
    t1 = time.perf_counter()
    s = audit(rows, index, gold, "strict")
    t2 = time.perf_counter()
    pairs = Counter((a["verdict"], b["verdict"]) for a, b in zip(g.rows, s.rows))
    examples: dict[str, dict[str, Any]] = {}
    for a, b, resp in zip(g.rows, s.rows, rows):
        k = f"{a['verdict']}->{b['verdict']}"
        if a["verdict"] != b["verdict"] and k not in examples:
            examples[k] = {"question_id": resp.get("question_id"), "gorilla_api": a.get("api"),
                           "strict_api": b.get("api"), "strict_call": (b.get("call") or "")[:160],
                           "differs": (b.get("differs") or "")[:200]}
    up_acc, up_hal = UPSTREAM[hub][variant]
    out = {"hub": hub, "variant": variant, "n": g.n,
           "gorilla": {"accuracy": _pct(g.accuracy), "hallucination": _pct(g.hallucination),
                       "error": _pct(g.error), "counts": dict(g.counts), "seconds": round(t1 - t0, 3)},
           "strict": {"accuracy": _pct(s.accuracy), "hallucination": _pct(s.hallucination),
                      "error": _pct(s.error), "counts": dict(s.counts), "seconds": round(t2 - t1, 3)},
           "upstream": {"accuracy": up_acc, "hallucination": up_hal},
           "pairs": {f"{a}->{b}": n for (a, b), n in sorted(pairs.items())},
           "examples": examples}
    if not quick:
        out["diff"] = {"accuracy": round(out["gorilla"]["accuracy"] - up_acc, 2),
                       "hallucination": round(out["gorilla"]["hallucination"] - up_hal, 2)}
    return out


def strict_throughput(index_by_hub: dict[str, Any], quick: bool) -> dict[str, Any]:
    """Strict-mode code checks per second on one core, parse cache cleared (every answer parsed)."""
    from checker.audit import read_jsonl
    from checker.parse import parse_calls

    texts = []
    for hub in HUBS:
        for variant in VARIANTS:
            rows = read_jsonl(response_file(hub, variant), "responses")[: QUICK_N if quick else None]
            texts += [(hub, r.get("text") or "") for r in rows]
    parse_calls.cache_clear()
    for idx in index_by_hub.values():
        idx._nearest.clear()
    t0, c0 = time.perf_counter(), time.process_time()
    for hub, text in texts:
        index_by_hub[hub].check(text)
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    # bare calls: every APIBench gold call checked against itself (cold parse cache)
    calls = []
    for hub, (_, eval_file) in HUBS.items():
        rows = read_jsonl(shared_dir() / "apibench" / eval_file, "gold answers")[: QUICK_N if quick else None]
        calls += [(hub, r.get("api_call") or "") for r in rows]
    parse_calls.cache_clear()
    t1, c1 = time.perf_counter(), time.process_time()
    for hub, call in calls:
        index_by_hub[hub].check(call, call)
    took_calls, cpu_calls = time.perf_counter() - t1, time.process_time() - c1
    # per CPU second of this process = per core; wall-clock figures also kept (they
    # include time other processes on a shared machine take from us)
    return {"answers": len(texts), "seconds": round(took, 3), "cpu_seconds": round(cpu, 3),
            "answers_per_second": round(len(texts) / cpu, 1), "answers_per_wall_second": round(len(texts) / took, 1),
            "gold_calls": len(calls), "gold_calls_seconds": round(took_calls, 3),
            "calls_per_second": round(len(calls) / cpu_calls, 1),
            "calls_per_wall_second": round(len(calls) / took_calls, 1),
            "load_average": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}


def run(out_dir: Path | str, quick: bool = False) -> dict[str, Any]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    from checker.gorilla_compat import GorillaDB

    start = time.perf_counter()
    files, indexes = [], {}
    for hub in HUBS:
        index, gold = load_hub(hub)
        indexes[hub] = index
        for variant in VARIANTS:
            files.append(audit_file(index, gold, hub, variant, quick))
    audit_seconds = time.perf_counter() - start
    throughput = strict_throughput(indexes, quick)
    backend = GorillaDB([], "hf").backend
    diffs = [abs(v) for f in files for v in f.get("diff", {}).values()]
    results = {
        "command": "toolsift bench gorilla" + (" --quick" if quick else ""),
        "quick": quick, "gorilla_backend": backend, "tolerance_points": TOLERANCE,
        "max_abs_diff": max(diffs) if diffs else None,
        "within_tolerance": (max(diffs) <= TOLERANCE) if diffs else None,
        "audit_seconds_both_modes": round(audit_seconds, 2),
        "strict_throughput": throughput,
        "wall_seconds": round(time.perf_counter() - start, 2),
        "versions": {"python": platform.python_version()},
        "files": files,
        "disagreements_by_hub": _by_hub(files),
    }
    (out_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(render(results), encoding="utf-8")
    return results


def _by_hub(files: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, Counter] = {}
    for f in files:
        c = out.setdefault(f["hub"], Counter())
        for pair, n in f["pairs"].items():
            a, b = pair.split("->")
            if a != b:
                c[pair] += n
    return {hub: dict(c.most_common()) for hub, c in out.items()}


_MEANING = {
    "correct->wrong_api": "credited by domain, but names a different API than the gold one",
    "correct->hallucinated": "substring match accepted a call to an API that is not in the catalog",
    "correct->unparsable": "upstream matched text that holds no call",
    "wrong_api->hallucinated": "substring match found some entry; the exact call is not in the catalog",
    "wrong_api->correct": "exact gold API, but upstream's first matching entry has another domain",
    "hallucinated->correct": "upstream missed the call (cut text / tree-sitter recovery); it is the gold API",
    "hallucinated->wrong_api": "upstream missed the call; it is a real API, not the gold one",
    "hallucinated->unparsable": "no call at all (upstream counts it as hallucinated)",
    "unparsable->correct": "no 'api_call' key (TorchHub scorer skips it); the code holds the gold call",
    "unparsable->hallucinated": "no 'api_call' key (TorchHub scorer skips it); the code calls no real API",
    "unparsable->wrong_api": "no 'api_call' key (TorchHub scorer skips it); the code calls another real API",
    "wrong_api->unparsable": "upstream matched key-argument substrings in text that holds no call",
}


def render(r: dict[str, Any]) -> str:
    from benchmarks.report import md_table

    fmt = lambda x: "–" if x is None else f"{x:.2f}"  # noqa: E731
    parts = ["# Gorilla hallucination audit: Gorilla-compatible vs upstream, and strict", "",
             f"Command: `{r['command']}`  ", f"Wall time: {r['wall_seconds']:.1f} s "
             f"(both modes over all files: {r['audit_seconds_both_modes']:.1f} s)  ",
             f"Gorilla-mode parser backend: {r['gorilla_backend']}", ""]
    if r["quick"]:
        parts += [f"**Quick run**: first {QUICK_N} responses per file; not comparable with upstream.", ""]
    else:
        parts += [f"Max |ours − upstream| over all 48 cells: **{fmt(r['max_abs_diff'])} points** "
                  f"(tolerance {TOLERANCE}).", ""]
    parts += ["## Gorilla-compatible mode vs upstream (accuracy / hallucination, % of N)", ""]
    rows = []
    for f in r["files"]:
        g, u = f["gorilla"], f["upstream"]
        d = f.get("diff", {})
        rows.append([f["hub"], f["variant"], f["n"], f"{fmt(g['accuracy'])} / {fmt(g['hallucination'])}",
                     f"{fmt(u['accuracy'])} / {fmt(u['hallucination'])}",
                     f"{fmt(d.get('accuracy'))} / {fmt(d.get('hallucination'))}"])
    parts += [md_table(["hub", "variant", "N", "ours", "upstream", "diff"], rows), ""]
    parts += ["## Strict mode (exact API identity against the catalog)", ""]
    rows = []
    for f in r["files"]:
        s, c = f["strict"], f["strict"]["counts"]
        rows.append([f["hub"], f["variant"], f["n"], fmt(s["accuracy"]), fmt(s["hallucination"]), fmt(s["error"]),
                     c.get("wrong_api", 0), c.get("unparsable", 0)])
    parts += [md_table(["hub", "variant", "N", "accuracy %", "hallucination %", "error %", "wrong_api",
                        "unparsable"], rows), ""]
    parts += ["## Where the modes disagree (Gorilla-compatible → strict), all files of a hub", ""]
    rows = []
    for hub, pairs in r["disagreements_by_hub"].items():
        for pair, n in pairs.items():
            rows.append([hub, pair, n, _MEANING.get(pair, "")])
    parts += [md_table(["hub", "gorilla → strict", "answers", "what it means"], rows), ""]
    tp = r["strict_throughput"]
    parts += ["## Throughput", "",
              f"Strict-mode code checking on one core (per CPU second of the process), parse cache cleared "
              f"at the start: **{tp['answers_per_second']:.0f} raw answers/s** ({tp['answers']} released "
              f"responses, each extracted, parsed, repaired and matched; {tp['cpu_seconds']:.2f} CPU s, "
              f"{tp['seconds']:.2f} s wall) and **{tp['calls_per_second']:.0f} calls/s** on the "
              f"{tp['gold_calls']} APIBench gold calls, each checked against itself as gold "
              f"({tp['calls_per_wall_second']:.0f}/s wall). Load average during the run: "
              f"{tp['load_average']} on {tp['cpus']} CPUs.", ""]
    return "\n".join(parts)
