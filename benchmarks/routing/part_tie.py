"""The general encoder's tie for each part's own tool (RouterConfig.part_tie): a part also brings its
next tool when that tool's own score is at least this share of its best's, chosen after the part
floor (benchmarks/routing/part_floor.py) the same way; then, with both, whether a file the request
writes to is a part of its own, and then whether a date it gives relative to now is
(`choose_part_settings`).

Part of `toolsift bench routing --only companions` (benchmarks/routing/companions.py): half h's tie is
chosen on h's requests ranked by the model trained on the other half, with h's weights and floor,
and scores the other half; left out with a family (benchmarks/routing/general_lofo.py), on every
other family. Objective: the mean all-gold@10 over the multi-tool groups, as for the floor. Each tie
sends more tools than the one above it, so the chosen tie is the highest whose objective is within
0.001 of the best one: no more tools than the gain needs, and none unless a tie beats no tie by more
than that.
"""
from __future__ import annotations

from typing import Any, Callable

from ..retrieval import targets as rt
from .part_floor import scored

__all__ = ["GRID", "choose", "choose_part_settings"]

# None = never; each lower value brings a part's next tool on a wider gap (0 would be two per part)
GRID: tuple[float | None, ...] = (None, 0.9, 0.8, 0.7, 0.6, 0.5)


def choose(cs: list[Any], setting: dict[str, Any], co: dict[str, dict[str, list]],
           routed: Callable[..., tuple[dict[int, list[str]], Any]]) -> tuple[float | None, dict[str, float]]:
    """The tie for ``cs`` (companions.Case, routed by ``routed``, companions.routed, with ``setting``
    laid over their routers and the co-use in ``co``), and the objective of each tie of the grid."""
    tried = scored(cs, setting, co, routed, "part_tie", GRID)
    best = max(tried.values())
    if best <= tried[str(None)] + rt.KEEP_DEFAULT_MARGIN:
        return None, tried
    return next(t for t in GRID if tried[str(t)] >= best - rt.KEEP_DEFAULT_MARGIN), tried


def choose_part_settings(cs: list[Any], setting: dict[str, Any], co: dict[str, dict[str, list]],
                         routed: Callable[..., tuple[dict[int, list[str]], Any]]) -> dict[str, Any]:
    """The part floor (with no tie and no implied step's part: not the router's own), then the tie with
    that floor, then whether a file the request writes to is a part of its own
    (RouterConfig.output_file, router.ranking.output_file) with both, then whether a date it gives
    relative to now is (RouterConfig.relative_time, router.ranking.relative_time) with all three: each
    choice and what each value scored. Each implied step's part is kept only when it beats none by more
    than 0.001, like the tie."""
    from . import part_floor

    off = {**setting, "part_tie": None, "output_file": False, "relative_time": False}
    floor, floor_tried = part_floor.choose(cs, off, co, routed)
    tie, tie_tried = choose(cs, {**off, "part_floor": floor}, co, routed)
    chosen = {"part_floor": floor, "part_floor_tried": floor_tried, "part_tie": tie, "part_tie_tried": tie_tried}
    so_far = {**off, "part_floor": floor, "part_tie": tie}
    for step in ("output_file", "relative_time"):
        tried = scored(cs, so_far, co, routed, step, (False, True))
        so_far[step] = tried[str(True)] > tried[str(False)] + rt.KEEP_DEFAULT_MARGIN
        chosen.update({step: so_far[step], f"{step}_tried": tried})
    return chosen
