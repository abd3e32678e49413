"""Routing beyond top-k: complete sets for multi-tool requests, adaptive k, abstention, exact names,
learning from use — beside today's router and rank-bm25.

    toolsift bench routing [--quick] [--model DIR] [--out DIR]

Every setting is chosen on one half of the queries and scored on the other (cross-fitting, with the
halves of benchmarks/retrieval/targets.py): the report never shows a figure from a setting chosen on
the queries it scores. ``--model`` runs everything with another encoder (e.g. a tuned folder);
the report says which. Writes OUT/results.json and OUT/report.md (default
benchmarks/results/routing). Sections: benchmarks/routing/report.py.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from router.encoders.model import BASE_MODEL

from ..retrieval import targets as rt
from . import sets as rs
from .common import MULTI, NEW, QUICK, SINGLE, TODAY, _metrics, other_half, routers

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "routing"
COVERAGE_GRID = (0.0, 0.3)
RATIO_GRID = (0.5, 0.6, 0.7, 0.8)
MAX_QUERIES = 200  # per file (a deterministic sample): two CPU cores shared by several jobs
FIXED_K = (1, 2, 3, 5, 7, 10, 15, 20)
ABSTAIN_GRID = tuple(round(x, 3) for x in np.arange(0.10, 0.451, 0.01))
MAX_WRONG_ABSTAIN = 0.02
def load(quick: bool) -> dict[str, Any]:
    from ..data.datasets import load_dataset

    out = {}
    for name in (n for n in MULTI + SINGLE if not quick or n in QUICK):
        d = load_dataset(name)
        d.queries = rt._sample(d.queries, 24 if quick else MAX_QUERIES)
        out[name] = d
    return out


def _ranked(router, queries, k: int, **select) -> dict[str, list[str]]:
    return {q.id: [s.record.id for s in router.select(q.text, k=k, **select)] for q in queries}


def quality(sets: dict, rts: dict, quick: bool) -> dict[str, Any]:
    """Today's router, rank-bm25 and the new router with coverage chosen per half (cross-fit)."""
    from ..retrieval.methods import RankBM25

    halves = {n: {h: [q for q in d.queries if rt._half(q.id, n) == h] for h in ("dev", "test")} for n, d in sets.items()}
    grid: dict[float, dict[str, dict[str, dict]]] = {}
    for lam in COVERAGE_GRID:
        grid[lam] = {}
        for n, d in sets.items():
            r = rt.router_for(rts, n).configured(coverage=lam)
            ranked = _ranked(r, d.queries, 10, adaptive=False)
            grid[lam][n] = {h: _metrics(qs, {q.id: ranked[q.id] for q in qs}) | {"ranked": {q.id: ranked[q.id] for q in qs}}
                            for h, qs in halves[n].items()}
        print(f"  coverage {lam}: " + ", ".join(f"{n} {grid[lam][n]['dev']['all_gold@10']:.3f}" for n in MULTI
                                                 if n in sets),
              flush=True)

    def objective(lam: float, half: str) -> float:  # what coverage is for: complete sets, without losing rank
        return statistics.mean((grid[lam][n][half]["ndcg@5"] + grid[lam][n][half]["all_gold@10"]) / 2
                               for n in MULTI if n in sets)

    chosen = {}
    for half in ("dev", "test"):
        best = max(COVERAGE_GRID, key=lambda lam: objective(lam, half))
        chosen[half] = best if objective(best, half) > objective(0.0, half) + rt.KEEP_DEFAULT_MARGIN else 0.0
    rows: dict[str, dict[str, dict]] = {"rank_bm25 (plain)": {}, "today's router": {}, "new router (cross-fitted)": {}}
    for n, d in sets.items():
        rb = RankBM25(d.records)
        rows["rank_bm25 (plain)"][n] = _metrics(d.queries, {q.id: rb.search(q.text, 10) for q in d.queries})
        today = rt.router_for(rts, n).configured(**TODAY)
        rows["today's router"][n] = _metrics(d.queries, _ranked(today, d.queries, 10, adaptive=False))
        # each half scored with the coverage weight the *other* half chose (exact names on)
        ranked = {}
        for half in ("dev", "test"):
            ranked.update(grid[chosen[other_half(half)]][n][half]["ranked"])
        rows["new router (cross-fitted)"][n] = _metrics(d.queries, ranked)
    return {"grid": {str(lam): {n: {h: {k: v for k, v in m.items() if k != "ranked"} for h, m in per.items()}
                                for n, per in g.items()} for lam, g in grid.items()},
            "chosen": {h: chosen[h] for h in chosen}, "shipped": chosen["dev"], "rows": rows}


