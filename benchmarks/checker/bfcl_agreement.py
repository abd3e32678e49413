"""The JSON checker against the official BFCL verdicts, and its speed (issue 16).

Reads ``bfcl_official/dev.jsonl.gz`` (21,263 outputs labelled by bfcl-eval's AST checker
for a prompting and a function-calling model; see its README) and checks each output
in three ways: strict mode, ``mode="bfcl"`` as a prompting model, ``mode="bfcl"`` as a
function-calling model (``--bfcl-fc``). Reports per category the agreement with the
official verdicts, the confusion of each mode, BFCL's error types, every disagreement
of the bfcl mode and the strict mode's disagreements by kind of output.

Speed: benchmarks/checker/bfcl_speed.py (fresh processes, beside the official checker when it is given).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .bfcl_speed import BEFORE_CALLS_PER_CPU_S, REFERENCE_CALLS_PER_CPU_S, SPEED_PASSES, checker_for, load, speed
from .bfcl_speed import render as render_speed

MODES = ("strict", "bfcl", "bfcl_fc")
LABEL = {"strict": "official_valid", "bfcl": "official_valid", "bfcl_fc": "official_valid_fc"}


def agreement(rows: list[dict[str, Any]], questions: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    per_mode: dict[str, Any] = {}
    for mode in MODES:
        check, label = checker_for(mode), LABEL[mode]
        confusion: Counter = Counter()
        by_cat: dict[str, Counter] = {}
        error_types: Counter = Counter()
        disagreements, strict_kinds = [], Counter()
        for r in rows:
            v = check(r, questions[r["id"]])
            official = r[label]
            cell = ("valid" if v.ok else "invalid") + "/" + ("valid" if official else "invalid")
            confusion[cell] += 1
            c = by_cat.setdefault(r["category"], Counter())
            c["n"] += 1
            c["agree"] += v.ok == official
            if mode == "bfcl":
                same_type = v.details.get("bfcl_error_type") == r["official_error_type"]
                c["error_type_agree"] += same_type
                error_types[r["official_error_type"] or "(none)"] += 1
            if v.ok != official or (mode == "bfcl" and not same_type):
                if mode == "strict":
                    strict_kinds[(r["mutation"], v.verdict, "valid" if official else "invalid")] += 1
                else:
                    disagreements.append({"uid": r["uid"], "ours": v.ok, "official": official,
                                          "ours_error_type": v.details.get("bfcl_error_type"),
                                          "official_error_type": r["official_error_type"]})
        n = len(rows)
        per_mode[mode] = {
            "label": label, "n": n, "agree": sum(c["agree"] for c in by_cat.values()),
            "confusion": dict(sorted(confusion.items())),
            "by_category": {cat: dict(c) for cat, c in sorted(by_cat.items())},
            "disagreements": disagreements,
        }
        if mode == "bfcl":
            per_mode[mode]["error_type_agree"] = sum(c["error_type_agree"] for c in by_cat.values())
            per_mode[mode]["official_error_types"] = dict(error_types.most_common())
        if mode == "strict":
            per_mode[mode]["by_kind"] = [{"mutation": m, "strict": s, "official": o, "n": k}
                                         for (m, s, o), k in strict_kinds.most_common()]
    return per_mode


def run(root: Path, quick: bool, reference_python: Path | None = None, passes: int | None = None,
        progress: Any = None) -> dict[str, Any]:
    """Agreement (in this process) and speed (fresh processes: bfcl_speed.py)."""
    rows, questions = load(root, quick)
    return {"outputs": len(rows), "questions": len(questions), "agreement": agreement(rows, questions),
            "speed": speed(root, quick, passes or (1 if quick else SPEED_PASSES), reference_python, progress),
            "reference_calls_per_cpu_s": REFERENCE_CALLS_PER_CPU_S, "before_calls_per_cpu_s": BEFORE_CALLS_PER_CPU_S}


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.2f}%" if n else "n/a"


def render(res: dict[str, Any]) -> list[str]:
    """Markdown sections: agreement per category and model type, confusion, speed, disagreements."""
    from benchmarks.report import md_table

    ag, sp = res["agreement"], res["speed"]
    parts = ["## Agreement with the official BFCL verdicts", "",
             f"{res['outputs']} labelled outputs of {res['questions']} questions (`bfcl_official/dev.jsonl.gz`, "
             "the development half). `bfcl` is `--mode bfcl` judged as a prompting model against "
             "`official_valid`; `bfcl --bfcl-fc` as a function-calling model against `official_valid_fc`; "
             "strict against `official_valid` (it differs on purpose: docs/checker.md).", ""]
    head = ["category", "outputs", "bfcl", "bfcl: same error type", "bfcl --bfcl-fc", "strict"]
    rows = []
    for cat, c in ag["bfcl"]["by_category"].items():
        fc, st = ag["bfcl_fc"]["by_category"][cat], ag["strict"]["by_category"][cat]
        rows.append([cat, c["n"], _pct(c["agree"], c["n"]), _pct(c["error_type_agree"], c["n"]),
                     _pct(fc["agree"], fc["n"]), _pct(st["agree"], st["n"])])
    n = ag["bfcl"]["n"]
    rows.append(["**all**", n, f"**{_pct(ag['bfcl']['agree'], n)}**", f"**{_pct(ag['bfcl']['error_type_agree'], n)}**",
                 f"**{_pct(ag['bfcl_fc']['agree'], n)}**", f"**{_pct(ag['strict']['agree'], n)}**"])
    parts += [md_table(head, rows), "", "Confusion (ours / official):", ""]
    cells = ["valid/valid", "valid/invalid", "invalid/valid", "invalid/invalid"]
    parts += [md_table(["mode", "label"] + cells,
                       [[m, ag[m]["label"]] + [ag[m]["confusion"].get(k, 0) for k in cells] for m in MODES]), ""]
    dis = ag["bfcl"]["disagreements"] + ag["bfcl_fc"]["disagreements"]
    parts += ["Disagreements of `--mode bfcl` (verdict or error type): " + (
        "none." if not dis else f"{len(dis)}, listed in results.json."), ""]
    parts += render_speed(sp)
    kinds = ag["strict"]["by_kind"]
    parts += ["## Where strict mode differs from the official verdicts", "",
              "By the kind of output (the `mutation` field of dev.jsonl.gz); each difference follows a rule "
              "of docs/checker.md.", "",
              md_table(["output kind", "strict verdict", "official", "outputs"],
                       [[k["mutation"], k["strict"], k["official"], k["n"]] for k in kinds]) if kinds else "none", ""]
    return parts
