"""Routing on multi-step requests from outside the training families (benchmarks/data/outside.py):
the shipped router, nothing trained or chosen on these requests.

    toolsift bench routing --only outside [--quick] [--model DIR]

Each set routes over its own tools, and once more every set's requests route over all the sets'
tools in one catalog (a gateway holds many services). Per set and encoder (the base MiniLM and
the shipped general encoder; ``--model`` replaces both), single-tool and multi-tool requests apart:
nDCG@5 and all gold @5 / @10 at a fixed k of 10, and what the shipped adaptive k sends (tools,
schema tokens, whether every gold tool is among them), for `today` (the router before issue 38:
companions and part tools off), `new` (the shipped defaults) and, beside them, not chosen from,
``part_signal="hybrid"`` (each part also ranked by its own vector) and the defaults without the
floor on each part's own tool (``part_floor=None``; the base MiniLM has none).
"""
from __future__ import annotations

import time
from typing import Any

from ..retrieval import targets as rt
from .companions import MAX_QUERIES, Case, _today, routed
from .set_scores import costs, scores

__all__ = ["ALL", "SETTINGS", "run", "section", "summary"]

ALL = "all sets in one catalog"
SETTINGS: dict[str, dict[str, Any]] = {"today": _today(), "new": {}, "part_signal hybrid": {"part_signal": "hybrid"},
                                       "no part floor": {"part_floor": None}}


def _router(records: list, model: str | None) -> Any:
    """A router as the package ships it for ``model`` (None: the general encoder, its own defaults),
    query vectors cached across runs."""
    from router import Router

    r = Router(records, model=model)
    r.encode_queries = rt.QueryVectors(r)
    r.encode_query_sentences = r.encode_queries.sentences
    r.dense_index()
    return r


def _scored(cs: list[Case], setting: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Per file and group: the ranking metrics at k = 10, and what the shipped adaptive k sends."""
    ranked, sent = routed(cs, setting, None)
    cost = costs(cs, sent)
    return {key: {**m, **cost[key]} for key, m in scores(cs, ranked).items()}


def encoders(model: str | None) -> dict[str, str | None]:
    from router.encoders.model import BASE_MODEL

    if model:
        return {model: model}
    return {"base MiniLM": BASE_MODEL, "general encoder (shipped)": None}


def run(quick: bool, model: str | None) -> dict[str, Any]:
    """The tables of the module doc, or why there are none (the sets are not installed)."""
    from ..data.outside import OUTSIDE, available_outside, load_outside
    from ..retrieval.comparison import _loadavg

    t0, start = time.perf_counter(), _loadavg()
    names = [n for n in OUTSIDE if available_outside(n)]
    if not names:
        return {"skipped": "the outside sets are not installed (the PyPI wheel nestful-wrapper: "
                           "pip install 'toolsift[bench]')"}
    sets = {}
    for n in names:
        d = load_outside(n)
        d.queries = rt._sample(d.queries, 24 if quick else MAX_QUERIES)
        sets[n] = d
    union = [r for d in sets.values() for r in d.records]
    rows: dict[str, dict[str, Any]] = {}
    for label, enc in encoders(model).items():
        own = {n: _router(d.records, enc) for n, d in sets.items()}
        shared = _router(union, enc)
        for catalog, router_of in (("own", lambda n: own[n]), (ALL, lambda n: shared)):
            cs = [Case(n, q, "", router_of(n)) for n, d in sets.items() for q in d.queries]
            rows.setdefault(label, {})[catalog] = {name: _scored(cs, s) for name, s in SETTINGS.items()}
            print(f"  {label}, {catalog if catalog == ALL else 'each set its own catalog'}: "
                  f"{len(cs)} requests", flush=True)
    return {"sets": {n: {"tools": len(d.records), "requests": len(d.queries),
                         "multi": sum(len(q.relevant) > 1 for q in d.queries), "notes": d.notes}
                     for n, d in sets.items()},
            "catalog_tools": len(union), "rows": rows, "wall_seconds": round(time.perf_counter() - t0, 1),
            "load_average": {"start": start, "end": _loadavg()}}


def summary(res: dict[str, Any]) -> str:
    """One line per encoder: the multi-tool all gold @10, today -> new, each catalog."""
    o = res["outside"]
    if "skipped" in o:
        return f"outside sets: skipped: {o['skipped']}"
    out = []
    for enc, catalogs in o["rows"].items():
        for catalog, by in catalogs.items():
            cells = ", ".join(f"{k.split('|')[0]} {by['today'][k]['all_gold@10']:.3f} -> {v['all_gold@10']:.3f}"
                              for k, v in by["new"].items() if k.endswith("|multi"))
            out.append(f"{enc}, {'own catalogs' if catalog == 'own' else ALL}: multi-tool all-gold@10 {cells}")
    return "\n".join(out)


def section(res: dict[str, Any]) -> list[str]:
    """The report's section for ``res["outside"]``."""
    from ..report import figure as _f
    from ..report import md_table

    o = res.get("outside")
    if not o:
        return []
    lines = ["## Multi-step requests from outside the training families (issue 38)", ""]
    if "skipped" in o:
        return lines + [f"Skipped: {o['skipped']}.", ""]
    lines += [f"`{o['command']}`, {o['wall_seconds']:.0f} s, load average {o['load_average']['start']} → "
              f"{o['load_average']['end']}. Nothing here was trained or chosen on these requests "
              "(benchmarks/data/outside.py says where they come from). Multi-tool requests; today → new, "
              "`hybrid` = the new default with `part_signal=\"hybrid\"`, `no floor` = without the floor on each part's "
              "own tool (`part_floor=None`). Sets: " +
              "; ".join(f"{n} {s['tools']} tools, {s['requests']} requests ({s['multi']} multi-tool)"
                        for n, s in o["sets"].items()) + f"; all in one catalog: {o['catalog_tools']} tools.", ""]
    head = ["encoder", "catalog", "set", "n", "nDCG@5", "all gold @5", "all gold @10", "hybrid @10",
            "no floor @10", "tools sent", "tokens sent", "all gold sent"]
    body = []
    for enc, catalogs in o["rows"].items():
        for catalog, by in catalogs.items():
            for key, new in by["new"].items():
                if not key.endswith("|multi"):
                    continue
                old, hyb, loose = by["today"][key], by["part_signal hybrid"][key], by["no part floor"][key]
                body.append([enc, "its own" if catalog == "own" else "all", key.split("|")[0], str(new["n"]),
                             *(f"{_f(old[m])} → {_f(new[m])}" for m in ("ndcg@5", "all_gold@5", "all_gold@10")),
                             _f(hyb["all_gold@10"]), _f(loose["all_gold@10"]), f"{old['tools']:.1f} → {new['tools']:.1f}",
                             f"{old['tokens']:.0f} → {new['tokens']:.0f}",
                             f"{_f(old['all_gold_sent'])} → {_f(new['all_gold_sent'])}"])
    singles = sorted({k.split("|")[0] for by in o["rows"].values() for c in by.values()
                      for k in c["new"] if k.endswith("|single")})
    lines += [md_table(head, body), ""]
    if singles:
        lines += [f"Single-tool requests ({', '.join(singles)}) are in results.json.", ""]
    return lines
