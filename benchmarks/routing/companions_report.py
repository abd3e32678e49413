"""The companions section of `toolsift bench routing`'s report (benchmarks/routing/companions.py,
general_lofo.py): the cross-fitted tables of both encoders, the columns beside the new default, where
the missing gold tools are, and the rows of each family left out; and the one-line summaries of
`--only companions` and `--leave-out FAMILY`."""
from __future__ import annotations

from typing import Any

from ..report import figure as _f
from ..report import short_file as _short

__all__ = ["companions_summary", "general_lofo_summary", "section"]


G2 = "stabletoolbench_G2_instruction|multi"  # the issue's main target: all-gold@10 >= 0.80 there


def companions_summary(res: dict[str, Any]) -> str:
    c = res["companions"]

    def figures(x: dict[str, Any]) -> str:
        multi = [k for k in x["today"] if k.endswith("|multi")]
        mean = lambda side: sum(x[side][k]["all_gold@10"] for k in multi) / max(1, len(multi))  # noqa: E731
        g2 = (f"; G2 {x['today'][G2]['all_gold@10']:.3f} -> {x['new'][G2]['all_gold@10']:.3f}"
              if G2 in x["today"] else "")
        return f"{mean('today'):.3f} -> {mean('new'):.3f} (mean over {len(multi)} files{g2})"

    g = c.get("general") or {}
    general = f"; general encoder {figures(g)}" if "today" in g else ""
    ships = f", general encoder {g['shipped']['weights']}" if "shipped" in g else ""
    return (f"complete sets, cross-fitted multi-tool all-gold@10: base model {figures(c)}{general}; "
            f"shipped (the dev half's choice): base model {c['shipped']['weights']}{ships}, "
            f"first {c['shipped']['keep']} kept")


# What each column beside the general encoder's new default shows (benchmarks/routing/companions.py).
_VARIANT_WORDS = {
    "part_signal hybrid": "the new default with `part_signal` \"hybrid\" (each part also ranked by its own "
                          "vector, the parts encoded apart: a second encoder pass per multi-part request; its "
                          "cost: `toolsift bench router --speed-only`)",
    "no part floor": "the new default without the part floor each half chose (benchmarks/routing/part_floor.py; "
                     "its tie kept)",
    "no part tie": "the new default without the tie each half chose, each part's best tool alone "
                   "(benchmarks/routing/part_tie.py; all gold @10 and the tokens adaptive k sends)",
    "no output file part": "the new default without a part for the file the request writes to, where each half "
                           "chose one (router.ranking.output_file; all gold @10 and the tokens adaptive k sends)",
    "no relative date part": "the new default without a part for a date the request gives relative to now, where "
                             "each half chose one (router.ranking.relative_time; all gold @10 and the tokens "
                             "adaptive k sends)",
    "2 tools per part": "the new default with each part's best two tools, not one, and no tie (`part_tools` 2; "
                        "all gold @10 and the tokens adaptive k sends)",
    "as shipped": "the router as shipped with the general encoder (its companion weights, part floor, tie and "
                  "implied steps' parts, "
                  "router.ranking.config.general_encoder_config: the dev half's choice) in place of each half's "
                  "choice; on the dev half they are not held out",
}


def _columns_not_chosen(variants: dict[str, Any]) -> str:
    said = [_VARIANT_WORDS[name] for name in variants if name in _VARIANT_WORDS]
    if not said:
        return ""
    return " Columns not chosen from: " + "; ".join(said) + "."


def _variant_cells(v: dict[str, Any], key: str) -> str:
    if v["show"] == "sent":
        return f" {v['cost'][key]['tokens']:.0f} | {_f(v['cost'][key]['all_gold_sent'])} |"
    if v["show"] == "both":
        return f" {_f(v['scores'][key]['all_gold@10'])} | {v['cost'][key]['tokens']:.0f} |"
    return f" {_f(v['scores'][key]['all_gold@10'])} |"


