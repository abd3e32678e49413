"""Single-tool and multi-tool requests apart: nDCG@5 beside all gold @5 and @10.

A multi-step request that lacks one of its tools fails as surely as one that lacks all of them, so
for requests with several gold tools the figure that matters is whether every one of them is
offered (all gold @k), and averaging them with single-tool requests hides it (issue 38).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["GROUPS", "all_gold", "by_gold_count"]

GROUPS = ("single-tool", "multi-tool")


def all_gold(relevant: set[str], ranked: Sequence[str], k: int) -> bool:
    """Whether every gold tool is among the first ``k`` ranked."""
    return relevant <= set(ranked[:k])


def by_gold_count(queries: Sequence[Any], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per group of ``queries`` (one gold tool / several): how many, nDCG@5, all gold @5 and @10.
    ``run``: query id -> {record id: score} (ranx's form; higher first). A group with no query is
    left out."""
    from ranx import Qrels, Run, evaluate

    out: dict[str, dict[str, float]] = {}
    for group in GROUPS:
        qs = [q for q in queries if (len(q.relevant) > 1) == (group == "multi-tool")]
        if not qs:
            continue
        ranked = {q.id: [rid for rid, _ in sorted(run[q.id].items(), key=lambda kv: -kv[1])] for q in qs}
        qrels = Qrels({q.id: {rid: 1 for rid in q.relevant} for q in qs})
        ndcg = float(evaluate(qrels, Run({q.id: run[q.id] for q in qs}), "ndcg@5"))
        out[group] = {"queries": len(qs), "ndcg@5": ndcg,
                      **{f"all_gold@{k}": float(np.mean([all_gold(q.relevant, ranked[q.id], k) for q in qs]))
                         for k in (5, 10)}}
    return out
