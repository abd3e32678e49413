"""The general encoder's floor for each part's own tool (RouterConfig.part_floor), chosen like the
companion weights it is chosen after.

Part of `toolsift bench routing --only companions` (benchmarks/routing/companions.py): on the
general encoder's cross-fitted rows, half h's floor is chosen with the model trained on the other
half (h's requests unseen by it), over h's requests routed with h's companion weights, and scores the
other half with them, ranked by the model trained on h; left out with a
family (benchmarks/routing/general_lofo.py), it is chosen on every other family. Objective: the mean
all-gold@10 over the multi-tool groups (a part's tool never enters the first five places, so nDCG@5
cannot move); no floor is kept unless a floor beats it by more than 0.001.
"""
from __future__ import annotations

import statistics
from typing import Any, Callable

from ..retrieval import targets as rt
from .set_scores import fast_scores

__all__ = ["GRID", "choose", "objective", "scored"]

GRID: tuple[float | None, ...] = (None, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


def objective(s: dict[str, dict[str, float]]) -> float:
    vals = [v["all_gold@10"] for k, v in s.items() if k.endswith("|multi") and v["n"] >= 5]
    return statistics.mean(vals) if vals else 0.0


def scored(cs: list[Any], setting: dict[str, Any], co: dict[str, dict[str, list]],
           routed: Callable[..., tuple[dict[int, list[str]], Any]], name: str,
           grid: tuple[Any, ...]) -> dict[str, float]:
    """The objective of ``cs`` routed with each value of ``grid`` as the router setting ``name``."""
    tried = {}
    for value in grid:
        ranked, _ = routed(cs, {**setting, name: value}, co, sent_too=False)
        tried[str(value)] = round(objective(fast_scores(cs, ranked)), 4)
    return tried


def choose(cs: list[Any], setting: dict[str, Any], co: dict[str, dict[str, list]],
           routed: Callable[..., tuple[dict[int, list[str]], Any]]) -> tuple[float | None, dict[str, float]]:
    """The floor for ``cs`` (companions.Case, routed by ``routed``, companions.routed, with ``setting``
    laid over their routers and the co-use in ``co``), and the objective of each floor of the grid."""
    tried = scored(cs, setting, co, routed, "part_floor", GRID)
    best = max(GRID, key=lambda f: tried[str(f)])
    return (best if tried[str(best)] > tried[str(None)] + rt.KEEP_DEFAULT_MARGIN else None), tried