def _cross_fit_table(c: dict[str, Any]) -> list[str]:
    variants = c.get("variants") or {}
    heads = [f"{what}, {name}" for name, v in variants.items()
             for what in {"sent": ["tokens sent", "all gold sent"], "both": ["all gold @10", "tokens sent"]}
             .get(v["show"], ["all gold @10"])]
    lines = ["| file | requests | n | nDCG@5 | all gold @5 | all gold @10 | tools sent | tokens sent | all gold sent |"
             + "".join(f" {h} |" for h in heads), "|---|---|---|---|---|---|---|---|---|" + "---|" * len(heads)]
    for key in sorted(c["today"], key=lambda k: (k.split("|")[1], k)):
        t, n = c["today"][key], c["new"][key]
        ct, cn = c["cost"]["today"][key], c["cost"]["new"][key]
        f, g = key.split("|")
        lines.append(f"| {_short(f)} | {g}-tool | {t['n']} | {_f(t['ndcg@5'])} → {_f(n['ndcg@5'])} | "
                     f"{_f(t['all_gold@5'])} → {_f(n['all_gold@5'])} | {_f(t['all_gold@10'])} → {_f(n['all_gold@10'])} | "
                     f"{ct['tools']:.2f} → {cn['tools']:.2f} | {ct['tokens']:.0f} → {cn['tokens']:.0f} | "
                     f"{_f(ct['all_gold_sent'])} → {_f(cn['all_gold_sent'])} |"
                     + "".join(_variant_cells(v, key) for v in variants.values()))
    return lines + _multi_means(c, variants)


def _multi_means(c: dict[str, Any], variants: dict[str, Any]) -> list[str]:
    """The mean all gold @10 over the multi-tool files, for today, the new default and each column that shows it:
    the figure the docs compare settings by."""
    keys = [k for k in c["today"] if k.endswith("|multi")]
    if not keys:
        return []

    def mean(scores: dict[str, Any]) -> str:
        return _f(sum(scores[k]["all_gold@10"] for k in keys) / len(keys))

    cols = [f"{name} {mean(v['scores'])}" for name, v in variants.items() if v["show"] != "sent"]
    return ["", f"Mean multi-tool all gold @10 over the {len(keys)} files: today {mean(c['today'])} → new "
            f"{mean(c['new'])}" + "".join(f"; {col}" for col in cols) + "."]


def _misses(m: dict[str, dict[str, int]]) -> list[str]:
    facts = sorted({k for row in m.values() for k in row} - {"requests", "incomplete", "missing", "ceiling"})
    lines = ["Where the general encoder's missing gold tools are (multi-tool requests, the scored half's top 60 "
             "re-ranked offline by its companions; a tool counts once per fact, so the columns overlap):", "",
             "| file | incomplete / requests | missing tools | " + " | ".join(facts) + " |",
             "|---|---|---|" + "---|" * len(facts)]
    for f, row in m.items():
        lines.append(f"| {_short(f)} | {row['incomplete']} / {row['requests']} | {row['missing']} | "
                     + " | ".join(str(row.get(k, 0)) for k in facts) + " |")
    return lines + _ceiling(m)


def _ceiling(m: dict[str, dict[str, Any]]) -> list[str]:
    """How far a perfect re-ranking of places 6-10 from the top N would take all gold @10 (the part
    stage, which ranks each part over the whole catalog, may still bring a tool from below N)."""
    pools = next((list(row["ceiling"]) for row in m.values() if "ceiling" in row), [])
    if not pools:
        return []
    lines = ["", "All gold @10 if places 6-10 took the gold tools of the top N (a perfect re-ranking of the places "
             "the companion and part stages may move, the first five fixed; the same offline ranking as above): "
             "what re-ranking the tail can reach; beyond it a tool must come from below the top N.", "",
             "| file | requests | all gold @10 | " + " | ".join(f"top {n}" for n in pools) + " |",
             "|---|---|---|" + "---|" * len(pools)]
    for f, row in m.items():
        n = row["requests"]
        lines.append(f"| {_short(f)} | {n} | {_f((n - row['incomplete']) / n)} | "
                     + " | ".join(_f(row["ceiling"][p] / n) for p in pools) + " |")
    return lines


def _part_tools_note(res: dict[str, Any]) -> str:
    """The default part tools and, when the parts section ran, the choices it made without each family."""
    from router import RouterConfig

    note = f"{RouterConfig().part_tools} per part"
    lofo = res.get("parts", {}).get("part_tools", {}).get("lofo")
    if lofo:
        note += "; chosen without each family by `--only parts`: " + ", ".join(
            f"{fam} {row['chosen']}" for fam, row in lofo.items())
    return note


def _setting(x: dict[str, Any]) -> str:
    floor = f"; part floor {x['part_floor']}" if "part_floor" in x else ""
    floor += "" if x.get("part_tie") is None else f"; part tie {x['part_tie']}"
    floor += "; an output file's part" if x.get("output_file") else ""
    floor += "; a relative date's part" if x.get("relative_time") else ""
    return ", ".join(f"{k} {v}" for k, v in x["weights"].items()) + f"; first {x['keep']} places kept{floor}"


# the part settings benchmarks/routing/part_tie.py chooses, in its order, and their report names
_CHOICES = (("part_floor", "part floor"), ("part_tie", "part tie"), ("output_file", "an output file's part"),
            ("relative_time", "a relative date's part"))


