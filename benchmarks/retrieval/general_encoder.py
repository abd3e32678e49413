"""The general tool encoder (issue 18), scored only on queries it was not trained on.

Two figures, both beside the untuned router (the bundled all-MiniLM-L6-v2, `base`):

- **cross-fitted** (default): every dataset of every family, each query scored by a model that
  never saw it. Two models are trained with the shipped recipe (benchmarks/retrieval/general_training.py),
  one on the `dev` half of every dataset's queries and one on the `test` half (router_targets'
  sha1 draw); the `dev` half is scored by the `test` model and the other way round. APIBench
  TorchHub trains on its published training split in both, so its evaluation questions are
  never trained on. This is what the shipped model (trained on all of them) is estimated by.
- **leave-one-family-out** (``--leave-out FAMILY``): one model trained on every other family,
  scored on that one — what a user's new catalog sees. Nothing of the family is trained on.

The default fusion weights are kept, and the general encoder is scored at its own fusion depth
(router.ranking.config.GENERAL_ENCODER_DEPTH): nothing is fitted on scored queries. Cross-fitting also
asks whether the general encoder would route better with another depth or other weights,
choosing them on one half and scoring the other (benchmarks/retrieval/general_fusion.py). Models are cached by their training
spec under ``<cache>/general/`` (see general_training.train).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import BenchmarkError
from .general_training import FAMILIES

RESULTS = Path(__file__).parents[1] / "results" / "general_encoder"
QUICK_PER_DATASET, QUICK_SCORED = 8, 40
QUICK_CROSS_FIT = ("restbench_tmdb", "livemcpbench")
# --quick trains on these small catalogs only: mining hard negatives over all 9,269 tools would
# embed them all first, minutes on a fresh cache for a pipeline check
QUICK_TRAIN = ("restbench_tmdb", "restbench_spotify", "livemcpbench", "metatool_single")
METHODS = ("hybrid", "dense")
METRICS = ("ndcg@5", "recall@5", "recall@10", "all_gold@10")


def _scores(run: dict[str, dict[str, float]], queries: list[Any]) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels({q.id: {r: 1 for r in q.relevant} for q in queries})
    out = {k: round(float(v), 4) for k, v in evaluate(qrels, Run(run), ["ndcg@5", "recall@5", "recall@10"]).items()}
    out["all_gold@10"] = round(sum(set(q.relevant) <= set(run[q.id]) for q in queries) / len(queries), 4)
    return out


def _run(router: Any, queries: list[Any], method: str) -> dict[str, dict[str, float]]:
    from . import targets as rt

    return rt._run(router, queries, k=10, method=method)


def _scored(d: Any, quick: bool) -> list[Any]:
    return d.queries[:QUICK_SCORED] if quick else d.queries


def cross_fit_rows(models: dict[str, str], datasets: list[str], quick: bool) -> list[dict[str, Any]]:
    """Per dataset and method: base scores, and the general encoder's with each half scored by
    the model trained on the other half (``models``: half trained on → folder)."""
    from router import Router
    from router.ranking.config import general_encoder_config
    from router.encoders.model import BASE_MODEL

    from ..data.datasets import load_dataset
    from ..data.halves import half_of as _half

    other = {"dev": "test", "test": "dev"}
    rows = []
    for name in datasets:
        d = load_dataset(name)
        queries = _scored(d, quick)
        base = Router(d.records, model=BASE_MODEL)
        halves = {h: [q for q in queries if _half(q.id, name) == h] for h in other}
        tuned = {h: Router(d.records, model=models[other[h]], config=general_encoder_config()) for h in other}
        for m in METHODS:
            run = {}
            for h, qs in halves.items():
                run.update(_run(tuned[h], qs, m))
            rows.append({"dataset": name, "method": m, "queries": len(queries),
                         "scored_by": {h: f"model trained on {other[h]} ({len(qs)} queries)" for h, qs in halves.items()},
                         "base": _scores(_run(base, queries, m), queries), "tuned": _scores(run, queries)})
        print(f"{name}: hybrid nDCG@5 {rows[-2]['base']['ndcg@5']:.3f} -> {rows[-2]['tuned']['ndcg@5']:.3f}",
              flush=True)
    return rows


def lofo_rows(model: str, datasets: list[str], quick: bool) -> list[dict[str, Any]]:
    from router import Router
    from router.ranking.config import general_encoder_config
    from router.encoders.model import BASE_MODEL

    from ..data.datasets import load_dataset

    rows = []
    for name in datasets:
        d = load_dataset(name)
        queries = _scored(d, quick)
        base = Router(d.records, model=BASE_MODEL)
        tuned = Router(d.records, model=model, config=general_encoder_config())
        for m in METHODS:
            rows.append({"dataset": name, "method": m, "queries": len(queries),
                         "base": _scores(_run(base, queries, m), queries),
                         "tuned": _scores(_run(tuned, queries, m), queries)})
        print(f"{name}: hybrid nDCG@5 {rows[-2]['base']['ndcg@5']:.3f} -> {rows[-2]['tuned']['ndcg@5']:.3f}",
              flush=True)
    return rows


def run(out_dir: str | os.PathLike[str] | None = None, quick: bool = False, leave_out: str | None = None,
        per_dataset: int | None = None) -> dict[str, Any]:
    from .general_training import PER_DATASET, SHIPPED_RANK, shipped_form, train

    if leave_out is not None and leave_out not in FAMILIES:
        raise BenchmarkError(f"--leave-out: unknown family {leave_out!r} (choose from: {', '.join(FAMILIES)})")
    per = per_dataset or (QUICK_PER_DATASET if quick else PER_DATASET)
    out = Path(out_dir) if out_dir else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    weights: list[dict[str, Any]] = []
    t0, load_start = time.perf_counter(), [round(x, 2) for x in os.getloadavg()]
    only = QUICK_TRAIN if quick else None
    if leave_out is None:
        trained = {h: train(h, per, only=only) for h in ("dev", "test")}
        models = {h: shipped_form(folder) for h, (folder, _) in trained.items()}
        datasets = list(QUICK_CROSS_FIT) if quick else [n for names in FAMILIES.values() for n in names]
        rows = cross_fit_rows(models, datasets, quick)
        training = {h: info for h, (_, info) in trained.items()}
        if not quick:  # the grid objective needs StableToolBench and APIBench
            from .general_fusion import weight_rows

            weights = weight_rows(models, datasets, lambda r, qs: _scores(_run(r, qs, "hybrid"), qs))
    else:
        folder, info = train(None, per, leave_out=leave_out, only=only)
        names = FAMILIES[leave_out]
        rows = lofo_rows(shipped_form(folder), list(names[:1] if quick else names), quick)
        training = {"all but " + leave_out: info}
    command = ("toolsift bench general-encoder" + (" --quick" if quick else "")
               + (f" --leave-out {leave_out}" if leave_out else "") + (f" --per-dataset {per_dataset}" if per_dataset else ""))
    res = {"command": command, "quick": quick, "mode": "leave-one-family-out" if leave_out else "cross-fitted",
           "left_out": leave_out, "scored": [r["dataset"] for r in rows[::len(METHODS)]], "training": training,
           "scored_as": f"rank-{SHIPPED_RANK} delta over the base model, as shipped", "rows": rows,
           "weight_grid": weights, "fusion": _fusion(), "wall_seconds": round(time.perf_counter() - t0, 1),
           "load_average": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]}}
    (out / "results.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    write_report(res, out / "report.md")
    return res


def mean_score(rows: list[dict], method: str, side: str, metric: str, family: str | None = None) -> float:
    names = FAMILIES.get(family or "", ())
    vals = [r[side][metric] for r in rows if r["method"] == method and (not family or r["dataset"] in names)]
    return round(sum(vals) / len(vals), 4)


def _training_lines(res: dict[str, Any]) -> list[str]:
    lines = []
    for label, info in res["training"].items():
        took = f"{info['seconds']:,.0f} s" + (" (an earlier run; cached)" if info.get("cached") else "")
        sets = ", ".join(f"{k} {v}" for k, v in info["trained_on"].items())
        lines.append(f"- model trained on **{label}** (`<cache>/general/{info['spec']}`): {info['pairs']:,} "
                     f"(query, tool) pairs over {info['records']:,} tools ({sets}); training {took}.")
    return lines


def _epochs(config: dict[str, Any]) -> str:
    n = config["epochs"]
    return "one epoch" if n == 1 else f"{n} epochs"


def _fusion() -> dict[str, dict[str, Any]]:
    from router import RouterConfig
    from router.ranking.config import general_encoder_config

    return {side: {"weights": list(c.weights), "depth": c.depth}
            for side, c in (("base", RouterConfig()), ("tuned", general_encoder_config()))}


def _fusion_line(res: dict[str, Any]) -> str:
    f = res.get("fusion")
    if not f:  # a report written before the general encoder had its own depth
        return "default fusion weights in both."
    return (f"fusion weights {tuple(f['base']['weights'])} in both; fusion depth {f['base']['depth']} for `base`, "
            f"{f['tuned']['depth']} for `tuned` (each model's default, router.ranking.config.config_for_model).")


def write_report(res: dict[str, Any], path: Path) -> None:
    cross = res["mode"] == "cross-fitted"
    config = next(iter(res["training"].values()))["config"]
    title = ("# General tool encoder, cross-fitted: every query scored by a model that did not train on it" if cross
             else f"# Leave-one-family-out: the general encoder's recipe without {res['left_out']}, scored on it")
    how = ("Each dataset's queries are split in two halves (sha1 of dataset and query id, as in `bench router`); "
           "the `dev` half is scored by the model trained on the `test` halves and the other way round. "
           "APIBench TorchHub trains on its published training split in both models." if cross else
           f"Nothing of {res['left_out']} is seen by training.")
    lines = [title, "", f"Command: `{res['command']}` ({res['wall_seconds']:.0f} s; load average "
             f"{res['load_average']['start']} → {res['load_average']['end']} on {os.cpu_count()} CPUs).", "",
             how + f" Recipe (benchmarks/retrieval/general_training.py): {_epochs(config)}, batches grown along the base "
             "router's hard negatives, word embeddings frozen; settings "
             f"{json.dumps(config)}; each model is scored as it would "
             f"ship ({res['scored_as']}). `base` = the router with the untuned "
             "bundled all-MiniLM-L6-v2, `tuned` = the same router with the trained encoder; " + _fusion_line(res),
             "", *_training_lines(res), "",
             "| dataset | method | queries | " + " | ".join(f"{m} base → tuned" for m in METRICS) + " |",
             "|---|---|---|" + "---|" * len(METRICS)]
    for r in res["rows"]:
        lines.append(f"| {r['dataset']} | {r['method']} | {r['queries']} | "
                     + " | ".join(f"{r['base'][m]:.3f} → {r['tuned'][m]:.3f}" for m in METRICS) + " |")
    families = [f for f, names in FAMILIES.items() if any(r["dataset"] in names for r in res["rows"])]
    lines += ["", "Mean over each family's datasets (hybrid):", "",
              "| family | " + " | ".join(f"{m} base → tuned" for m in METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    for f in families:
        lines.append(f"| {f} | " + " | ".join(
            f"{mean_score(res['rows'], 'hybrid', 'base', m, f):.3f} → {mean_score(res['rows'], 'hybrid', 'tuned', m, f):.3f}"
            for m in METRICS) + " |")
    lines.append("")
    if res.get("weight_grid"):
        from .general_fusion import report_lines

        lines += report_lines(res["weight_grid"])
    path.write_text("\n".join(lines), encoding="utf-8")
