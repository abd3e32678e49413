"""What the parts of `toolsift bench routing` share (benchmarks/routing/features.py runs them): the file
groups, the two router settings compared, the metrics of one ranking run, and one router per corpus."""
from __future__ import annotations

from typing import Any

import numpy as np

from router.encoders.model import BASE_MODEL

from ..retrieval import targets as rt

MULTI = [*rt.STB, "metatool_multi"]            # requests that need several tools
SINGLE = ["metatool_single", *rt.APIBENCH]     # one gold tool each
QUICK = {"stabletoolbench_G2_instruction", "metatool_multi", "metatool_single", "apibench_torchhub"}
TODAY = {"coverage": 0.0, "exact_names": False, "abstain_below": None,  # the router before these features
         "companion_same_api": 0.0, "companion_same_category": 0.0, "companion_produces_for": 0.0,
         "companion_co_use": 0.0, "part_tools": 0}
NEW: dict[str, Any] = {}  # the new router: its defaults, with the coverage weight the quality section chose


def _metrics(queries, ranked: dict[str, list[str]]) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    run = {qid: ({rid: float(len(ids) - i) for i, rid in enumerate(ids)} or {"__none__": 0.0})
           for qid, ids in ranked.items()}
    qrels = Qrels({q.id: {r: 1 for r in q.relevant} for q in queries})
    out = {m: float(v) for m, v in evaluate(qrels, Run(run), ["ndcg@5", "recall@5", "recall@10"]).items()}
    for k in (5, 10):
        out[f"all_gold@{k}"] = float(np.mean([q.relevant <= set(ranked[q.id][:k]) for q in queries]))
    return out


def scores_by_file(sets: dict, ranked: dict, half: str | None) -> dict[str, dict[str, float]]:
    """`_metrics` per file of ``ranked`` (file -> query id -> ids), over one half's requests (None: all)."""
    from ..data.halves import half_of

    out = {}
    for n, d in sets.items():
        qs = [q for q in d.queries if half is None or half_of(q.id, n) == half]
        if qs:
            out[n] = _metrics(qs, {q.id: ranked[n][q.id] for q in qs})
    return out


def routers(sets: dict, model: str | None, config: Any = None) -> dict:
    """One router per corpus, query vectors cached (router_targets.QueryVectors), for ``model``
    (with ``config``, a RouterConfig, if given)."""
    from router import Router

    out = {}
    for name, d in sets.items():
        key = "stabletoolbench" if name.startswith("stabletoolbench") else name
        if key in out:
            continue
        r = Router(d.records, model=model or BASE_MODEL, config=config)
        r.encode_queries = rt.QueryVectors(r)
        r.encode_query_sentences = r.encode_queries.sentences
        r.dense_index()
        out[key] = r
    return out