def _choice_table(chosen: dict[str, dict[str, Any]], label: str, where: str) -> list[str]:
    """What each part setting scored where it was chosen (``chosen``: ``label`` -> a choice with its
    ``*_tried``), the chosen value in bold: how far a choice was from the next value, which the
    prose can only quote."""
    rows = {name: x for name, x in chosen.items() if all(f"{k}_tried" in x for k, _ in _CHOICES)}
    if not rows:
        return []

    def cell(x: dict[str, Any], key: str) -> str:
        return ", ".join(f"**{v} {o:.4f}**" if v == str(x[key]) else f"{v} {o:.4f}"
                         for v, o in x[f"{key}_tried"].items())

    return ["", f"What each part setting scored {where} (the objective it was chosen on: mean all gold @10 over the "
                "multi-tool groups; in this order, each with the ones before it; chosen in bold). The floor is the "
                "best one (the first of equal ones) and the tie the highest within 0.001 of the best one, each kept "
                "only when the best one beats none by more than 0.001; an implied step's part is kept only when it "
                "does (benchmarks/routing/part_floor.py, part_tie.py):", "",
            f"| {label} | " + " | ".join(name for _, name in _CHOICES) + " |",
            "|---|" + "---|" * len(_CHOICES),
            *(f"| {name} | " + " | ".join(cell(x, k) for k, _ in _CHOICES) + " |" for name, x in rows.items())]


def section(res: dict[str, Any]) -> list[str]:
    """The report's section for ``res["companions"]``."""
    c = res.get("companions")
    if not c:
        return []
    if "chosen" not in c:  # only `--leave-out FAMILY` runs wrote this section so far
        return ["## Complete sets from tool relations (issue 38)", *_general_lofo(c.get("general_lofo") or {}), ""]
    lines = ["## Complete sets from tool relations (issue 38)", "",
             f"Command: `{c.get('command', res['command'])}`"
             + (f" ({c['wall_seconds']:.0f} s; " if c.get("wall_seconds") else " (")
             + (("load average " + (f"{c['load_average']['start']} → {c['load_average']['end']})"
                                    if c["load_average"].get("end") else f"at start {c['load_average']['start']})"))
                if c.get("load_average") else "load average in the run's header)")
             + ". Companions (router.ranking.companions) of the first five "
             "tools, by relation kind (apidb.relations). `today` = the router before issue 38 (companions and part "
             "tools off); `new` = the router's default part tools (" + _part_tools_note(res) + ") and each half "
             "scored with the companion weights and kept places chosen on the other half, co-use learned from the "
             "other half's gold sets "
             "(objective: mean over multi-tool groups of (nDCG@5 + all-gold@10)/2; no setting that lowers any "
             "file's single-tool nDCG@5 on the choosing half by more than 0.005). Chosen on dev: " + _setting(c["chosen"]["dev"])
             + "; on test: " + _setting(c["chosen"]["test"]) + ". Shipped: the dev half's choice. Ranking metrics at "
             "a fixed k = 10; `tokens` and `all gold sent` with the shipped adaptive k (cl100k tokens of the tool "
             "schemas sent, mean per request). Columns `..., part tools not sent by adaptive k`: the new default "
             "with `adaptive_part_tools` off (adaptive k cuts a part's own tool like any other), not chosen from.", "",
             "Base model (the bundled all-MiniLM-L6-v2):", "", *_cross_fit_table(c)]
    if c.get("lofo"):
        lines += ["", "Leave one family out (base model): the companion setting chosen on every other family, with "
                  "the default part tools; the left-out family scored from its records' relations alone (no co-use "
                  "of its own). `today` as above.", "",
                  "| family | setting chosen without it | file | requests | nDCG@5 | all gold @5 | all gold @10 |",
                  "|---|---|---|---|---|---|---|"]
        for fam, row in c["lofo"].items():
            for key in sorted(row["today"]):
                t, n = row["today"][key], row["new"][key]
                f, g = key.split("|")
                lines.append(f"| {fam} | {_setting(row)} | {_short(f)} | {g}-tool ({t['n']}) | {_f(t['ndcg@5'])} → "
                             f"{_f(n['ndcg@5'])} | {_f(t['all_gold@5'])} → {_f(n['all_gold@5'])} | "
                             f"{_f(t['all_gold@10'])} → {_f(n['all_gold@10'])} |")
    g = c.get("general")
    if g and "skipped" in g:
        lines += ["", f"General encoder: not scored ({g['skipped']}).", ""]
    elif g:
        lines += ["", "General encoder (the shipped default encoder), cross-fitted: it trained on these requests, so "
                  "there is a model per half, trained on that half alone (benchmarks/retrieval/general_training.py, in "
                  "its shipped rank-64 form, at its own fusion depth). Each half's weights, part floor, part tie (a part's "
                  "next tool too when its own score is at least that share of its best's) and implied steps' parts (a "
                  "file the request writes to, a date it gives relative to now: each a part of its own; "
                  "benchmarks/routing/part_tie.py) are chosen on "
                  "it as ranked by the model trained on the other half, requests that model never trained on; the model "
                  "trained on the choosing half scores the other half with them: no request is scored by a model or "
                  "weights that saw it. `today` = "
                  "the general encoder with companions and part tools off. Chosen on dev: " + _setting(g["chosen"]["dev"])
                  + "; on test: " + _setting(g["chosen"]["test"]) + "."
                  + _columns_not_chosen(g.get("variants", {})),
                  "", *_cross_fit_table(g), *_choice_table(g["chosen"], "chosen on", "on each half")]
        if g.get("misses"):
            lines += ["", *_misses(g["misses"])]
    return lines + _general_lofo(c.get("general_lofo") or {}) + [""]


