"""Would the general encoder route better with its own hybrid fusion settings? (part of `bench general-encoder`)

A stronger dense side tends to want a larger share of the fused score: `toolsift tune` picks
the weights of each model it trains on held-out queries (router.training.tune.fit_weights), and per-hub
tuned models take (0.2, 0.8) on TorchHub. This measures the same question for the shipped
general encoder, cross-fitted (each half of every dataset's queries routed by the model
trained on the other half), on the router grid's terms (benchmarks/retrieval/targets.py):
objective = mean(StableToolBench nDCG@5, APIBench Recall@5), base MiniLM's weights kept unless
another pair beats them by more than KEEP_DEFAULT_MARGIN.

Two stages, as in the router grid: first the fusion depth (how many of each retriever's list
are min-max normalized and fused) at the default weights, then the weights at the depth the
general encoder ships with (router.ranking.config.GENERAL_ENCODER_DEPTH).

A setting chosen on the queries it is scored on looks better than it is, so the choice is
nested: it is made on one half, and the other half is scored with it (both ways round). The
router keeps a setting unless that nested figure beats it.
"""
from __future__ import annotations

from typing import Any, Callable

from .general_training import FAMILIES

DENSE_GRID = (0.6, 0.65, 0.7, 0.75, 0.8)  # dense share of the fused score; 0.6 = RouterConfig's (0.4, 0.6)
DEPTH_GRID = (100, 70, 50)  # 100 = RouterConfig's depth (the untuned MiniLM's)
GRIDS = {"dense_weight": DENSE_GRID, "depth": DEPTH_GRID}  # stage -> its grid, the default first
HALVES = ("dev", "test")
OTHER = {"dev": "test", "test": "dev"}


def weight_rows(models: dict[str, str], datasets: list[str],
                score: Callable[[Any, list[Any]], dict[str, float]]) -> list[dict[str, Any]]:
    """Hybrid scores of both stages' grids, per dataset and half of its queries, each half
    routed by the model trained on the other half (``models``: half trained on → folder),
    exactly as the report's main table routes them (a plain Router, its own query encoding).
    ``score(router, queries)``: the main table's hybrid metrics (passed in: general_encoder
    imports this module). Each row names its ``stage`` and carries both settings."""
    from router import Router, RouterConfig
    from router.ranking.config import GENERAL_ENCODER_DEPTH

    from ..data.datasets import load_dataset
    from ..data.halves import half_of

    default = RouterConfig()
    settings = ([("depth", dp, default.weights[1]) for dp in DEPTH_GRID]
                + [("dense_weight", GENERAL_ENCODER_DEPTH, wd) for wd in DENSE_GRID])
    rows = []
    for name in datasets:
        d = load_dataset(name)
        for half in HALVES:
            queries = [q for q in d.queries if half_of(q.id, name) == half]
            router = Router(d.records, model=models[OTHER[half]], config=default)
            for stage, dp, wd in settings:
                tried = router.configured(depth=dp, weights=(round(1 - wd, 2), wd))
                rows.append({"dataset": name, "half": half, "stage": stage, "depth": dp, "dense_weight": wd,
                             "queries": len(queries), **score(tried, queries)})
    return rows


def _stage(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    # rows written before the depth stage have no "stage": they are the weight grid
    return [r for r in rows if r.get("stage", "dense_weight") == key]


def _per_dataset(rows: list[dict[str, Any]], pick: dict[str, float], key: str) -> dict[str, dict[str, float]]:
    """All queries of each dataset, each half scored at the setting ``pick`` gives it."""
    out: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["dataset"] for r in rows):
        parts = [r for r in rows if r["dataset"] == name and r[key] == pick[r["half"]]]
        n = sum(r["queries"] for r in parts)
        out[name] = {m: sum(r[m] * r["queries"] for r in parts) / n for m in ("ndcg@5", "recall@5")}
    return out


def choose(rows: list[dict[str, Any]], half: str, key: str = "dense_weight") -> float:
    """The setting of stage ``key`` the grid's rule (router_targets._pick) picks on ``half``'s objective."""
    from .targets import _pick, objective

    rows, grid = _stage(rows, key), GRIDS[key]
    scored = [{key: v, **objective({r["dataset"]: r for r in rows if r[key] == v and r["half"] == half})}
              for v in grid]
    return _pick(scored, lambda e: e[key] == grid[0])[key]


