"""How `toolsift bench routing --only companions` scores a set of routed requests (benchmarks/routing/
companions.py): per file and group (multi-tool / single-tool requests) nDCG@5, all gold @5 / @10, what
adaptive k sends, the objective its choices maximize and the issue's single-tool bound. A request is
a `companions.Case` (its file, gold set, whether it needs several tools)."""
from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from .common import _metrics

MAX_SINGLE_DROP = 0.005


def fast_scores(cs: list[Any], ranked: dict[int, list[str]]) -> dict[str, dict[str, float]]:
    """`scores` without ranx, for the grid search (thousands of evaluations): binary-gain nDCG@5
    with log2 discounts, which is ranx's (the final tables are ranx's own)."""
    disc = 1.0 / np.log2(np.arange(2, 7))
    groups: dict[str, list[tuple[float, float, float]]] = {}
    for i, c in enumerate(cs):
        gold, top = c.q.relevant, ranked[i]
        dcg = sum(disc[j] for j, rid in enumerate(top[:5]) if rid in gold)
        ideal = disc[:min(5, len(gold))].sum()
        groups.setdefault(f"{c.file}|{'multi' if c.multi else 'single'}", []).append(
            (dcg / ideal if ideal else 0.0, float(gold <= set(top[:5])), float(gold <= set(top[:10]))))
    return {k: {"ndcg@5": float(np.mean([a for a, _, _ in v])), "all_gold@5": float(np.mean([b for _, b, _ in v])),
                "all_gold@10": float(np.mean([c for _, _, c in v])), "n": len(v)} for k, v in groups.items()}


def scores(cs: list[Any], ranked: dict[int, list[str]]) -> dict[str, dict[str, float]]:
    """Per file and group (multi / single): nDCG@5, all-gold@5, all-gold@10, requests."""
    out: dict[str, dict[str, float]] = {}
    groups: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(cs):
        groups.setdefault((c.file, "multi" if c.multi else "single"), []).append(i)
    for (f, g), idx in groups.items():
        qs = [cs[i].q for i in idx]
        m = _metrics(qs, {cs[i].q.id: ranked[i] for i in idx})
        out[f"{f}|{g}"] = {"ndcg@5": m["ndcg@5"], "all_gold@5": m["all_gold@5"], "all_gold@10": m["all_gold@10"],
                           "n": len(idx)}
    return out


def objective(s: dict[str, dict[str, float]]) -> float:
    vals = [(v["ndcg@5"] + v["all_gold@10"]) / 2 for k, v in s.items() if k.endswith("|multi") and v["n"] >= 5]
    return statistics.mean(vals) if vals else 0.0


def single_ndcg(s: dict[str, dict[str, float]]) -> dict[str, float]:
    """Single-tool nDCG@5 per file, however few its single-tool requests (the bound holds "anywhere")."""
    return {k: v["ndcg@5"] for k, v in s.items() if k.endswith("|single")}


def keeps_single_bound(s: dict[str, dict[str, float]], off: dict[str, float]) -> bool:
    """The issue's bound: no file's single-tool nDCG@5 lower by more than 0.005."""
    now = single_ndcg(s)
    return all(now[k] >= v - MAX_SINGLE_DROP for k, v in off.items())


def costs(cs: list[Any], sent: dict[int, tuple[int, int, float]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[tuple[int, int, float]]] = {}
    for i, c in enumerate(cs):
        groups.setdefault(f"{c.file}|{'multi' if c.multi else 'single'}", []).append(sent[i])
    return {k: {"tools": float(np.mean([t for t, _, _ in v])), "tokens": float(np.mean([t for _, t, _ in v])),
                "all_gold_sent": float(np.mean([g for _, _, g in v]))} for k, v in groups.items()}