def _general_lofo(rows: dict[str, Any]) -> list[str]:
    """The general encoder left out with each family (benchmarks/routing/general_lofo.py), one run each."""
    from .general_lofo import FAMILIES, HYBRID, SHIPPED

    if not rows:
        return []
    lines = ["", "General encoder, leave one family out: the model trained on every other family (the shipped "
             "recipe), the companion setting chosen with it on every other family's requests, the left-out family "
             "routed from its records' relations alone. `toolsift bench routing --only companions --leave-out "
             "FAMILY` scores one family, `--leave-out all` the cross-fitted tables and then every family in turn "
             "(each family's command, time and load below). Last two columns, not chosen from: "
             "the new default with `part_signal` \"hybrid\", and with the companion weights the router shipped when "
             "the row was measured (the general encoder's, router.ranking.config.general_encoder_config; recorded as "
             "`shipped_weights` since they changed) in place of the "
             "ones chosen without the family: those were chosen on the dev half of every family, this one's too "
             "(none of its co-use is used here), so that column is not held out.", "",
             "| family | setting chosen without it | file | requests | nDCG@5 | all gold @5 | all gold @10 | "
             "tokens sent | all gold sent | all gold @10, part_signal hybrid | all gold @10, shipped weights |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for fam, row in rows.items():
        for key in sorted(row["today"], key=lambda k: (k.split("|")[1], k)):
            t, n, ct, cn = row["today"][key], row["new"][key], row["cost"]["today"][key], row["cost"]["new"][key]
            f, g = key.split("|")
            lines.append(f"| {fam} | {_setting(row)} | {_short(f)} | {g}-tool ({t['n']}) | {_f(t['ndcg@5'])} → "
                         f"{_f(n['ndcg@5'])} | {_f(t['all_gold@5'])} → {_f(n['all_gold@5'])} | "
                         f"{_f(t['all_gold@10'])} → {_f(n['all_gold@10'])} | {ct['tokens']:.0f} → {cn['tokens']:.0f} | "
                         f"{_f(ct['all_gold_sent'])} → {_f(cn['all_gold_sent'])} | {_f(row[HYBRID][key]['all_gold@10'])} | "
                         + (f"{_f(row[SHIPPED][key]['all_gold@10'])} |" if SHIPPED in row else "not run |"))
    lines += [""] + [f"- {fam}: `{row['command']}`, {row['wall_seconds']:.0f} s, load average "
                     f"{row['load_average']['start']} → {row['load_average']['end']}; model trained on "
                     f"{row['model']['pairs']:,} pairs" + (f" in {row['model']['seconds']:.0f} s" if row["model"].get("seconds")
                                                          else "") for fam, row in rows.items()]
    missing = [f for f in FAMILIES if f not in rows]
    if missing:
        lines.append("- not run yet: " + ", ".join(missing))
    return lines + _choice_table(rows, "left out", "on every other family")


def general_lofo_summary(res: dict[str, Any], fam: str) -> str:
    """One line for `--only companions --leave-out FAMILY`: its multi-tool all gold @10, today -> new."""
    row = res["companions"]["general_lofo"][fam]
    multi = [k for k in sorted(row["today"]) if k.endswith("|multi")]
    figures = ", ".join(f"{_short(k.split('|')[0])} {_f(row['today'][k]['all_gold@10'])} -> "
                        f"{_f(row['new'][k]['all_gold@10'])}" for k in multi)
    return f"general encoder trained without {fam}, multi-tool all-gold@10 today -> new: {figures or 'no multi-tool file'}"
