"""The JSON checker against the official BFCL verdicts, and its speed (issue 16).

Reads ``bfcl_official/dev.jsonl.gz`` (21,263 outputs labelled by bfcl-eval's AST checker
for a prompting and a function-calling model; see its README) and checks each output
in three ways: strict mode, ``mode="bfcl"`` as a prompting model, ``mode="bfcl"`` as a
function-calling model (``--bfcl-fc``). Reports per category the agreement with the
official verdicts, the confusion of each mode, BFCL's error types, every disagreement
of the bfcl mode and the strict mode's disagreements by kind of output.

Speed: tool calls per CPU-second (``time.process_time``, one process) over the same
outputs, the way an evaluation runs (each question's docs and answer objects shared by
all its outputs). A "cold" pass starts with nothing compiled and compiles each question on
first use; a "warm" pass follows one and reuses them; each is the best of several passes
(the machine is shared and other processes only ever add time), with the median beside it
and every pass in results.json. Loaded data is moved out of the
garbage collector's sight first (``gc.freeze``) so the figure is the checker's work,
not the harness's heap. Beside each: the figures issue 16 measured (the official
checker, and toolsift before this work) and the machine's load average.
"""
from __future__ import annotations

import gc
import gzip
import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from .errors import DatasetError

REFERENCE_CALLS_PER_CPU_S = 112_000  # official BFCL checker, issue 16 (42,480 outputs)
BEFORE_CALLS_PER_CPU_S = 21_600      # toolsift strict before issue 16, same measurement
QUICK_OUTPUTS = 2000
MODES = ("strict", "bfcl", "bfcl_fc")
LABEL = {"strict": "official_valid", "bfcl": "official_valid", "bfcl_fc": "official_valid_fc"}


