"""JSON tool-call checker over the BFCL v4 AST categories that have possible answers.

    toolsift bench bfcl [--out DIR] [--quick] [--passes N] [--reference-python PATH]

For every entry, the answer built from the first allowed value of each parameter
(skipping "" = may omit, and null) is checked against the entry's own function docs
and ground truth. Every answer should be ``correct``; those that are not break their
own function doc (a value outside its enum, a bool for a string...) and are listed,
not hidden. Then (benchmarks/checker/bfcl_agreement.py) the agreement of strict mode and
``--mode bfcl`` with the official BFCL verdicts, and the speed of each mode
(benchmarks/checker/bfcl_speed.py), beside the official checker's when ``--reference-python``
names an interpreter that has bfcl-eval. Writes DIR/results.json and DIR/report.md.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator


from ..data.shared_data import data_dir, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
QUICK_N = 25  # entries per category in --quick mode
_MISSING = object()


def bfcl_dir() -> Path:
    return data_dir("bfcl", "possible_answer", "BFCL")


def entries(quick: bool = False) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(category, question entry, possible answer) for every category with possible answers."""
    root = bfcl_dir()
    for answers in sorted((root / "possible_answer").glob("BFCL_v4_*.json")):
        category = answers.stem.replace("BFCL_v4_", "")
        questions = {q["id"]: q for q in read_jsonl(root / answers.name)}
        rows = read_jsonl(answers)
        for a in rows[:QUICK_N] if quick else rows:
            yield category, questions[a["id"]], a


def first_allowed(options: Any) -> Any:
    """The first allowed value, skipping "" (may be omitted) and null; nested dicts recursively."""
    for opt in options if isinstance(options, list) else [options]:
        if opt != "" and opt is not None:
            return materialize(opt)
    return _MISSING


def materialize(value: Any) -> Any:
    if isinstance(value, dict):  # nested dict parameters hold per-key allowed-value lists
        out = {}
        for key, opts in value.items():
            v = first_allowed(opts)
            if v is not _MISSING:
                out[key] = v
        return out
    if isinstance(value, list):
        return [materialize(v) for v in value]
    return value


def answer_calls(ground_truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = []
    for expected in ground_truth:
        for name, params in expected.items():
            args = {k: v for k, v in ((k, first_allowed(o)) for k, o in params.items()) if v is not _MISSING}
            calls.append({"name": name, "arguments": args})
    return calls


def run(out_dir: Path | str, quick: bool = False, reference_python: Path | None = None,
        passes: int | None = None, progress: Any = None) -> dict[str, Any]:
    from checker import check_calls

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    work = [(cat, q, a, answer_calls(a["ground_truth"])) for cat, q, a in entries(quick)]
    per_cat: dict[str, Counter] = {}
    exceptions = []
    t0 = time.perf_counter()
    for cat, q, a, calls in work:
        v = check_calls(calls, q["function"], a["ground_truth"])
        per_cat.setdefault(cat, Counter())[v.verdict] += 1
        if v.verdict != "correct":
            exceptions.append({"id": a["id"], "category": cat, "verdict": v.verdict,
                               "defects": [d.message for d in v.defects]})
    first_pass = time.perf_counter() - t0
    # wall-clock throughput of strict mode on the gold answers (each question compiled in the first pass)
    repeats = 1 if quick else 4
    t1 = time.perf_counter()
    for _ in range(repeats):
        for cat, q, a, calls in work:
            check_calls(calls, q["function"], a["ground_truth"])
    took = time.perf_counter() - t1
    n_checks = len(work) * repeats
    n_calls = sum(len(c) for *_, c in work) * repeats
    total = sum(sum(c.values()) for c in per_cat.values())
    correct = sum(c["correct"] for c in per_cat.values())
    results = {
        "command": "toolsift bench bfcl" + (" --quick" if quick else "") + (f" --passes {passes}" if passes else "")
        + (" --reference-python PATH" if reference_python else ""), "quick": quick,
        "entries": total, "correct": correct, "not_correct": total - correct,
        "by_category": {cat: dict(c) for cat, c in sorted(per_cat.items())},
        "exception_kinds": dict(Counter(e["verdict"] for e in exceptions)),
        "exceptions": exceptions,
        "throughput": {"checks_per_second": round(n_checks / took, 1), "tool_calls_per_second": round(n_calls / took, 1),
                       "checks": n_checks, "seconds": round(took, 3), "first_pass_seconds": round(first_pass, 3)},
    }
    from . import bfcl_agreement

    results["official"] = bfcl_agreement.run(bfcl_dir().parent, quick, reference_python, passes, progress)
    results["wall_seconds"] = round(time.perf_counter() - start, 2)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out_dir / "report.md").write_text(render(results), encoding="utf-8")
    return results


def render(r: dict[str, Any]) -> str:
    from benchmarks.report import md_table

    from .bfcl_agreement import render as render_official

    parts = ["# BFCL: the JSON tool-call checker against the official verdicts", "",
             f"Command: `{r['command']}`  ", f"Wall time: {r['wall_seconds']:.1f} s", ""]
    if "official" in r:
        parts += render_official(r["official"])
    parts += ["## BFCL possible answers through strict mode", "",
             f"**{r['correct']} of {r['entries']}** ground-truth answers (first allowed value per parameter, "
             f"skipping \"\" and null) are `correct`; {r['not_correct']} are not, because they break their own "
             "function doc (listed below; the checker is not loosened for them).", "",
             "### By category", ""]
    verdicts = sorted({v for c in r["by_category"].values() for v in c})
    rows = [[cat] + [c.get(v, 0) for v in verdicts] for cat, c in r["by_category"].items()]
    parts += [md_table(["category"] + verdicts, rows), ""]
    tp = r["throughput"]
    parts += ["### Throughput", "", f"{tp['checks_per_second']:.0f} checks/s ({tp['tool_calls_per_second']:.0f} tool "
              f"calls/s) on one core: {tp['checks']} checks with function docs and ground truth in {tp['seconds']:.2f} s.",
              "", "### Answers that break their own function doc", ""]
    rows = [[e["id"], e["verdict"], e["defects"][0][:140].replace("|", "\\|")] for e in r["exceptions"]]
    parts += [md_table(["id", "verdict", "first defect"], rows) if rows else "none", ""]
    return "\n".join(parts)