def curve(sets: dict, rts: dict) -> dict[str, Any]:
    """Tokens sent vs all-gold-offered: fixed k, and adaptive k (ceiling 10) per ratio, per half."""
    from router.ranking.adaptive_k import AdaptiveK

    def measure(pick) -> dict[str, dict[str, float]]:
        out = {}
        for half in ("dev", "test"):
            toks, full, n_tools = [], [], []
            for n in (x for x in MULTI + SINGLE if x in sets):
                r = rt.router_for(rts, n)
                for q in (q for q in sets[n].queries if rt._half(q.id, n) == half):
                    sel = pick(r, q)
                    toks.append(sum(r._tokens_of(s.record) for s in sel))
                    n_tools.append(len(sel))
                    full.append(q.relevant <= {s.record.id for s in sel})
            out[half] = {"tokens": float(np.mean(toks)), "all_gold": float(np.mean(full)), "tools": float(np.mean(n_tools))}
        return out

    top = {}  # one fixed-k ranking per query; each fixed k is its prefix

    def prefix(r, q, k):  # keyed by the router too: query ids repeat across files
        key = (id(r), q.id, q.text)
        if key not in top:
            top[key] = list(r.select(q.text, k=max(FIXED_K), adaptive=False))
        return top[key][:k]

    fixed = {k: measure(lambda r, q, k=k: prefix(r, q, k)) for k in FIXED_K}
    adaptive = {ratio: measure(lambda r, q, ratio=ratio: r.select(q.text, k=10, adaptive=AdaptiveK(ratio)))
                for ratio in RATIO_GRID}
    out = {"fixed": {str(k): v for k, v in fixed.items()}, "adaptive": {str(x): v for x, v in adaptive.items()}}
    return {**out, **choose_ratio(out)}


RATIO_RULE = "cheapest ratio at least as complete as fixed k=5 and as fixed k at equal tokens"


def choose_ratio(curve_: dict[str, Any]) -> dict[str, Any]:
    """The default's rule, per half: the cheapest adaptive ratio (fewest mean tokens) whose all-gold-offered
    is at least fixed k=5's (the old default's completeness) and at least the fixed-k curve's at the
    same tokens (linear between the fixed points); none: the loosest ratio.

    A first rule (the most complete ratio costing no more tokens than fixed k=5) picked 0.8 on the first
    full run: 3.5 tools, all-gold 0.52 against fixed k=5's 0.62 — a default less complete than the old
    one, so the rule was replaced on the same measured curve (the report says so). The second condition
    came when the cut began keeping every strong tool wherever it is ranked (router.ranking.adaptive_k):
    on that curve the first condition alone picked 0.7, a point a fixed k beats at equal tokens, which is
    never worth the name (``first_condition_alone`` keeps what it would pick; the report says so)."""
    import numpy as np

    chosen, alone = {}, {}
    for half in ("dev", "test"):
        fixed = sorted((v[half]["tokens"], v[half]["all_gold"]) for v in curve_["fixed"].values())
        floor = curve_["fixed"]["5"][half]["all_gold"]
        fits = [x for x, v in curve_["adaptive"].items() if v[half]["all_gold"] >= floor]
        undominated = [x for x in fits if curve_["adaptive"][x][half]["all_gold"]
                       >= float(np.interp(curve_["adaptive"][x][half]["tokens"], *zip(*fixed)))]
        for out, among in ((chosen, undominated), (alone, fits)):
            out[half] = float(min(among, key=lambda x: curve_["adaptive"][x][half]["tokens"]) if among
                              else min(curve_["adaptive"], key=float))
    return {"chosen": chosen, "shipped": chosen["dev"], "rule": RATIO_RULE, "first_condition_alone": alone}


