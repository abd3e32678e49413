"""Would the general encoder route better with its own hybrid fusion weights? (part of `bench general-encoder`)

A stronger dense side tends to want a larger share of the fused score: `toolsift tune` picks
the weights of each model it trains on held-out queries (router.tune.fit_weights), and per-hub
tuned models take (0.2, 0.8) on TorchHub. This measures the same question for the shipped
general encoder, cross-fitted (each half of every dataset's queries routed by the model
trained on the other half), on the router grid's terms (benchmarks/router_targets.py):
objective = mean(StableToolBench nDCG@5, APIBench Recall@5), base MiniLM's weights kept unless
another pair beats them by more than KEEP_DEFAULT_MARGIN.

A weight chosen on the queries it is scored on looks better than it is, so the choice is
nested: it is made on one half, and the other half is scored with it (both ways round). The
router keeps its weights unless that nested figure beats them.
"""
from __future__ import annotations

from typing import Any, Callable

from .general_training import FAMILIES

DENSE_GRID = (0.6, 0.65, 0.7, 0.75, 0.8)  # dense share of the fused score; 0.6 = RouterConfig's (0.4, 0.6)
HALVES = ("dev", "test")
OTHER = {"dev": "test", "test": "dev"}


def weight_rows(models: dict[str, str], datasets: list[str],
                score: Callable[[Any, list[Any]], dict[str, float]]) -> list[dict[str, Any]]:
    """Hybrid scores of every dense weight of the grid, per dataset and half of its queries, each
    half routed by the model trained on the other half (``models``: half trained on → folder),
    exactly as the report's main table routes them (a plain Router, its own query encoding).
    ``score(router, queries)``: the main table's hybrid metrics (passed in: general_encoder
    imports this module)."""
    from router import Router, RouterConfig

    from .datasets import load_dataset
    from .halves import half_of

    rows = []
    for name in datasets:
        d = load_dataset(name)
        for half in HALVES:
            queries = [q for q in d.queries if half_of(q.id, name) == half]
            router = Router(d.records, model=models[OTHER[half]], config=RouterConfig())
            for wd in DENSE_GRID:
                tried = router.configured(weights=(round(1 - wd, 2), wd))
                rows.append({"dataset": name, "half": half, "dense_weight": wd, "queries": len(queries),
                             **score(tried, queries)})
    return rows


def _per_dataset(rows: list[dict[str, Any]], pick: dict[str, float]) -> dict[str, dict[str, float]]:
    """All queries of each dataset, each half scored at the dense weight ``pick`` gives it."""
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["dataset"] for r in rows):
        parts = [r for r in rows if r["dataset"] == name and r["dense_weight"] == pick[r["half"]]]
        n = sum(r["queries"] for r in parts)
        out[name] = {m: sum(r[m] * r["queries"] for r in parts) / n for m in ("ndcg@5", "recall@5")}
    return out


def choose(rows: list[dict[str, Any]], half: str) -> float:
    """The dense weight the grid's rule (router_targets._pick) picks on ``half``'s objective."""
    from .router_targets import _pick, objective

    scored = [{"dense_weight": wd, **objective({r["dataset"]: r for r in rows
                                                 if r["dense_weight"] == wd and r["half"] == half})}
              for wd in DENSE_GRID]
    return _pick(scored, lambda e: e["dense_weight"] == DENSE_GRID[0])["dense_weight"]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per weight (both halves at it) and nested (each half at the weight chosen on the other):
    the objective, each family's mean nDCG@5 and each APIBench hub's Recall@5."""
    from .router_targets import objective

    def describe(pick: dict[str, float]) -> dict[str, Any]:
        per = _per_dataset(rows, pick)
        fam = {f: sum(per[n]["ndcg@5"] for n in names) / len(names)
               for f, names in FAMILIES.items() if all(n in per for n in names)}
        return {"objective": objective(per)["objective"], "family_ndcg@5": fam,
                "recall@5": {n: v["recall@5"] for n, v in per.items() if n.startswith("apibench_")}}

    chosen = {h: choose(rows, h) for h in HALVES}
    nested = describe({h: chosen[OTHER[h]] for h in HALVES})
    fixed = {wd: describe({h: wd for h in HALVES}) for wd in DENSE_GRID}
    keeps = nested["objective"] <= fixed[DENSE_GRID[0]]["objective"]
    return {"chosen_on": chosen, "nested": nested, "fixed": fixed, "keep_default": keeps}


def report_lines(rows: list[dict[str, Any]]) -> list[str]:
    from router import RouterConfig

    s = summary(rows)
    fams = list(s["nested"]["family_ndcg@5"])
    hubs = list(s["nested"]["recall@5"])
    head = ("| dense weight | objective | " + " | ".join(fams) + " | "
            + " | ".join(h.removeprefix("apibench_") + " R@5" for h in hubs) + " |")

    def line(label: str, d: dict[str, Any]) -> str:
        return (f"| {label} | {d['objective']:.4f} | " + " | ".join(f"{d['family_ndcg@5'][f]:.3f}" for f in fams)
                + " | " + " | ".join(f"{d['recall@5'][h]:.3f}" for h in hubs) + " |")

    c = s["chosen_on"]
    lines = ["## Fusion weights for the general encoder", "",
             "Hybrid, cross-fitted, the (bm25, dense) weights of the fused score. Objective = mean(StableToolBench "
             "nDCG@5, APIBench Recall@5), `bench router`'s grid objective; per family: mean nDCG@5; per hub: Recall@5. "
             "`nested`: the rule (the best objective, 0.6 kept unless beaten by more than 0.001) chooses on one "
             f"half and the other half is scored with it: chosen on `dev` {c['dev']}, on `test` {c['test']}.", "",
             head, "|---|---|" + "---|" * (len(fams) + len(hubs))]
    lines += [line(str(wd), d) for wd, d in s["fixed"].items()]
    lines += [line("nested", s["nested"]), ""]
    shipped = RouterConfig().weights
    lines.append(f"The router keeps {shipped}: the nested choice does not beat it." if s["keep_default"] else
                 f"The nested choice beats {shipped}: the general encoder should get its own weights.")
    return lines + [""]