def summary(rows: list[dict[str, Any]], key: str = "dense_weight") -> dict[str, Any]:
    """Per setting of stage ``key`` (both halves at it) and nested (each half at the setting chosen
    on the other): the objective, each family's mean nDCG@5 and each APIBench hub's Recall@5."""
    from .targets import objective

    rows, grid = _stage(rows, key), GRIDS[key]

    def describe(pick: dict[str, float]) -> dict[str, Any]:
        per = _per_dataset(rows, pick, key)
        fam = {f: sum(per[n]["ndcg@5"] for n in names) / len(names)
               for f, names in FAMILIES.items() if all(n in per for n in names)}
        return {"objective": objective(per)["objective"], "family_ndcg@5": fam,
                "recall@5": {n: v["recall@5"] for n, v in per.items() if n.startswith("apibench_")}}

    chosen = {h: choose(rows, h, key) for h in HALVES}
    nested = describe({h: chosen[OTHER[h]] for h in HALVES})
    fixed = {v: describe({h: v for h in HALVES}) for v in grid}
    keeps = nested["objective"] <= fixed[grid[0]]["objective"]
    return {"chosen_on": chosen, "nested": nested, "fixed": fixed, "keep_default": keeps}


def _table(s: dict[str, Any], label: str) -> list[str]:
    fams = list(s["nested"]["family_ndcg@5"])
    hubs = list(s["nested"]["recall@5"])
    head = (f"| {label} | objective | " + " | ".join(fams) + " | "
            + " | ".join(h.removeprefix("apibench_") + " R@5" for h in hubs) + " |")

    def line(name: str, d: dict[str, Any]) -> str:
        return (f"| {name} | {d['objective']:.4f} | " + " | ".join(f"{d['family_ndcg@5'][f]:.3f}" for f in fams)
                + " | " + " | ".join(f"{d['recall@5'][h]:.3f}" for h in hubs) + " |")

    return ([head, "|---|---|" + "---|" * (len(fams) + len(hubs))]
            + [line(str(v), d) for v, d in s["fixed"].items()] + [line("nested", s["nested"]), ""])


def report_lines(rows: list[dict[str, Any]]) -> list[str]:
    from router import RouterConfig
    from router.ranking.config import GENERAL_ENCODER_DEPTH

    default = RouterConfig()
    lines = ["## Fusion settings for the general encoder", "",
             "Hybrid, cross-fitted. Objective = mean(StableToolBench nDCG@5, APIBench Recall@5), `bench router`'s grid "
             "objective; per family: mean nDCG@5; per hub: Recall@5. `nested`: the rule (the best objective, the "
             "first setting kept unless beaten by more than 0.001) chooses on one half and the other half is "
             "scored with it.", ""]
    if _stage(rows, "depth"):
        s = summary(rows, "depth")
        c = s["chosen_on"]
        lines += [f"Fusion depth (each retriever's top n, min-max normalized and fused), weights {default.weights}: "
                  f"chosen on `dev` {c['dev']}, on `test` {c['test']}.", ""] + _table(s, "depth")
        lines += [f"The general encoder ships with depth {GENERAL_ENCODER_DEPTH}"
                  + (f" (the nested choice beats {DEPTH_GRID[0]})." if not s["keep_default"] else
                     f", but the nested choice does not beat {DEPTH_GRID[0]}: it should not."), ""]
    s = summary(rows)
    c = s["chosen_on"]
    at = f" at depth {GENERAL_ENCODER_DEPTH}" if _stage(rows, "depth") else ""
    lines += [f"The (bm25, dense) weights{at}, by dense weight: chosen on `dev` {c['dev']}, on `test` {c['test']}.", ""]
    lines += _table(s, "dense weight")
    lines.append(f"The router keeps {default.weights}: the nested choice does not beat it." if s["keep_default"] else
                 f"The nested choice beats {default.weights}: the general encoder should get its own weights.")
    return lines + [""]