def abstention(model: str | None, quick: bool) -> dict[str, Any]:
    """Evidence per case (one routing each), then the threshold chosen per half (cross-fit)."""
    from router import Router

    evid: dict[str, list] = {}
    limits = {rs.bfcl_cases: 12, rs.stb_cases: 3, rs.metatool_cases: 12} if quick else \
        {rs.bfcl_cases: 150, rs.stb_cases: 40, rs.metatool_cases: 200}
    for build in (rs.bfcl_cases, rs.stb_cases, rs.metatool_cases):
        records, cases = build(limits.get(build))
        r = Router(records, model=model or BASE_MODEL)
        r.encode_queries = rt.QueryVectors(r)
        r.encode_query_sentences = r.encode_queries.sentences
        r.dense_index()
        r = r.configured(**NEW, abstain_below=1.0)  # always measured; the threshold is swept below
        for c in cases:
            sel = r.select(c.text, k=5, adaptive=False, candidates=c.candidates)
            named = sel.abstention is None  # a named tool: never abstains
            evid.setdefault(c.set, []).append((c.id, c.answerable, 1.0 if named else sel.abstention.evidence))
        print(f"  {cases[0].set}: {len(cases)} cases", flush=True)

    def rates(tau: float, half: str) -> dict[str, dict[str, float]]:
        out = {}
        for name, rows in evid.items():
            rows = [x for x in rows if rs._half(x[0], name) == half]
            ans = [e < tau for _, a, e in rows if a]
            una = [e < tau for _, a, e in rows if not a]
            out[name] = {"correct_abstention": float(np.mean(una)) if una else float("nan"),
                         "wrong_abstention": float(np.mean(ans)) if ans else float("nan"),
                         "answerable": len(ans), "unanswerable": len(una)}
        return out

    def pooled_wrong(tau: float, half: str) -> float:
        return float(np.mean([e < tau for name, rows in evid.items() for qid, a, e in rows
                              if a and rs._half(qid, name) == half]))

    chosen = {}
    for half in ("dev", "test"):
        ok = [t for t in ABSTAIN_GRID if pooled_wrong(t, half) <= MAX_WRONG_ABSTAIN]
        chosen[half] = max(ok) if ok else min(ABSTAIN_GRID)
    scored = {half: rates(chosen[other_half(half)], half) for half in ("dev", "test")}
    return {"chosen": chosen, "shipped": chosen["dev"], "scored": scored,
            "sweep": {str(t): rates(t, "dev") for t in ABSTAIN_GRID[::5]}}


def exact_names(model: str | None, quick: bool) -> dict[str, Any]:
    from router import Router

    from ..data.datasets import load_dataset

    out = {}
    for catalog, style in rs.NAME_CATALOGS.items():
        if quick and catalog not in ("livemcpbench", "bfcl_live_multiple"):
            continue
        d = load_dataset(catalog)
        r = Router(d.records, model=model or BASE_MODEL)
        r.encode_queries = rt.QueryVectors(r)
        r.encode_query_sentences = r.encode_queries.sentences
        qs = rs.name_queries(catalog, d.records, 5 if quick else 40)
        row: dict[str, Any] = {"style": style, "tools": len({x[0] for x in qs}), "queries": len(qs)}
        for label, cfg in (("today", TODAY), ("new", NEW)):
            rr = r.configured(**cfg)
            top1 = [rr.select(text, k=5, adaptive=False)[0].record.id == rid for rid, _, text in qs]
            row[f"{label}_rank1"] = float(np.mean(top1)) if top1 else float("nan")
            by_style: dict[str, list[bool]] = {}
            for (rid, st, _), hit in zip(qs, top1):
                by_style.setdefault(st, []).append(hit)
            row[f"{label}_by_style"] = {st: float(np.mean(v)) for st, v in by_style.items()}
        out[catalog] = row
        print(f"  {catalog}: rank-1 {row['today_rank1']:.3f} -> {row['new_rank1']:.3f}", flush=True)
    return out


