"""The general encoder's two half models as routers, for the cross-fitted rows of `toolsift bench
routing --only companions` (benchmarks/routing/companions.py): each half's model trained on that half
alone (benchmarks/retrieval/general_training.py), so the other half can be scored by a model that
never saw it."""
from __future__ import annotations

from typing import Any

from .common import HALVES

__all__ = ["General", "general_routers"]

General = tuple[dict[str, dict[str, Any]], dict[str, Any]]


def general_routers(sets: dict[str, Any], quick: bool) -> General | str:
    """Per half: the routers with the general encoder's model trained on that half (as shipped: its
    rank-64 delta merged; at the general encoder's fusion depth), and what was trained; or why
    there are none (--quick never starts the 30-75 minutes of training a half model takes)."""
    from router.ranking.config import general_encoder_config

    from ..errors import BenchmarkError
    from ..retrieval.general_training import PER_DATASET, cached, shipped_form, train
    from .common import routers

    if quick:
        try:
            missing = [h for h in HALVES if cached(h, PER_DATASET) is None]
        except BenchmarkError as exc:
            return f"the general encoder's half models need every family's data: {exc}"
        if missing:
            return ("--quick: the general encoder's half models are not trained "
                    "(`toolsift bench general-encoder` trains them)")
    out, models = {}, {}
    for h in HALVES:
        folder, info = train(h, PER_DATASET)
        out[h] = routers(sets, shipped_form(folder), config=general_encoder_config())
        models[h] = {"trained_on": f"the {h} half of every dataset's queries", "spec": info["spec"],
                     "pairs": info["pairs"]}
    return out, models
