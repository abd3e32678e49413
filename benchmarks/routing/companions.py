"""Complete sets from tool relations (router.ranking.companions): today's router vs the new default,
single-tool and multi-tool requests apart, cross-fitted and leave-one-family-out.

    toolsift bench routing --only companions [--quick]

Every labelled file with multi-tool requests (StableToolBench G1/G2, MetaTool multi, RestBench TMDB
and Spotify, Seal-Tools, LiveMCPBench) and the single-tool files (MetaTool single, APIBench,
BFCL live multiple). A file's requests are split by their number of gold tools. `today` is the router
before issue 38 (companions and part tools off); `new` is the chosen companions with the router's
default part tools (router.ranking.part_tools, chosen cross-fitted and leave-one-family-out by
benchmarks/routing/part_choice.py), so each table is the whole of issue 38's stages against neither.
Beside the new default, not chosen from: what adaptive k sends when it does not send each part's own
tool (``SENT``), and for the general encoder also each part ranked by its own vector (``VARIANTS``).

- **cross-fitted**: the relation weights (one per kind) and the number of first places kept are
  chosen on one half of every file's requests (the halves of benchmarks/data/halves.py) and the
  other half is scored with them; the co-use relations are learned from the gold sets of the
  choosing half only (what a usage log of earlier requests would hold). The kinds the records say
  are weighed first without co-use (a catalog with no usage log yet), then what the log says on top:
  co-use pairs and how widely each tool is co-used (`used`; `choose`).
  Objective: the mean over the multi-tool groups of (nDCG@5 + all-gold@10) / 2; a setting that
  lowers any file's single-tool nDCG@5 on the choosing half by more than 0.005 is never chosen.
- **leave-one-family-out**: the setting is chosen on every other family (both halves) and scores
  the left-out family with no co-use of its own (a new catalog: only what its records say).
- **general encoder, cross-fitted**: the same choice and scoring with the shipped default encoder.
  It trained on these requests, so there is one model per half, trained on that half alone
  (benchmarks/retrieval/general_training.py, cached under ``<cache>/general/``; in its shipped
  rank-64 form, at its own fusion depth). Half ``h`` is scored by the model trained on ``h``'s other
  half, with the weights chosen on that other half; the choice ranks that half with the model
  trained on ``h``, so it is made on requests its model never trained on, as the shipped encoder
  meets a catalog (chosen with the model that trained on them, the structural weights came out 0).
  No request is scored by a model or weights that saw it; its gold sets reach the weights only
  through the rankings of the model that trained on them, which two halves cannot avoid. Its `today`
  is the general encoder with companions and part tools off. Its leave-one-family-out rows need a
  model trained without each family, 44-76 minutes of training apiece: ``--leave-out FAMILY`` for
  one, ``--leave-out all`` for these tables and then each family (benchmarks/routing/general_lofo.py).

Scored through `Router.select` (fixed k = 10 for the ranking metrics; the shipped adaptive k for
tokens sent). The grid search itself re-ranks each request's top 60 with `complete` (the same stage
`select` runs), so it costs seconds, not a routing pass per setting.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from apidb.relations import co_use_pairs

from ..retrieval import targets as rt
from .common import HALVES, corpus, other_half
from .gold_misses import misses
from .half_models import General
from .set_scores import costs, fast_scores, keeps_single_bound, objective, scores, single_ndcg

FILES = [*rt.STB, "metatool_multi", "restbench_tmdb", "restbench_spotify", "seal_tools", "livemcpbench",
         "metatool_single", *rt.APIBENCH, "bfcl_live_multiple"]
QUICK_FILES = ["restbench_tmdb", "metatool_multi", "apibench_torchhub"]
FAMILY = {"stabletoolbench": "stabletoolbench", "metatool": "metatool", "restbench": "restbench",
          "seal": "seal_tools", "livemcpbench": "livemcpbench", "apibench": "apibench", "bfcl": "bfcl_live"}
KINDS = ("same_api", "same_category", "produces_for", "feeds", "co_use", "used")
STRUCTURAL, LEARNED = KINDS[:4], KINDS[4:]  # what the records say; what a usage log says
WEIGHTS = (0.0, 0.3, 0.6, 1.0)
# `used` needs no anchor, so it moves every co-used tool of a ranking at once: a finer, lower grid
GRID = {"used": (0.0, 0.1, 0.2, 0.3, 0.5)}
# The first five places never move: a first run that also tried keeping 3 chose 3 on the dev half
# with no single-tool loss there, and the test half then lost 0.026 and 0.064 single-tool nDCG@5
# (LiveMCPBench, 15 requests; StableToolBench G1 instruction, 6). Only an unmoved top five keeps the
# issue's bound (no single-tool nDCG@5 lower by more than 0.005) on requests nobody chose on.
KEEPS = (5,)
POOL = 60
# Shown beside the new default, not chosen from (name -> settings laid over it, what to show):
# adaptive k without each part's own tool sent (router.ranking.shaping), and, for the general
# encoder, each part ranked also by its own vector (the parts encoded apart: a second encoder pass),
# no floor on each part's own tool (benchmarks/routing/part_floor.py), each part's best two tools,
# no tie for a part's next tool (benchmarks/routing/part_tie.py), no part for an output file
# (router.ranking.output_file), and no part for a date relative to now (router.ranking.relative_time).
SENT = {"part tools not sent by adaptive k": ({"adaptive_part_tools": False}, "sent")}
VARIANTS = {**SENT, "part_signal hybrid": ({"part_signal": "hybrid"}, "all_gold@10"),
            "2 tools per part": ({"part_tools": 2, "part_tie": None}, "both"),
            "no part floor": ({"part_floor": None}, "all_gold@10"),
            "no part tie": ({"part_tie": None}, "both"),
            "no output file part": ({"output_file": False}, "both"),
            "no relative date part": ({"relative_time": False}, "both")}
# The router as shipped with the general encoder (its companion weights and part floor:
# router.ranking.config.general_encoder_config, the dev half's choice) in place of each half's choice:
# on the test half the two are the same, on the dev half the shipped setting is not held out.
AS_SHIPPED = "as shipped"
MAX_QUERIES = 200  # per file (a deterministic sample), as the other sections of `bench routing`


def load(quick: bool, names: list[str] | None = None) -> dict[str, Any]:
    """The files present of ``names`` (default: this section's, or its quick ones), their requests
    sampled (--quick: 24 each)."""
    from ..data.datasets import available, load_dataset
    out = {}
    for name in names if names is not None else (QUICK_FILES if quick else FILES):
        if available(name):
            d = load_dataset(name)
            d.queries = rt._sample(d.queries, 24 if quick else MAX_QUERIES)
            out[name] = d
    return out


def family(name: str) -> str:
    return next(f for prefix, f in FAMILY.items() if name.startswith(prefix))


def _off() -> dict[str, Any]:
    """Companions off, no tie for a part's next tool and no implied step's part: all are chosen after
    the weights (part_tie.py)."""
    return {**{f"companion_{k}": 0.0 for k in KINDS}, "part_tie": None, "output_file": False, "relative_time": False}


def _today() -> dict[str, Any]:
    """The router before issue 38: no companions and no part tools (router.ranking.part_tools)."""
    return {**_off(), "part_tools": 0}


def setting_of(weights: dict[str, float], keep: int, chosen: dict[str, Any] | None = None) -> dict[str, Any]:
    """Router settings of a choice: the kind weights, the kept places and, when ``chosen`` holds one,
    the part floor and tie (benchmarks/routing/part_floor.py, part_tie.py)."""
    # .get: a choice recorded before a kind (or the tie) existed had it off
    parts = {k: chosen.get(k) for k in ("part_floor", "part_tie")} if chosen and "part_floor" in chosen else {}
    parts.update({k: chosen[k] for k in ("output_file", "relative_time") if chosen and k in chosen})
    return {**{f"companion_{k}": weights.get(k, 0.0) for k in KINDS}, "companion_keep": keep, **parts}


def shipped_setting() -> dict[str, Any]:
    """The companion weights, kept places and part floor the router ships with the general encoder."""
    from router.ranking.config import general_encoder_config

    config = general_encoder_config()
    return setting_of(config.companion_weights, config.companion_keep,
                      {"part_floor": config.part_floor, "part_tie": config.part_tie,
                       "output_file": config.output_file, "relative_time": config.relative_time})


class Case:
    """One request: its file, half, gold set, the router that ranks it and (for the grid) that
    router's top ``POOL`` (record indices, scores)."""

    def __init__(self, file: str, q: Any, half: str, router: Any, docs: list[int] | None = None,
                 scores: list[float] | None = None) -> None:
        self.file, self.q, self.half, self.router = file, q, half, router
        self.docs, self.scores = docs or [], scores or []
        self.multi = len(q.relevant) > 1


def requests(sets: dict[str, Any], rts: dict[str, Any], half: str | None = None) -> list[Case]:
    """The requests of ``half`` (None: both), each with its router from ``rts``, not ranked yet."""
    from ..data.halves import half_of

    return [Case(name, q, half_of(q.id, name), rt.router_for(rts, name)) for name, d in sets.items()
            for q in d.queries if half is None or half_of(q.id, name) == half]


def cases(sets: dict[str, Any], rts: dict[str, Any], half: str | None = None) -> list[Case]:
    """`requests`, each with its router's top ``POOL`` with companions off (what the grid re-ranks)."""
    out = []
    off: dict[int, Any] = {}
    for c in requests(sets, rts, half):
        r = off.setdefault(id(c.router), c.router.configured(**_off()))
        sel = r.select(c.q.text, k=POOL, adaptive=False)
        c.docs, c.scores = [r._index[s.record.id] for s in sel], [s.score for s in sel]
        out.append(c)
    return out


def learned(sets: dict[str, Any], halves: set[str]) -> dict[str, list]:
    """Co-use relations per catalog (`corpus`) from the gold sets of ``halves``."""
    from ..data.halves import half_of

    golds: dict[str, list[set[str]]] = {}
    for name, d in sets.items():
        golds.setdefault(corpus(name), []).extend(q.relevant for q in d.queries
                                                  if len(q.relevant) > 1 and half_of(q.id, name) in halves)
    return {k: co_use_pairs(v) for k, v in golds.items()}


def _offline(cs: list[Case], graphs: dict[tuple[str, str], Any], weights: dict[str, float],
             keep: int) -> dict[int, list[str]]:
    from router.index.scores import Ranking
    from router.ranking.companions import complete

    out = {}
    for i, c in enumerate(cs):
        r = c.router
        ranking = Ranking(np.array(c.docs, dtype=np.int64), np.array(c.scores, dtype=np.float64))
        new, _ = complete(ranking, graphs[(corpus(c.file), c.half)], weights, anchors=r.config.companion_anchors,
                          keep=keep)
        out[i] = [r.records[d].id for d in new.docs[:10].tolist()]
    return out


def _ascend(cs: list[Case], graphs: dict, keep: int, kinds: tuple[str, ...], w: dict[str, float],
            floor: dict[str, float]) -> tuple[dict[str, float], float]:
    """Coordinate ascent over ``kinds`` from ``w``: a trial is taken only if it beats the setting
    before by more than 0.001 and keeps the single-tool bound."""
    cur = objective(fast_scores(cs, _offline(cs, graphs, w, keep)))
    for _ in range(2):
        for kind, value in ((k, v) for k in kinds for v in GRID.get(k, WEIGHTS)):
            trial = dict(w, **{kind: value})
            if trial == w:
                continue
            s = fast_scores(cs, _offline(cs, graphs, trial, keep))
            if objective(s) > cur + 0.001 and keeps_single_bound(s, floor):
                w, cur = trial, objective(s)
    return w, cur


def choose(cs: list[Case], graphs: dict, cold: dict) -> tuple[dict[str, float], int, float]:
    """For each number of kept places: the weights of the kinds the records say (``STRUCTURAL``)
    first, on ``cold`` (the same catalogs without co-use), then the co-use weight on top of them, on
    ``graphs`` (with the co-use learned). The best objective; a setting is kept only if it beats
    the one before by more than 0.001, none if none beats off.

    Two steps, not one ascent over every kind: chosen together, the co-use learned from the other
    half's gold sets stood in for the structural kinds and the ascent left them low, while the
    router also serves catalogs with no usage log yet (what the leave-one-family-out rows and the
    sets from outside score)."""
    off = fast_scores(cs, _offline(cs, graphs, {k: 0.0 for k in KINDS}, KEEPS[0]))
    floor = single_ndcg(off)
    best = ({k: 0.0 for k in KINDS}, KEEPS[-1], objective(off))
    for keep in KEEPS:
        w, _ = _ascend(cs, cold, keep, STRUCTURAL, {k: 0.0 for k in KINDS}, floor)
        w, cur = _ascend(cs, graphs, keep, LEARNED, w, floor)
        if cur > best[2] + 0.001:
            best = (w, keep, cur)
    return best


def relation_graphs(sets: dict, co: dict[str, dict[str, list]]) -> dict[tuple[str, str], Any]:
    """One relation graph per (catalog, half of the requests it ranks): the co-use learned for that half."""
    from router.ranking.companions import RelationGraph

    out = {}
    for name, d in sets.items():
        for half in HALVES:
            if (corpus(name), half) not in out:
                out[(corpus(name), half)] = RelationGraph.build(d.records, co[half].get(corpus(name), []))
    return out


def routed(cs: list[Case], setting: dict[str, Any] | None, co: dict[str, dict[str, list]] | None,
           sent_too: bool = True) -> tuple[dict[int, list[str]], dict[int, tuple[int, int, float]]]:
    """Per request, through `Router.select`: the top 10 (fixed k), and (``sent_too``) what the
    shipped adaptive k sends (tools, schema tokens, whether every gold tool is among them).
    ``setting``: laid over each router's own config (``{}``: as shipped; None: `today`); ``co``: the
    co-use each half's catalogs learned (None: none, as for a catalog nobody labelled)."""
    ranked, sent = {}, {}
    routers: dict[tuple[int, str, str], Any] = {}
    for i, c in enumerate(cs):
        key = (id(c.router), corpus(c.file), c.half)
        if key not in routers:
            r = c.router.configured(**(setting if setting is not None else _today()))
            if co is not None and setting is not None:
                r = r.with_co_use(co[c.half].get(corpus(c.file), []))
            routers[key] = r
        r = routers[key]
        ranked[i] = [s.record.id for s in r.select(c.q.text, k=10, adaptive=False)]
        if not sent_too:
            continue
        adaptive = r.select(c.q.text)
        sent[i] = (len(adaptive), sum(r._tokens_of(s.record) for s in adaptive),
                   float(c.q.relevant <= {s.record.id for s in adaptive}))
    return ranked, sent


def cross_fit(sets: dict[str, Any], by_half: dict[str, dict[str, Any]],
              variants: dict[str, tuple[dict[str, Any], str]] | None = None,
              floors: bool = False, choosers: dict[str, dict[str, Any]] | None = None,
              ) -> tuple[dict[str, Any], list[Case], dict, list[Case]]:
    """Weights chosen on each half, the other half scored. ``by_half[h]``: the routers (one per
    catalog) that score the other half of ``h`` with ``h``'s choice; ``choosers[h]`` (default
    ``by_half[h]``): the routers that rank half ``h`` for that choice. The same routers everywhere
    with the base model; with the general encoder's half models, the model trained on ``h`` scores the
    other half and the one trained on the other half ranks ``h`` for the choice (module doc), so no
    request is scored by a model or weights that saw it. Returns the tables,
    the scored requests, today's top 10 of each, and the requests the choices ranked (top ``POOL``).
    ``variants``: other router settings (name -> (config, what to show)) laid over each half's
    choice and scored the same way, shown beside the new default, never chosen from. ``floors``: each
    half also chooses the part floor, the tie and the implied steps' parts after its weights
    (benchmarks/routing/part_tie.py)."""
    co = {h: learned(sets, {other_half(h)}) for h in HALVES}  # co[h]: what ranks half h, from the other half
    graphs, cold = relation_graphs(sets, co), relation_graphs(sets, {h: {} for h in HALVES})
    chosen, pooled = {}, []
    for half in HALVES:
        pool = cases(sets, (choosers or by_half)[half], half)
        pooled += pool
        print(f"  {len(pool)} requests of the {half} half routed once (top {POOL})", flush=True)
        w, keep, obj = choose(pool, graphs, cold)
        chosen[half] = {"weights": w, "keep": keep, "objective": round(obj, 4)}
        print(f"  chosen on {half}: {w}, keep {keep} (objective {obj:.4f})", flush=True)
        if floors:
            from .part_tie import choose_part_settings

            chosen[half].update(choose_part_settings(pool, setting_of(w, keep), co, routed))
            print(f"  part floor, tie and implied steps chosen on {half}: {chosen[half]}", flush=True)
    scored: list[Case] = []
    today_ranked: dict[int, list[str]] = {}
    new_ranked: dict[int, list[str]] = {}
    today_sent: dict[int, tuple[int, int, float]] = {}
    new_sent: dict[int, tuple[int, int, float]] = {}
    varied: dict[str, tuple[dict, dict]] = {name: ({}, {}) for name in variants or {}}
    for half in HALVES:  # scored: the other half of each choice, by the routers of the choice
        pick = chosen[other_half(half)]
        part = cases(sets, by_half[other_half(half)], half)  # with its top POOL, for `misses`
        for store, setting in ((today_ranked, None), (new_ranked, setting_of(pick["weights"], pick["keep"], pick))):
            ranked, sent = routed(part, setting, co)
            store.update({len(scored) + j: v for j, v in ranked.items()})
            (today_sent if setting is None else new_sent).update({len(scored) + j: v for j, v in sent.items()})
        for name, (extra, show) in (variants or {}).items():
            ranked, sent = routed(part, {**setting_of(pick["weights"], pick["keep"], pick), **extra}, co,
                                   sent_too=show in ("sent", "both"))
            varied[name][0].update({len(scored) + j: v for j, v in ranked.items()})
            varied[name][1].update({len(scored) + j: v for j, v in sent.items()})
        scored += part
    tables = {"chosen": chosen, "shipped": chosen["dev"], "misses": misses(scored, graphs, chosen, POOL),
              "today": scores(scored, today_ranked),
              "new": scores(scored, new_ranked), "cost": {"today": costs(scored, today_sent),
                                                           "new": costs(scored, new_sent)},
              "variants": {name: {"show": variants[name][1], "scores": scores(scored, ranked),
                                  **({"cost": costs(scored, sent)} if sent else {})}
                           for name, (ranked, sent) in varied.items()}}
    return tables, scored, today_ranked, pooled


def run(sets: dict[str, Any], rts: dict[str, Any], quick: bool, general: General | str | None = None) -> dict[str, Any]:
    """The cross-fitted and leave-one-family-out tables (module doc) with the base model, and the
    cross-fitted tables with the general encoder's half models (``general``, from `general_routers`,
    or why there are none)."""
    sets = {n: d for n, d in sets.items() if n in (QUICK_FILES if quick else FILES)}
    print("  base model:", flush=True)
    tables, scored, today_ranked, pooled = cross_fit(sets, {h: rts for h in HALVES}, SENT)
    lofo = {} if quick else leave_one_family_out(scored, pooled, sets, today_ranked)
    out = {"files": list(sets), **tables, "lofo": lofo}
    if isinstance(general, tuple):
        by_half, models = general
        print("  general encoder (each half chosen with the model that did not train on it):", flush=True)
        variants = {**VARIANTS, AS_SHIPPED: (shipped_setting(), "all_gold@10")}
        choosers = {h: by_half[other_half(h)] for h in HALVES}
        out["general"] = {**cross_fit(sets, by_half, variants, floors=True, choosers=choosers)[0], "models": models}
    else:
        out["general"] = {"skipped": general or "not asked for"}
    return out


def leave_one_family_out(cs: list[Case], pooled: list[Case], sets: dict, today: dict[int, list[str]]) -> dict[str, Any]:
    """Per family: the setting chosen on every other family (``pooled``: their requests' top
    ``POOL``, with the co-use of their gold sets), scoring this one (``cs``, today's top 10
    ``today``) from its records' relations alone."""
    learned_all = learned(sets, set(HALVES))
    none: dict[str, dict[str, list]] = {h: {} for h in HALVES}
    graphs, cold = relation_graphs(sets, {h: learned_all for h in HALVES}), relation_graphs(sets, none)
    out = {}
    for fam in sorted({family(c.file) for c in cs if c.multi}):
        idx = [i for i, c in enumerate(cs) if family(c.file) == fam]
        w, keep, _ = choose([c for c in pooled if family(c.file) != fam], graphs, cold)
        test = [cs[i] for i in idx]
        new_ranked, _ = routed(test, setting_of(w, keep), none)
        out[fam] = {"weights": w, "keep": keep, "today": scores(test, {j: today[i] for j, i in enumerate(idx)}),
                    "new": scores(test, new_ranked)}
        print(f"  leave out {fam}: {w}, keep {keep}", flush=True)
    return out
