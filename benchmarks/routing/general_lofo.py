"""The general encoder left out with a family: issue 38's stages scored on a family that neither the
encoder nor the companion weights ever saw.

    toolsift bench routing --only companions --leave-out FAMILY

The cross-fitted general-encoder rows of the companions section (benchmarks/routing/companions.py)
score each half with a model trained on the other half of *every* family, so the family itself was
trained on. Here the model is the one `toolsift bench general-encoder --leave-out FAMILY` trains
(the shipped recipe on every other family's queries, benchmarks/retrieval/general_training.py; the
same cache, in its shipped rank-64 form, at its own fusion depth), the companion weights and then
the part floor, tie and implied steps' parts (benchmarks/routing/part_tie.py) are chosen with that
model on every other family's requests (both halves, co-use from their gold sets), and
the left-out family is routed from its records' relations alone (no co-use of its own): what a
catalog nobody labelled gets. Each family needs its own model (44-76 minutes of training on 2 cores
the first time), so a run leaves out one family and adds it to the results of the earlier ones, or,
with ``--leave-out all``, runs the cross-fitted section and then leaves out each family in turn,
saving after each.
``--quick`` never trains: it scores 24 requests of each of the family's files and chooses on the
companions section's quick files, with a model an earlier run trained.
"""
from __future__ import annotations

from typing import Any

from .common import HALVES, routers
from .companions import (FILES, QUICK_FILES, VARIANTS, cases, choose, family, learned, relation_graphs,
                         requests, routed, setting_of, shipped_setting)
from .part_tie import choose_part_settings
from .set_scores import costs, scores

__all__ = ["ALL", "FAMILIES", "check", "load", "run", "unrunnable"]

# the families with multi-tool requests (APIBench and BFCL live have single-tool ones only, where the
# first five places, which no stage of issue 38 moves, decide nDCG@5)
FAMILIES = ("livemcpbench", "metatool", "restbench", "seal_tools", "stabletoolbench")
ALL = "all"  # `--leave-out all`: the cross-fitted section, then every family in turn
HYBRID = "part_signal hybrid"
SHIPPED = "shipped weights"


def check(left_out: str, every: bool = True) -> None:
    """A usage error for a family this section cannot leave out (``every``: or ``all``, which the
    command line takes and `load` and `run` do not: they leave out one family)."""
    from ..errors import BenchmarkError

    if left_out not in (allowed := (*FAMILIES, ALL) if every else FAMILIES):
        raise BenchmarkError(f"--leave-out: unknown family {left_out!r} (choose from: {', '.join(allowed)})")


def load(left_out: str, quick: bool) -> dict[str, Any]:
    """The companions section's files (--quick: its quick files, and the left-out family's, 24
    requests each)."""
    from . import companions

    check(left_out, every=False)
    return companions.load(quick, [n for n in FILES if not quick or n in QUICK_FILES or family(n) == left_out])


def unrunnable(left_out: str, sets: dict[str, Any], quick: bool) -> str | None:
    """Why ``left_out`` cannot be scored here, or None: none of its files is here, or (``--quick``,
    which never trains) no model was trained without it yet."""
    from ..retrieval.general_training import PER_DATASET, cached

    if not any(family(n) == left_out for n in sets):
        return f"--leave-out {left_out}: none of its files is here (see benchmarks/README.md, Data)"
    if quick and cached(None, PER_DATASET, leave_out=left_out) is None:
        return (f"--quick --leave-out {left_out}: no model trained without {left_out} yet "
                f"(`toolsift bench routing --only companions --leave-out {left_out}` trains it)")
    return None


def run(left_out: str, sets: dict[str, Any], quick: bool) -> dict[str, Any]:
    """The tables for ``left_out`` (one of ``FAMILIES``; ``sets`` from `load`): today vs the new
    default, and beside it (not chosen from) the new default with ``part_signal`` "hybrid" and the
    router's shipped companion weights in place of the ones chosen without the family."""
    from router.ranking.config import general_encoder_config

    from ..errors import BenchmarkError
    from ..retrieval.general_training import PER_DATASET, shipped_form, train

    check(left_out, every=False)
    if (why := unrunnable(left_out, sets, quick)) is not None:
        raise BenchmarkError(why)
    mine = {n: d for n, d in sets.items() if family(n) == left_out}
    others = {n: d for n, d in sets.items() if family(n) != left_out}
    folder, info = train(None, PER_DATASET, leave_out=left_out)
    config = general_encoder_config()
    rts = routers(sets, shipped_form(folder), config=config)
    co = learned(others, set(HALVES))
    graphs, cold = relation_graphs(others, {h: co for h in HALVES}), relation_graphs(others, {h: {} for h in HALVES})
    pooled = cases(others, rts)
    print(f"  {len(pooled)} requests of the other families routed once by the model trained without "
          f"{left_out}", flush=True)
    weights, keep, _ = choose(pooled, graphs, cold)
    parts = choose_part_settings(pooled, setting_of(weights, keep), {h: co for h in HALVES}, routed)
    print(f"  chosen without {left_out}: {weights}, keep {keep}, {parts}", flush=True)
    test = requests(mine, rts)
    none: dict[str, dict[str, list]] = {h: {} for h in HALVES}
    chosen = setting_of(weights, keep, parts)
    today, today_sent = routed(test, None, none)
    new, new_sent = routed(test, chosen, none)
    extra, _ = VARIANTS[HYBRID]
    hybrid, _ = routed(test, {**chosen, **extra}, none, sent_too=False)
    # what the router ships with on this family: its weights were chosen on the dev half of every
    # family, this one's too, so this column is not a held-out choice (none of its co-use is used)
    shipped, _ = routed(test, shipped_setting(), none, sent_too=False)
    model = {"trained_on": f"every family but {left_out}", "spec": info["spec"], "pairs": info["pairs"],
             "seconds": info.get("seconds")}
    return {"weights": weights, "keep": keep, **parts, "model": model,
            "shipped_weights": config.companion_weights,
            "today": scores(test, today),
            "new": scores(test, new), "cost": {"today": costs(test, today_sent), "new": costs(test, new_sent)},
            HYBRID: scores(test, hybrid), SHIPPED: scores(test, shipped)}
