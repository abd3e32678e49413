"""Complete sets from tool relations (router.ranking.companions): today's router vs the new default,
single-tool and multi-tool requests apart, cross-fitted and leave-one-family-out.

    toolsift bench routing --only companions [--quick]

Every labelled file with multi-tool requests (StableToolBench G1/G2, MetaTool multi, RestBench TMDB
and Spotify, Seal-Tools, LiveMCPBench) and the single-tool files (MetaTool single, APIBench,
BFCL live multiple). A file's requests are split by their number of gold tools.

- **cross-fitted**: the relation weights (one per kind) and the number of first places kept are
  chosen on one half of every file's requests (the halves of benchmarks/data/halves.py) and the
  other half is scored with them; the co-use relations are learned from the gold sets of the
  choosing half only (what a usage log of earlier requests would hold). Objective: the mean over
  the multi-tool groups of (nDCG@5 + all-gold@10) / 2; a setting that lowers any file's single-tool
  nDCG@5 on the choosing half by more than 0.005 is never chosen.
- **leave-one-family-out**: the setting is chosen on every other family (both halves) and scores
  the left-out family with no co-use of its own (a new catalog: only what its records say).

Scored through `Router.select` (fixed k = 10 for the ranking metrics; the shipped adaptive k for
tokens sent). The grid search itself re-ranks each request's top 60 with `complete` (the same stage
`select` runs), so it costs seconds, not a routing pass per setting.
"""
from __future__ import annotations

import itertools
import statistics
from typing import Any

import numpy as np

from apidb.relations import co_use_pairs

from ..retrieval import targets as rt
from .common import _metrics

FILES = [*rt.STB, "metatool_multi", "restbench_tmdb", "restbench_spotify", "seal_tools", "livemcpbench",
         "metatool_single", *rt.APIBENCH, "bfcl_live_multiple"]
QUICK_FILES = ["restbench_tmdb", "metatool_multi", "apibench_torchhub"]
FAMILY = {"stabletoolbench": "stabletoolbench", "metatool": "metatool", "restbench": "restbench",
          "seal": "seal_tools", "livemcpbench": "livemcpbench", "apibench": "apibench", "bfcl": "bfcl_live"}
KINDS = ("same_api", "same_category", "produces_for", "co_use")
WEIGHTS = (0.0, 0.3, 0.6, 1.0)
# The first five places never move: a first run that also tried keeping 3 chose 3 on the dev half
# with no single-tool loss there, and the test half then lost 0.026 and 0.064 single-tool nDCG@5
# (LiveMCPBench, 15 requests; StableToolBench G1 instruction, 6). Only an unmoved top five keeps the
# issue's bound (no single-tool nDCG@5 lower by more than 0.005) on requests nobody chose on.
KEEPS = (5,)
POOL = 60
MAX_QUERIES = 200  # per file (a deterministic sample), as the other sections of `bench routing`
MAX_SINGLE_DROP = 0.005


def load(quick: bool) -> dict[str, Any]:
    from ..data.datasets import available, load_dataset
    out = {}
    for name in (QUICK_FILES if quick else FILES):
        if available(name):
            d = load_dataset(name)
            d.queries = rt._sample(d.queries, 24 if quick else MAX_QUERIES)
            out[name] = d
    return out


def family(name: str) -> str:
    return next(f for prefix, f in FAMILY.items() if name.startswith(prefix))


def _off() -> dict[str, float]:
    return {f"companion_{k}": 0.0 for k in KINDS}


def _setting(weights: dict[str, float], keep: int) -> dict[str, Any]:
    return {**{f"companion_{k}": weights[k] for k in KINDS}, "companion_keep": keep}


class Case:
    """One request: its file, half, gold set and today's top ``POOL`` (record indices, scores)."""

    def __init__(self, file: str, q: Any, half: str, docs: list[int], scores: list[float]) -> None:
        self.file, self.q, self.half, self.docs, self.scores = file, q, half, docs, scores
        self.multi = len(q.relevant) > 1


def cases(sets: dict[str, Any], rts: dict[str, Any]) -> list[Case]:
    from ..data.halves import half_of

    out = []
    for name, d in sets.items():
        r = rt.router_for(rts, name).configured(**_off())
        for q in d.queries:
            sel = r.select(q.text, k=POOL, adaptive=False)
            out.append(Case(name, q, half_of(q.id, name), [r._index[s.record.id] for s in sel],
                            [s.score for s in sel]))
    return out