def load(root: Path, quick: bool) -> tuple[list[dict[str, Any]], dict[str, tuple[Any, Any]]]:
    """The labelled outputs and, per question id, its (function docs, possible answer)."""
    from checker.bfcl.data import BfclData

    path = root / "bfcl_official" / "dev.jsonl.gz"
    if not path.exists():
        raise DatasetError(f"{path}: official BFCL verdicts not found (set TOOLSIFT_SHARED_DATA)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if quick:
        rows = rows[::max(1, len(rows) // QUICK_OUTPUTS)]
    data = BfclData(root / "bfcl")
    questions = {}
    for r in rows:
        if r["id"] not in questions:
            _, functions, truth = data.lookup(r["id"])
            questions[r["id"]] = (functions, truth)
    return rows, questions


def _checker(mode: str) -> Callable[[dict[str, Any], tuple[Any, Any]], Any]:
    from checker import check_calls

    if mode == "strict":
        return lambda r, q: check_calls(r["calls"], q[0], q[1])
    fc = mode == "bfcl_fc"
    return lambda r, q: check_calls(r["calls"], q[0], q[1], mode="bfcl", category=r["category"], fc=fc)


def agreement(rows: list[dict[str, Any]], questions: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    per_mode: dict[str, Any] = {}
    for mode in MODES:
        check, label = _checker(mode), LABEL[mode]
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


def _read_everything(v: Any) -> None:
    for d in v.defects:
        d.message, d.suggestions  # noqa: B018  (messages and suggestions are written on first read)
    v.suggestions  # noqa: B018


def _forget() -> None:
    """Drop every compiled question and remembered string: the next pass starts cold."""
    import sys

    import checker.bfcl as bfcl_mode
    import checker.bfcl.values as bfcl_values
    import checker.calls as strict_mode
    import checker.strict_schema as strict_schema

    bfcl_mode.QUESTIONS.clear()
    bfcl_mode._RESOLVED.clear()
    bfcl_values._SEEN.clear()
    strict_mode.PLANS.clear()
    strict_schema._BY_TYPE.clear()
    sys.modules["checker.suggest"]._NORMS.clear()


def speed(rows: list[dict[str, Any]], questions: dict[str, tuple[Any, Any]], passes: int) -> dict[str, Any]:
    """Cold: each pass after forgetting every compiled question; warm: each pass right after one
    that compiled them. Best of ``passes`` (other processes only ever add time; timeit's
    advice), the median beside it."""
    work = [(r, questions[r["id"]]) for r in rows]
    calls = sum(len(r["calls"]) for r in rows)
    gc.collect()
    gc.freeze()
    out: dict[str, Any] = {"outputs": len(rows), "tool_calls": calls, "passes": passes,
                           "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    variants = [("strict", "strict", False), ("strict_read_all", "strict", True), ("bfcl", "bfcl", False),
                ("bfcl_fc", "bfcl_fc", False)]
    for name, mode, read_all in variants:
        check = _checker(mode)

        def one_pass() -> float:
            start = time.process_time()
            if read_all:
                for r, q in work:
                    _read_everything(check(r, q))
            else:
                for r, q in work:
                    check(r, q)
            return time.process_time() - start

        cold, warm = [], []
        for _ in range(passes):
            _forget()
            cold.append(one_pass())
            warm.append(one_pass())
        out[name] = {"cold_calls_per_cpu_s": round(calls / min(cold)), "warm_calls_per_cpu_s": round(calls / min(warm)),
                     "cold_median_calls_per_cpu_s": round(calls / statistics.median(cold)),
                     "warm_median_calls_per_cpu_s": round(calls / statistics.median(warm)),
                     "cold_cpu_seconds": [round(s, 4) for s in cold], "warm_cpu_seconds": [round(s, 4) for s in warm]}
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    gc.unfreeze()
    return out


def run(root: Path, quick: bool) -> dict[str, Any]:
    rows, questions = load(root, quick)
    return {"outputs": len(rows), "questions": len(questions), "agreement": agreement(rows, questions),
            "speed": speed(rows, questions, passes=2 if quick else 5),
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
    parts += ["## Speed", "",
              f"Tool calls per CPU-second over the same {sp['outputs']} outputs ({sp['tool_calls']} tool calls), one "
              f"process; best (and median) of {sp['passes']} cold passes (nothing compiled: each question is compiled "
              f"on first use) and of {sp['passes']} warm passes (compiled questions reused). Figures issue 16 "
              "measured: the official checker "
              f"{res['reference_calls_per_cpu_s']:,}, toolsift before {res['before_calls_per_cpu_s']:,}.", ""]
    labels = {"strict": "strict", "strict_read_all": "strict, every message and suggestion read",
              "bfcl": "bfcl", "bfcl_fc": "bfcl --bfcl-fc"}
    parts += [md_table(["mode", "cold (median)", "warm (median)", "official checker", "toolsift before"],
                       [[labels[k], f"{sp[k]['cold_calls_per_cpu_s']:,} ({sp[k]['cold_median_calls_per_cpu_s']:,})",
                         f"{sp[k]['warm_calls_per_cpu_s']:,} ({sp[k]['warm_median_calls_per_cpu_s']:,})",
                         f"{res['reference_calls_per_cpu_s']:,}", f"{res['before_calls_per_cpu_s']:,}"]
                        for k in labels]), "",
              f"Load average (1/5/15 min) at start {sp['load_average_start']}, at end {sp['load_average_end']} on "
              f"{os.cpu_count()} CPUs; other processes shared them. Strict mode writes a failed check's message and "
              "spelling suggestions when they are first read; the second row reads all of them.", ""]
    kinds = ag["strict"]["by_kind"]
    parts += ["## Where strict mode differs from the official verdicts", "",
              "By the kind of output (the `mutation` field of dev.jsonl.gz); each difference follows a rule "
              "of docs/checker.md.", "",
              md_table(["output kind", "strict verdict", "official", "outputs"],
                       [[k["mutation"], k["strict"], k["official"], k["n"]] for k in kinds]) if kinds else "none", ""]
    return parts
