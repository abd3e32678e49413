"""Leave-one-family-out: does MiniLM tuned on the *other* benchmark families route a new one better?

Issue 18 asks for a general tool encoder that lifts a catalog nobody labelled. This benchmark
measures the figure that matters for it, what a user's new catalog sees: the bundled MiniLM is
tuned (`router.tune.tune`, in-batch negatives) on labelled queries of every family except one,
and the router with that encoder is scored on the left-out family beside the base router. No
query, tool or catalog of the scored family is seen by training.

Training queries per dataset: its published training split where there is one (APIBench
TorchHub), else its queries; at most ``per_family`` of them per dataset (a seeded draw), each
paired with every relevant tool. The tuned model is cached by its spec (datasets, draw, settings)
under the cache folder, like ``bench tuning``'s. Default fusion weights are kept: nothing is
fitted on the scored family.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from .errors import BenchmarkError

RESULTS = Path(__file__).parent / "results" / "general_encoder"
FAMILIES: dict[str, tuple[str, ...]] = {
    "stabletoolbench": tuple(f"stabletoolbench_{f}" for f in ("G1_instruction", "G1_category", "G1_tool",
                                                              "G2_instruction")),
    "apibench": ("apibench_torchhub", "apibench_tensorflowhub", "apibench_huggingface"),
    "metatool": ("metatool_single", "metatool_multi"),
    "restbench": ("restbench_tmdb", "restbench_spotify"),
    "livemcpbench": ("livemcpbench",),
    "seal_tools": ("seal_tools",),
    "bfcl_live": ("bfcl_live_multiple",),
}
PER_FAMILY = 400  # training queries drawn per dataset (4,540 pairs when StableToolBench is left out)
QUICK_PER_FAMILY, QUICK_SCORED = 8, 40
METHODS = ("hybrid", "dense")


def training_set(leave_out: str, per_family: int, seed: int = 0) -> tuple[list[Any], list[tuple[str, str]], dict]:
    """(records of every other family, (query, record id) pairs, pairs per dataset)."""
    from .datasets import apibench_training, load_dataset

    rng = random.Random(seed)
    records, examples, seen, counts = [], [], set(), {}
    for family, names in FAMILIES.items():
        if family == leave_out:
            continue
        for name in names:
            d = load_dataset(name)
            queries = list(apibench_training("torchhub") if name == "apibench_torchhub" else d.queries)
            rng.shuffle(queries)
            ids = {r.id for r in d.records}
            for r in d.records:
                if r.id not in seen:
                    seen.add(r.id)
                    records.append(r)
            pairs = [(q.text, rid) for q in queries[:per_family] for rid in sorted(q.relevant) if rid in ids]
            examples += pairs
            counts[name] = len(pairs)
    return records, examples, counts


def _model(records: list[Any], examples: list[tuple[str, str]], config: Any) -> tuple[str, float | None]:
    """The tuned folder for these pairs (trained now unless an earlier run cached it), and seconds."""
    from router.dense import default_cache_dir
    from router.tune import tune

    spec = json.dumps([examples, vars(config)], sort_keys=True)
    folder = default_cache_dir() / "general" / hashlib.sha256(spec.encode()).hexdigest()[:12]
    if (folder / "config.json").is_file():
        return str(folder), None
    report = tune(records, examples, folder, config=config)
    return str(folder), report.seconds


def _scores(router: Any, queries: list[Any], method: str) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    from . import router_targets as rt

    run = rt._run(router, queries, k=10, method=method)
    qrels = Qrels({q.id: {r: 1 for r in q.relevant} for q in queries})
    out = {k: round(float(v), 4) for k, v in evaluate(qrels, Run(run), ["ndcg@5", "recall@5", "recall@10"]).items()}
    out["all_gold@10"] = round(sum(set(q.relevant) <= set(run[q.id]) for q in queries) / len(queries), 4)
    return out


def run(out_dir: str | os.PathLike[str] | None = None, quick: bool = False, leave_out: str = "stabletoolbench",
        per_family: int | None = None) -> dict[str, Any]:
    from router import Router
    from router.tune import TuneConfig

    from .datasets import load_dataset

    if leave_out not in FAMILIES:
        raise BenchmarkError(f"--leave-out: unknown family {leave_out!r} (choose from: {', '.join(FAMILIES)})")
    per = per_family or (QUICK_PER_FAMILY if quick else PER_FAMILY)
    out = Path(out_dir) if out_dir else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    t0, load_start = time.perf_counter(), [round(x, 2) for x in os.getloadavg()]
    config = TuneConfig(epochs=1)
    records, examples, counts = training_set(leave_out, per)
    model, seconds = _model(records, examples, config)
    rows = []
    for name in FAMILIES[leave_out][:1] if quick else FAMILIES[leave_out]:
        d = load_dataset(name)
        queries = d.queries[:QUICK_SCORED] if quick else d.queries
        base, tuned = Router(d.records), Router(d.records, model=model)
        for m in METHODS:
            rows.append({"dataset": name, "method": m, "queries": len(queries),
                         "base": _scores(base, queries, m), "tuned": _scores(tuned, queries, m)})
        print(f"{name}: hybrid nDCG@5 {rows[-2]['base']['ndcg@5']:.3f} -> {rows[-2]['tuned']['ndcg@5']:.3f}",
              flush=True)
    res = {"command": "toolsift bench general-encoder" + (" --quick" if quick else "")
           + (f" --leave-out {leave_out}" if leave_out != "stabletoolbench" else "")
           + (f" --per-family {per_family}" if per_family else ""),
           "quick": quick, "left_out": leave_out, "scored": [r["dataset"] for r in rows[::len(METHODS)]],
           "trained_on": counts, "pairs": len(examples), "training_records": len(records),
           "config": vars(config), "model": f"<cache>/general/{Path(model).name}", "training_seconds": seconds,
           "rows": rows, "wall_seconds": round(time.perf_counter() - t0, 1),
           "load_average": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]}}
    (out / "results.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    write_report(res, out / "report.md")
    return res


def mean_score(rows: list[dict], method: str, side: str, metric: str) -> float:
    vals = [r[side][metric] for r in rows if r["method"] == method]
    return round(sum(vals) / len(vals), 4)


def write_report(res: dict[str, Any], path: Path) -> None:
    metrics = ("ndcg@5", "recall@5", "recall@10", "all_gold@10")
    trained = ", ".join(f"{k} {v}" for k, v in res["trained_on"].items())
    took = f"{res['training_seconds']:.0f} s" if res["training_seconds"] else "cached by an earlier run"
    lines = [f"# Leave-one-family-out: MiniLM tuned without {res['left_out']}, scored on it", "",
             f"Command: `{res['command']}` ({res['wall_seconds']:.0f} s; load average {res['load_average']['start']} "
             f"→ {res['load_average']['end']} on {os.cpu_count()} CPUs).", "",
             f"Tuned on {res['pairs']:,} (query, tool) pairs from every other family ({trained}), "
             f"{res['training_records']:,} tools, one epoch (`router.tune`, settings {json.dumps(res['config'])}); "
             f"training: {took}; model {res['model']}. Nothing of {res['left_out']} is seen by training, and the "
             "default fusion weights are kept. `base` = the shipped router (bundled MiniLM), `tuned` = the same "
             "router with the tuned encoder.", "",
             "| dataset | method | queries | " + " | ".join(f"{m} base → tuned" for m in metrics) + " |",
             "|---|---|---|" + "---|" * len(metrics)]
    for r in res["rows"]:
        lines.append(f"| {r['dataset']} | {r['method']} | {r['queries']} | "
                     + " | ".join(f"{r['base'][m]:.3f} → {r['tuned'][m]:.3f}" for m in metrics) + " |")
    for m in METHODS:
        lines.append(f"| **mean** | {m} | | " + " | ".join(
            f"**{mean_score(res['rows'], m, 'base', k):.3f} → {mean_score(res['rows'], m, 'tuned', k):.3f}**" for k in metrics)
            + " |")
    lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