def learned(sets: dict[str, Any], rts: dict[str, Any], halves: set[str]) -> dict[int, list]:
    """Co-use relations per catalog (keyed by router id) from the gold sets of ``halves``."""
    from ..data.halves import half_of

    by_router: dict[int, list[set[str]]] = {}
    for name, d in sets.items():
        key = id(rt.router_for(rts, name))
        by_router.setdefault(key, []).extend(q.relevant for q in d.queries
                                             if len(q.relevant) > 1 and half_of(q.id, name) in halves)
    return {k: co_use_pairs(v) for k, v in by_router.items()}


def _fast(cs: list[Case], ranked: dict[int, list[str]]) -> dict[str, dict[str, float]]:
    """`_scores` without ranx, for the grid search (thousands of evaluations): binary-gain nDCG@5
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


def _scores(cs: list[Case], ranked: dict[int, list[str]]) -> dict[str, dict[str, float]]:
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


def _offline(cs: list[Case], graphs: dict[tuple[int, str], Any], rts: dict,
             weights: dict[str, float], keep: int) -> dict[int, list[str]]:
    from router.index.scores import Ranking
    from router.ranking.companions import complete

    out = {}
    for i, c in enumerate(cs):
        r = rt.router_for(rts, c.file)
        ranking = Ranking(np.array(c.docs, dtype=np.int64), np.array(c.scores, dtype=np.float64))
        new, _ = complete(ranking, graphs[(id(r), c.half)], weights, anchors=r.config.companion_anchors, keep=keep)
        out[i] = [r.records[d].id for d in new.docs[:10].tolist()]
    return out


def objective(s: dict[str, dict[str, float]]) -> float:
    vals = [(v["ndcg@5"] + v["all_gold@10"]) / 2 for k, v in s.items() if k.endswith("|multi") and v["n"] >= 5]
    return statistics.mean(vals) if vals else 0.0


def single_ndcg(s: dict[str, dict[str, float]]) -> dict[str, float]:
    """Single-tool nDCG@5 per file, however few its single-tool requests (the bound holds "anywhere")."""
    return {k: v["ndcg@5"] for k, v in s.items() if k.endswith("|single")}


def _no_single_loss(s: dict[str, dict[str, float]], off: dict[str, float]) -> bool:
    """The issue's bound: no file's single-tool nDCG@5 lower by more than 0.005."""
    now = single_ndcg(s)
    return all(now[k] >= v - MAX_SINGLE_DROP for k, v in off.items())


def choose(cs: list[Case], graphs: dict, rts: dict) -> tuple[dict[str, float], int, float]:
    """Coordinate ascent over the kind weights, for each number of kept places; the best objective
    (a setting is kept only if it beats the one before by more than 0.001, none if none beats off)."""
    off = _fast(cs, _offline(cs, graphs, rts, {k: 0.0 for k in KINDS}, KEEPS[0]))
    floor = single_ndcg(off)
    best = ({k: 0.0 for k in KINDS}, KEEPS[-1], objective(off))
    for keep in KEEPS:
        w, cur = {k: 0.0 for k in KINDS}, objective(off)
        for _ in range(2):
            for kind, value in itertools.product(KINDS, WEIGHTS):
                trial = dict(w, **{kind: value})
                if trial == w:
                    continue
                s = _fast(cs, _offline(cs, graphs, rts, trial, keep))
                if objective(s) > cur + 0.001 and _no_single_loss(s, floor):
                    w, cur = trial, objective(s)
        if cur > best[2] + 0.001:
            best = (w, keep, cur)
    return best


def _graphs(sets: dict, rts: dict, co: dict[str, dict[int, list]]) -> dict[tuple[int, str], Any]:
    """One relation graph per (catalog, scored half): the co-use learned for that half."""
    from router.ranking.companions import RelationGraph

    out = {}
    for name in sets:
        r = rt.router_for(rts, name)
        for half in ("dev", "test"):
            if (id(r), half) not in out:
                out[(id(r), half)] = RelationGraph.build(r.records, co[half].get(id(r), []))
    return out


def _routed(cs: list[Case], rts: dict, setting: dict[str, Any] | None,
            co: dict[str, dict[int, list]]) -> tuple[dict[int, list[str]], dict[int, tuple[int, int, float]]]:
    """Per request, through `Router.select`: the top 10 (fixed k), and what the shipped adaptive k
    sends (tools, schema tokens, whether every gold tool is among them)."""
    ranked, sent = {}, {}
    routers: dict[tuple[int, str], Any] = {}
    for i, c in enumerate(cs):
        base = rt.router_for(rts, c.file)
        key = (id(base), c.half)
        if key not in routers:
            r = base.configured(**(setting or _off()))
            routers[key] = r.with_co_use(co[c.half].get(id(base), [])) if setting else r
        r = routers[key]
        ranked[i] = [s.record.id for s in r.select(c.q.text, k=10, adaptive=False)]
        adaptive = r.select(c.q.text)
        sent[i] = (len(adaptive), sum(r._tokens_of(s.record) for s in adaptive),
                   float(c.q.relevant <= {s.record.id for s in adaptive}))
    return ranked, sent


def _costs(cs: list[Case], sent: dict[int, tuple[int, int, float]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[tuple[int, int, float]]] = {}
    for i, c in enumerate(cs):
        groups.setdefault(f"{c.file}|{'multi' if c.multi else 'single'}", []).append(sent[i])
    return {k: {"tools": float(np.mean([t for t, _, _ in v])), "tokens": float(np.mean([t for _, t, _ in v])),
                "all_gold_sent": float(np.mean([g for _, _, g in v]))} for k, v in groups.items()}


def run(sets: dict[str, Any], rts: dict[str, Any], quick: bool) -> dict[str, Any]:
    """The cross-fitted and leave-one-family-out tables (module doc)."""
    sets = {n: d for n, d in sets.items() if n in (QUICK_FILES if quick else FILES)}
    cs = cases(sets, rts)
    print(f"  {len(cs)} requests routed once (top {POOL})", flush=True)
    co = {h: learned(sets, rts, {"test" if h == "dev" else "dev"}) for h in ("dev", "test")}
    graphs = _graphs(sets, rts, co)
    chosen = {}
    for half in ("dev", "test"):  # chosen on `half`, scores the other
        w, keep, obj = choose([c for c in cs if c.half == half], graphs, rts)
        chosen[half] = {"weights": w, "keep": keep, "objective": round(obj, 4)}
        print(f"  chosen on {half}: {w}, keep {keep} (objective {obj:.4f})", flush=True)
    today_ranked, today_sent = _routed(cs, rts, None, co)
    new_ranked: dict[int, list[str]] = {}
    new_sent: dict[int, tuple[int, int, float]] = {}
    for half in ("dev", "test"):
        pick = chosen["test" if half == "dev" else "dev"]
        idx = [i for i, c in enumerate(cs) if c.half == half]
        ranked, sent = _routed([cs[i] for i in idx], rts, _setting(pick["weights"], pick["keep"]), co)
        new_ranked.update({idx[j]: v for j, v in ranked.items()})
        new_sent.update({idx[j]: v for j, v in sent.items()})
    lofo = {} if quick else leave_one_family_out(cs, sets, rts, today_ranked)
    return {"files": list(sets), "chosen": chosen, "shipped": chosen["dev"],
            "today": _scores(cs, today_ranked), "new": _scores(cs, new_ranked),
            "cost": {"today": _costs(cs, today_sent), "new": _costs(cs, new_sent)}, "lofo": lofo}


def leave_one_family_out(cs: list[Case], sets: dict, rts: dict, today: dict[int, list[str]]) -> dict[str, Any]:
    """Per family: the setting chosen on every other family (with the co-use of their gold sets),
    scoring this one from its records' relations alone."""
    from router.ranking.companions import RelationGraph

    learned_all = learned(sets, rts, {"dev", "test"})
    graphs = {}
    for name in sets:
        r = rt.router_for(rts, name)
        for half in ("dev", "test"):
            graphs[(id(r), half)] = RelationGraph.build(r.records, learned_all.get(id(r), []))
    none: dict[str, dict[int, list]] = {"dev": {}, "test": {}}
    out = {}
    for fam in sorted({family(c.file) for c in cs if c.multi}):
        idx = [i for i, c in enumerate(cs) if family(c.file) == fam]
        w, keep, _ = choose([c for c in cs if family(c.file) != fam], graphs, rts)
        test = [cs[i] for i in idx]
        new_ranked, _ = _routed(test, rts, _setting(w, keep), none)
        out[fam] = {"weights": w, "keep": keep, "today": _scores(test, {j: today[i] for j, i in enumerate(idx)}),
                    "new": _scores(test, new_ranked)}
        print(f"  leave out {fam}: {w}, keep {keep}", flush=True)
    return out
