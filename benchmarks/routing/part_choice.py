"""Each part's own best tool (router.ranking.part_tools): does it pay, and how many per part?

Part of `toolsift bench routing --only parts`, on the same files and requests as the split
measurement (benchmarks/routing/parts.py): with the router's defaults otherwise, ``part_tools`` in
GRID is scored per half; each half's choice maximizes the mean all-gold@10 of the multi-tool files,
admissible only when no file loses more than 0.005 nDCG@5 on that half, and 0 (off) is kept unless
beaten by more than 0.001. Each half is then ranked with the *other* half's choice (cross-fitting),
so no figure comes from a setting chosen on the requests it scores. Leave one family out: the same
choice made on every other family's files (all their requests), scoring the family left out.
"""
from __future__ import annotations

from typing import Any

from router import RouterConfig

from ..report import md_table
from ..report import short_file as short
from ..retrieval import targets as rt
from .common import HALVES, choose_per_half, choose_setting, cross_fitted, mean_all_gold, scores_by_file
from .companions import family

GRID = (0, 1, 2)          # part_tools, with part_signal "bm25" (no encoder work): the default's choice
ENCODED = "hybrid"        # shown beside it, not chosen from: each part encoded apart costs an encoder pass
MAX_DROP = 0.005


def measure(sets: dict, routers: dict, multi_files: list[str]) -> dict[str, Any]:
    """Rankings per setting, the cross-fitted choice, and today vs cross-fitted rows."""
    def rank(**config: Any) -> dict[str, dict[str, list[str]]]:
        return {n: {q.id: [s.record.id for s in rt.router_for(routers, n).configured(**config)
                           .select(q.text, k=10, adaptive=False)] for q in d.queries} for n, d in sets.items()}

    ranked = {t: rank(part_tools=t, part_signal="bm25") for t in GRID}
    encoded = rank(part_tools=1, part_signal=ENCODED)
    scored = {t: {h: scores_by_file(sets, ranked[t], h) for h in HALVES} for t in GRID}
    multi = [n for n in multi_files if n in sets]
    chosen = choose_per_half(scored, 0, multi, list(sets), MAX_DROP)
    crossed = cross_fitted(sets, ranked, chosen)
    return {"grid": list(GRID), "chosen": chosen, "shipped": RouterConfig().part_tools,
            "lofo": leave_one_family_out(sets, ranked, multi),
            "objective": {str(t): {h: mean_all_gold(scored[t][h], multi) for h in HALVES} for t in GRID},
            "rows": {"off": scores_by_file(sets, ranked[0], None), "cross-fitted": scores_by_file(sets, crossed, None),
                     "encoded": scores_by_file(sets, encoded, None)}}


def leave_one_family_out(sets: dict, ranked: dict, multi: list[str]) -> dict[str, Any]:
    """Per family with multi-tool files: ``part_tools`` chosen on every other family's files (all
    their requests, the same rule as per half), and that family's files off -> that choice."""
    whole = {t: scores_by_file(sets, ranked[t], None) for t in GRID}
    out = {}
    for fam in sorted({family(n) for n in multi}):
        others = [n for n in sets if family(n) != fam]
        pick = choose_setting({t: {n: whole[t][n] for n in others} for t in GRID}, 0,
                              [n for n in multi if family(n) != fam], others, MAX_DROP)
        out[fam] = {"chosen": pick, "rows": {n: {"off": whole[0][n], "new": whole[pick][n]}
                                             for n in sets if family(n) == fam}}
    return out


def _lofo_lines(lofo: dict[str, Any], short: Any) -> list[str]:
    rows = [[fam, str(row["chosen"]), short(n),
             *[f"{r['off'][k]:.3f} → {r['new'][k]:.3f}" for k in ("ndcg@5", "all_gold@5", "all_gold@10")]]
            for fam, row in lofo.items() for n, r in row["rows"].items()]
    return ["Leave one family out: `part_tools` chosen the same way on every other family's files (all their "
            "requests), scoring the family left out; off → that choice, fixed k = 10:", "",
            md_table(["family", "chosen without it", "file", "nDCG@5", "all gold @5", "all gold @10"], rows), ""]


def report_lines(pt: dict[str, Any], multi_files: list[str]) -> list[str]:
    if not pt:
        return []
    off, new, enc = pt["rows"]["off"], pt["rows"]["cross-fitted"], pt["rows"].get("encoded", {})
    rows = [[short(n), "multi" if n in multi_files else "single",
             *[f"{off[n][k]:.3f} → {new[n][k]:.3f} ({new[n][k] - off[n][k]:+.3f})"
               for k in ("ndcg@5", "all_gold@5", "all_gold@10")],
             f"{enc[n]['all_gold@10']:.3f}" if n in enc else "-"] for n in off]
    return ["### Each part's own best tool (router.ranking.part_tools)", "",
            f"`part_tools` (each part's best tools placed after the first {RouterConfig().companion_keep}) chosen "
            f"from {pt['grid']} on one half, scored on the other (objective: mean all-gold@10 of the multi-tool "
            f"files; admissible when no file loses more than {MAX_DROP} nDCG@5; off kept unless beaten by more than "
            f"0.001). Chosen on dev: **{pt['chosen']['dev']}**, on test: **{pt['chosen']['test']}**; the router's "
            f"default (`RouterConfig.part_tools`): **{pt['shipped']}**. Parts ranked by their words (BM25, "
            f"`part_signal` \"bm25\": no encoder work). Off → cross-fitted, fixed k = 10; last column: one tool per "
            f"part ranked by its words and its own vector (`part_signal` \"{ENCODED}\", each part encoded apart: "
            "about a second encoder pass over an agent's request; every request, not chosen from):", "",
            md_table(["file", "requests", "nDCG@5", "all gold @5", "all gold @10",
                      f"all gold @10, part_signal {ENCODED}"], rows), "",
            *(_lofo_lines(pt["lofo"], short) if pt.get("lofo") else [])]