def _general(csets: dict[str, Any], model: str | None, quick: bool) -> Any:
    """The general encoder's half models for the companions section's cross-fitted rows; none when
    another encoder was asked for (--model)."""
    if model is not None:
        return f"--model {model}: the general encoder's rows are scored only with the default encoder"
    from .half_models import general_routers

    return general_routers(csets, quick)


def rechosen(curve_: dict[str, Any]) -> dict[str, Any]:
    """The curve with the current rule's choice: re-chosen on the same curve when an earlier rule
    wrote it (what the first rule chose stays, for the report)."""
    if curve_.get("rule") == RATIO_RULE:
        return curve_
    return {**curve_, **choose_ratio(curve_), **({"first_rule_chose": curve_["chosen"]} if curve_.get("rule") is None
                                                 else {})}


def _kept_lofo(prior: dict[str, Any], model: str | None) -> dict[str, Any]:
    """The general encoder's leave-one-family-out rows of an earlier run (one `--leave-out FAMILY`
    run each, 44-76 minutes of training apiece): a rerun of the companions section keeps them."""
    rows = prior.get("companions", {}).get("general_lofo")
    return {"general_lofo": rows} if rows and model is None else {}


def _leave_out(res: dict[str, Any], leave_out: str, quick: bool, cmd: str, save: Callable[[], None],
               report: Callable[[], None]) -> None:
    """The general encoder's rows with ``leave_out`` left out, or with each family in turn (``all``:
    saved after each, so an interrupted run keeps the families it finished; a family it cannot score
    here is named and passed over)."""
    from ..retrieval.comparison import _loadavg
    from . import general_lofo
    from .companions_report import general_lofo_summary

    for fam in general_lofo.FAMILIES if leave_out == general_lofo.ALL else (leave_out,):
        t0, start = time.perf_counter(), _loadavg()
        sets = general_lofo.load(fam, quick)
        if leave_out == general_lofo.ALL and (why := general_lofo.unrunnable(fam, sets, quick)) is not None:
            print(f"  passed over: {why}", flush=True)
            continue
        print(f"leaving out {fam}", flush=True)
        row = general_lofo.run(fam, sets, quick)
        row.update(command=f"{cmd} --only companions --leave-out {leave_out}",
                   wall_seconds=round(time.perf_counter() - t0, 1), load_average={"start": start, "end": _loadavg()})
        res.setdefault("companions", {}).setdefault("general_lofo", {})[fam] = row
        save()
        report()
        print(general_lofo_summary(res, fam), flush=True)


