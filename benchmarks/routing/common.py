"""What the parts of `toolsift bench routing` share (benchmarks/routing/features.py runs them): the file
groups, the two router settings compared, the metrics of one ranking run, and one router per corpus."""
from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from router.encoders.model import BASE_MODEL

from ..data.halves import half_of
from ..retrieval import targets as rt

MULTI = [*rt.STB, "metatool_multi"]            # requests that need several tools
SINGLE = ["metatool_single", *rt.APIBENCH]     # one gold tool each
HALVES = ("dev", "test")                 # the query halves of benchmarks/data/halves.py
QUICK = {"stabletoolbench_G2_instruction", "metatool_multi", "metatool_single", "apibench_torchhub"}
TODAY = {"coverage": 0.0, "exact_names": False, "abstain_below": None,  # the router before these features
         "companion_same_api": 0.0, "companion_same_category": 0.0, "companion_produces_for": 0.0,
         "companion_feeds": 0.0, "companion_co_use": 0.0, "companion_used": 0.0,
         "part_tools": 0}
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
    out = {}
    for n, d in sets.items():
        qs = [q for q in d.queries if half is None or half_of(q.id, n) == half]
        if qs:
            out[n] = _metrics(qs, {q.id: ranked[n][q.id] for q in qs})
    return out


def mean_all_gold(scored_half: dict[str, dict[str, float]], files: list[str]) -> float:
    """The mean all-gold@10 of ``files`` (those scored) in one half's per-file metrics."""
    return statistics.mean(scored_half[n]["all_gold@10"] for n in files if n in scored_half)


def other_half(half: str) -> str:
    """The half that is not ``half`` (the choice made on one scores the other)."""
    return "test" if half == "dev" else "dev"


def corpus(name: str) -> str:
    """The catalog a file routes over (the four StableToolBench files share one)."""
    return "stabletoolbench" if name.startswith("stabletoolbench") else name


def choose_setting(scored: dict, baseline: Any, files: list[str], guarded: list[str], max_drop: float) -> Any:
    """The setting (a key of ``scored``: setting -> file -> metrics) with the best mean all-gold@10
    over ``files``, among those that lose at most ``max_drop`` nDCG@5 against ``baseline`` on any of
    ``guarded``; ``baseline`` unless beaten by more than the keep margin."""
    base = scored[baseline]
    fits = [key for key in scored if all(scored[key][n]["ndcg@5"] >= base[n]["ndcg@5"] - max_drop
                                         for n in guarded if n in base)]
    best = max(fits, key=lambda key: mean_all_gold(scored[key], files))
    beats = mean_all_gold(scored[best], files) > mean_all_gold(base, files) + rt.KEEP_DEFAULT_MARGIN
    return best if beats else baseline


def choose_per_half(scored: dict, baseline: Any, files: list[str], guarded: list[str],
                    max_drop: float) -> dict[str, Any]:
    """`choose_setting` on each half (``scored``: setting -> half -> file -> metrics)."""
    return {half: choose_setting({key: by_half[half] for key, by_half in scored.items()}, baseline, files,
                                 guarded, max_drop) for half in HALVES}


def cross_fitted(sets: dict, ranked: dict, chosen: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Each request's ranking under the setting the *other* half chose (``ranked``: setting -> file ->
    query id -> ids): no request is scored by a setting chosen on it."""
    return {n: {q.id: ranked[chosen[other_half(half_of(q.id, n))]][n][q.id] for q in d.queries}
            for n, d in sets.items()}


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
