"""report.md of `toolsift bench routing` (benchmarks/routing/features.py), from its results dict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..report import figure as _f
from ..report import md_table
from ..report import short_file as _short


def summary(res: dict[str, Any]) -> str:
    if "quality" not in res:  # a section run alone (--only) into a new folder
        if "companions" in res:
            from .companions_report import companions_summary

            return companions_summary(res)
        from .parts import summary as parts_summary

        return parts_summary(res.get("parts", {}))
    q = res["quality"]["rows"]
    from .common import MULTI

    ag = {label: sum(rows[n]["all_gold@10"] for n in MULTI if n in rows) / sum(n in rows for n in MULTI)
          for label, rows in q.items()}
    today = ag["today's router"]
    a = res["abstention"]
    return (f"multi-tool all-gold@10: today {today:.3f}, "
            f"new {ag['new router (cross-fitted)']:.3f}; adaptive ratio {res['curve']['shipped']}; "
            f"abstain below {a['shipped']}; {res['speed']['new_k5_added_mean_ms']:+} ms/query at "
            f"{res['speed']['catalog']:,} tools (k=5)")


def _quality(res: dict[str, Any]) -> list[str]:
    from .common import MULTI, SINGLE

    q = res["quality"]
    lines = ["## Complete sets for multi-tool requests (item 2) and exact names (item 5) on the labelled sets", "",
             "Fixed k = 10 (the rankings' top 10). `all gold @k` = share of queries whose every gold tool is in the "
             "top k. Multi-tool files: StableToolBench G1 (several endpoints of one API family), G2 (several "
             "APIs), MetaTool multi (2 tools); single-tool files: MetaTool single, APIBench. `today's router` = the "
             "router before this work (no coverage, no exact names). The new router's coverage weight is "
             f"chosen on one half of the queries and scored on the other: chosen on dev {q['chosen']['dev']}, on "
             f"test {q['chosen']['test']} (grid {list(q['grid'])}; objective: mean over the multi-tool files of "
             "(nDCG@5 + all-gold@10)/2; 0 kept unless beaten by more than 0.001). Shipped: the dev half's choice, "
             f"{q['shipped']}.", ""]
    head = ["method", "file", "nDCG@5", "R@5", "all gold @5", "all gold @10"]
    rows = []
    for label, per in q["rows"].items():
        for n in (x for x in MULTI + SINGLE if x in per):
            m = per[n]
            rows.append([label, _short(n), _f(m["ndcg@5"]), _f(m["recall@5"]), _f(m["all_gold@5"]), _f(m["all_gold@10"])])
    lines += [md_table(head, rows), ""]
    multi = [n for n in MULTI if n in q["rows"]["today's router"]]
    single = [n for n in SINGLE if n in q["rows"]["today's router"]]
    grid_rows = [[lam, *[_f(per[n]["dev"]["all_gold@10"]) for n in multi],
                  *[_f(per[n]["dev"]["ndcg@5"]) for n in single]] for lam, per in q["grid"].items()]
    lines += ["Coverage grid on the dev half (all-gold@10 of the multi-tool files; nDCG@5 of the single-tool files):",
              "", md_table(["coverage", *[_short(n) for n in multi], *[_short(n) for n in single]], grid_rows), ""]
    return lines


def _curve(res: dict[str, Any]) -> list[str]:
    c = res["curve"]
    import numpy as np

    fx = sorted((v["test"]["tokens"], v["test"]["all_gold"]) for v in c["fixed"].values())
    rows = [[f"fixed k={k}", _f(v["test"]["tools"], 2), _f(v["test"]["tokens"], 1), _f(v["test"]["all_gold"]), ""]
            for k, v in c["fixed"].items()]
    rows += [[f"adaptive ratio {x} (ceiling 10)", _f(v["test"]["tools"], 2), _f(v["test"]["tokens"], 1),
              _f(v["test"]["all_gold"]),
              f"{v['test']['all_gold'] - float(np.interp(v['test']['tokens'], *zip(*fx))):+.3f}"]
             for x, v in c["adaptive"].items()]
    return ["## Adaptive k (item 3): tokens sent vs all gold tools offered", "",
            (f"Command: `{c['command']}`. " if c.get("command") else "") + "Every labelled file above, test half (the dev half chose). Tokens = cl100k tokens of the offered tool "
            "schemas (router.tokens), mean per request. Rule for the default: the cheapest adaptive ratio (fewest "
            "mean tokens) whose all-gold-offered is at least fixed k=5's (the old default's completeness)"
            + (" and at least the fixed-k curve's at the same tokens (last column not negative)"
               if c.get("first_condition_alone") else "")
            + f", chosen on the dev half: {c['chosen']['dev']} (the test half would choose {c['chosen']['test']}). "
            f"Shipped: {c['shipped']}."
            + (f" The first condition alone would choose {c['first_condition_alone']['dev']} (test half: "
               f"{c['first_condition_alone']['test']}), a point a fixed k beats at equal tokens: the second "
               "condition came with the cut that keeps every strong tool wherever it is ranked "
               "(router.ranking.adaptive_k), whose curve this is."
               if c.get("first_condition_alone") and c["first_condition_alone"] != c["chosen"] else "")
            + (f" A first rule (the most complete ratio costing no more tokens than fixed k=5) chose "
               f"{c['first_rule_chose']['dev']}, a default less complete than the old one; it was replaced "
               "on this same curve." if c.get("first_rule_chose") else "")
            + " Last column: the adaptive point's all-gold-offered minus the fixed-k curve's at the same tokens "
            "(linear between the fixed points): positive = more complete per token than a fixed k.", "",
            md_table(["setting", "tools sent", "tokens sent", "all gold offered", "vs fixed k at equal tokens"],
                     rows), ""]


def _abstention(res: dict[str, Any]) -> list[str]:
    from .common import other_half

    a = res["abstention"]
    rows = []
    for half in ("dev", "test"):
        tau = a["chosen"][other_half(half)]
        for name, m in a["scored"][half].items():
            rows.append([name, half, tau, m["unanswerable"], _f(m["correct_abstention"]), m["answerable"],
                         _f(m["wrong_abstention"])])
    return ["## Abstention (item 4)", "",
            "Evidence = the best raw cosine of the request (or one of its parts) with a top-20 tool; abstain below "
            "the threshold. Threshold rule: the highest threshold whose wrong-abstention rate on the answerable "
            "queries of the choosing half (all sets pooled) is at most 2 %. Chosen on dev "
            f"{a['chosen']['dev']}, on test {a['chosen']['test']}; each half below is scored with the other half's "
            f"threshold. Shipped: {a['shipped']}. Today's router never abstains (0 correct, 0 wrong).", "",
            md_table(["set", "scored half", "threshold", "unanswerable", "correct abstention", "answerable",
                      "wrong abstention"], rows), ""]


def _names(res: dict[str, Any]) -> list[str]:
    rows = []
    for cat, r in res["exact_names"].items():
        rows.append([cat, r["style"], r["tools"], r["queries"], _f(r["today_rank1"]), _f(r["new_rank1"])])
    styles = sorted({s for r in res["exact_names"].values() for s in r["new_by_style"]})
    by = [[cat, *[_f(r["new_by_style"].get(s, float("nan"))) for s in styles]] for cat, r in res["exact_names"].items()]
    return ["## Exact names (item 5)", "",
            "Queries `Use <name> to <first words of the tool's description>`, the name spelled six ways (as written, "
            "lower case with spaces, Title Case, snake_case, dotted, camelCase), for a sample of tools whose name is "
            "distinctive and unique in the catalog (router.ranking.exact_names). Rank-1 rate:", "",
            md_table(["catalog", "naming style", "tools", "queries", "today's router", "new router"], rows), "",
            "New router, rank-1 rate by spelling:", "", md_table(["catalog", *styles], by), ""]


def _speed(res: dict[str, Any]) -> list[str]:
    s = res["speed"]
    return ["## Cost per query", "",
            f"{s['catalog']:,} tools (real catalogs replicated, as `toolsift bench router`), {s['queries']} real "
            "queries, CPU time per `select` (time.process_time), interleaved, query vectors cached for both: "
            f"today's router (fixed k=5) mean {s['today']['mean_ms']} ms / p50 {s['today']['p50_ms']} ms; the new "
            f"steps (coverage, exact names, abstention) at the same k=5: mean {s['new_k5']['mean_ms']} ms / p50 "
            f"{s['new_k5']['p50_ms']} ms, **{s['new_k5_added_mean_ms']:+} ms mean, {s['new_k5_added_p50_ms']:+} ms "
            f"p50**; the new defaults (adaptive k up to 10 as well): mean {s['new']['mean_ms']} ms / p50 "
            f"{s['new']['p50_ms']} ms ({s['new_added_mean_ms']:+} ms mean: each extra tool sent is also explained). "
            + (f"The added steps alone (clause cutting, per-part BM25, coverage, exact names, abstention, the "
               f"adaptive cut; router.ranking.shaping), timed on the inputs of each request, {s['steps']['repeat']} times "
               f"each: **{s['steps']['steps_mean_ms']} ms mean** (p95 {s['steps']['steps_p95_ms']} ms), "
               f"{100 * s['steps']['share_of_today']:.1f} % of today's whole select timed the same way "
               f"({s['steps']['today_select_mean_ms']} ms; load {s['steps']['load']}). " if s.get("steps") else "")
            + (f"(Section written by `{s['command']}`.) " if s.get("command") else "") +
            f"Load average {s['load']}: whole-select differences under such load are noise-level.", ""]


def _usage(res: dict[str, Any]) -> list[str]:
    u = res.get("usage_log")
    if not u:
        return []
    lines = ["## Learning from use (item 6)", "",
             f"The dev half of the four StableToolBench files written as a usage log with the proxy's writer "
             f"(router.training.usage_log.UsageLog, query text allowed): {u['log_lines']} lines, {u['log_bytes']:,} bytes; "
             f"read back as `toolsift tune --from-log` reads it: {u['summary']}; {u['pairs']} training pairs. "
             f"Scored on the test half ({u['scored']} queries), fixed k=10.", ""]
    if "before" in u:
        rows = [[label, _f(u[label]["ndcg@5"]), _f(u[label]["recall@5"]), _f(u[label]["all_gold@10"])]
                for label in ("before", "after")]
        lines += [md_table(["encoder", "nDCG@5 (mean of 4 files)", "R@5", "all gold @10"], rows), "",
                  f"Tuning: {u['tune_seconds']} s, `{u.get('tune_command', 'toolsift tune --from-log')}` in its own "
                  f"process (model {u['model']}; tune's defaults, fusion weights left at the router's defaults)"
                  + (f"; this section was added by `{u['command']}`" if u.get("command") else "") + ".", ""]
    else:
        lines += [u.get("note", ""), ""]
    return lines


def write_report(res: dict[str, Any], out: Path) -> None:
    la = res["load_average"]
    lines = ["# Routing: complete sets, adaptive k, abstention, exact names, learning from use", "",
             f"Command: `{res['command']}` (" + (f"{res['wall_seconds']} s; " if res.get("wall_seconds") else
                                                  "stopped before its last section: the sections below are the "
                                                  "ones it wrote, plus any written by `--only`; ")
             + f"load average at start {la['start']}, at end {la.get('end')}). Encoder: {res['model']}.", ""]
    from .companions_report import section as _companions
    from .outside import section as _outside
    from .parts import report_lines as _parts

    sections = {"quality": _quality, "companions": _companions, "curve": _curve, "abstention": _abstention,
                "exact_names": _names, "parts": _parts, "outside": _outside, "speed": _speed, "usage_log": _usage}
    for key, part in sections.items():
        if key in res:  # a section run alone (--only) into a new folder writes only its own
            lines += part(res)
    lines += ["Versions: " + json.dumps(res["versions"]), ""]
    out.joinpath("report.md").write_text("\n".join(lines), encoding="utf-8")