def run(out_dir: str | os.PathLike[str] | None = None, quick: bool = False, model: str | None = None,
        tune_log: bool = True, only: str | None = None, leave_out: str | None = None) -> dict[str, Any]:
    import warnings

    from . import costs as extra
    from ..retrieval.comparison import _loadavg, versions
    from .report import write_report

    warnings.filterwarnings("ignore", module="ranx")
    warnings.filterwarnings("ignore", module="numba")
    out = Path(out_dir) if out_dir else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    cmd = "toolsift bench routing" + (" --quick" if quick else "") + (f" --model {model}" if model else "")
    res: dict[str, Any] = {"command": cmd, "quick": quick, "model": model or "all-MiniLM-L6-v2 (base, ONNX int8)",
                           "versions": versions(), "load_average": {"start": _loadavg()}}

    def save() -> None:
        out.joinpath("results.json").write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")

    if only == "companions":  # complete sets from tool relations, into an earlier run's results if any
        from . import companions

        prior, start = out.joinpath("results.json"), res["load_average"]["start"]
        if prior.is_file():
            res = json.loads(prior.read_text(encoding="utf-8"))
        from .companions_report import companions_summary
        from .general_lofo import ALL

        if leave_out in (None, ALL):  # the cross-fitted tables (each family's left-out rows kept)
            csets = companions.load(quick)
            kept = _kept_lofo(res, model)
            res["companions"] = companions.run(csets, routers(csets, model), quick, _general(csets, model, quick))
            res["companions"].update(command=f"{cmd} --only companions" + (f" --leave-out {ALL}" if leave_out else ""),
                                     wall_seconds=round(time.perf_counter() - t0, 1),
                                     load_average={"start": start, "end": _loadavg()}, **kept)  # this run's load
            save()
            write_report(res, out)
            print(companions_summary(res), flush=True)
        if leave_out is not None:  # one family's general-encoder rows, or each in turn, beside the others' earlier ones
            _leave_out(res, leave_out, quick, cmd, save, lambda: write_report(res, out))
        return res
    if only in ("parts", "outside"):  # a section of its own, into an earlier run's results if any
        from . import outside, parts

        if out.joinpath("results.json").is_file():
            res = json.loads(out.joinpath("results.json").read_text(encoding="utf-8"))
        res[only] = (parts if only == "parts" else outside).run(quick, model) | {"command": f"{cmd} --only {only}"}
        save()
        write_report(res, out)
        return res
    if only:  # one section alone (speed | usage-log | curve), into an earlier run's results
        res = json.loads(out.joinpath("results.json").read_text(encoding="utf-8"))
        if "quality" not in res:  # a folder only `--only parts|companions` wrote: no coverage choice to reuse
            from ..errors import BenchmarkError

            raise BenchmarkError(f"--only {only}: {out / 'results.json'} has no full run's sections (quality): "
                                 "run `toolsift bench routing` into that folder first")
        sets = load(quick)
        NEW["coverage"] = res["quality"]["shipped"]
        if "curve" in res:
            res["curve"] = rechosen(res["curve"])
        key = {"speed": "speed", "usage-log": "usage_log", "curve": "curve"}[only]
        if only == "curve":  # with the earlier run's coverage choice, as the full run measures it
            res[key] = curve(sets, {k: r.configured(**NEW) for k, r in routers(sets, model).items()})
        else:
            res[key] = extra.overhead(sets, model, quick) if only == "speed" else extra.log_replay(sets, model, quick)
        res[key]["command"] = f"{cmd} --only {only}"
        save()
        write_report(res, out)
        return res
    sets = load(quick)
    rts = routers(sets, model)
    print("quality (coverage cross-fitted, exact names):", flush=True)
    res["quality"] = quality(sets, rts, quick)
    NEW["coverage"] = res["quality"]["shipped"]
    rts = {key: r.configured(**NEW) for key, r in rts.items()}
    save()
    print("complete sets from tool relations:", flush=True)
    from . import companions

    csets = companions.load(quick)
    prior = out.joinpath("results.json")
    kept = _kept_lofo(json.loads(prior.read_text(encoding="utf-8")) if prior.is_file() else {}, model)
    res["companions"] = companions.run(csets, routers(csets, model), quick, _general(csets, model, quick)) | kept
    save()
    print("adaptive k curve:", flush=True)
    res["curve"] = curve(sets, rts)
    save()
    print("abstention:", flush=True)
    res["abstention"] = abstention(model, quick)
    save()
    print("exact names:", flush=True)
    res["exact_names"] = exact_names(model, quick)
    save()
    print("parts of multi-tool requests (the split):", flush=True)
    from . import parts

    res["parts"] = parts.run(quick, model)
    save()
    print("multi-step requests from outside the training families:", flush=True)
    from . import outside

    res["outside"] = outside.run(quick, model) | {"command": cmd}
    save()
    print("speed at 20k tools:", flush=True)
    res["speed"] = extra.overhead(sets, model, quick)
    save()
    if tune_log:
        print("learning from use (usage-log replay):", flush=True)
        res["usage_log"] = extra.log_replay(sets, model, quick)
    res["wall_seconds"] = round(time.perf_counter() - t0, 1)
    res["load_average"]["end"] = _loadavg()
    save()
    write_report(res, out)
    return res
