"""Files of model outputs under ``--mode bfcl``: ``toolsift check`` and ``toolsift audit``.

One JSON object per line: ``calls`` (BFCL's decoded ``[{name: {param: value}}]`` or
OpenAI calls), and either ``functions`` + ``ground_truth`` or a BFCL question ``id``
(``question_id`` wins if both are there) looked up in the BFCL data folder;
optionally ``category`` and ``language``. Every line is read and checked before
anything is printed: a bad line (malformed JSON or calls, an unknown category or
language, an id with no possible answer) stops the run with one line naming it.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from . import CATEGORIES, LANGUAGES, check_bfcl, question, read_calls, resolve
from .data import BfclData
from .errors import BfclInputError

Job = tuple[int, dict[str, Any], Any, Any, Any, str, str]


def _job(lineno: int, line: str, data: BfclData) -> Job:
    where = f"line {lineno}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BfclInputError(f"{where}: malformed JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise BfclInputError(f"{where}: expected an object, got {type(obj).__name__}")
    if "calls" not in obj:
        raise BfclInputError(f"{where}: field 'calls' is missing")
    category, language = obj.get("category"), obj.get("language")
    if category is not None and category not in CATEGORIES:
        raise BfclInputError(f"{where}: field 'category': unknown BFCL category {category!r} "
                             f"(choose from: {', '.join(CATEGORIES)})")
    if language is not None and (not isinstance(language, str) or language.lower() not in LANGUAGES):
        raise BfclInputError(f"{where}: field 'language': unknown language {language!r} "
                             f"(choose from: {', '.join(LANGUAGES)})")
    qid = obj.get("question_id", obj.get("id"))
    functions, truth = obj.get("functions"), obj.get("ground_truth")
    if (functions is None) != (truth is None):
        missing = "ground_truth" if truth is None else "functions"
        raise BfclInputError(f"{where}: field {missing!r} is missing (give 'functions' and 'ground_truth', "
                             "or neither to look the question up by its id)")
    if functions is None:
        if qid is None:
            raise BfclInputError(f"{where}: field 'id' is missing (a BFCL question id, or give 'functions' "
                                 "and 'ground_truth')")
        try:
            found, functions, truth = data.lookup(qid)
        except BfclInputError as exc:
            raise BfclInputError(f"{where}: field {'question_id' if 'question_id' in obj else 'id'!r}: {exc}") from None
        category = category if category is not None else found
    try:
        read_calls(obj["calls"])
    except BfclInputError as exc:  # its message starts with the field: "calls[2].arguments: ..."
        field, _, why = str(exc).partition(": ")
        raise BfclInputError(f"{where}: field {field!r}: {why}") from None
    try:
        category, language = resolve(category, language, qid, functions, truth)
        question(functions, truth, category, language)
    except BfclInputError as exc:
        raise BfclInputError(f"{where}: {exc}") from None
    return lineno, obj, obj["calls"], functions, truth, category, language


def check_lines(lines: list[tuple[int, str]], fc: bool = False, data: BfclData | None = None) -> list[dict[str, Any]]:
    """One output object per line: the line's ``id`` (and ``uid``) and the verdict."""
    data = data if data is not None else BfclData()
    jobs = [_job(n, line, data) for n, line in lines]
    out = []
    for lineno, obj, calls, functions, truth, category, language in jobs:
        try:
            v = check_bfcl(calls, functions, truth, category=category, language=language, fc=fc)
        except BfclInputError as exc:  # a doc or answer BFCL's rules cannot read
            raise BfclInputError(f"line {lineno}: {exc}") from None
        row = {"id": obj.get("id")}
        if "uid" in obj:
            row["uid"] = obj["uid"]
        row.update(v.to_dict())
        out.append(row)
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """n, accuracy, hallucination (unknown tool or parameter) and error, overall and per category,
    with BFCL's error types."""
    n = len(rows)
    correct = sum(r["ok"] for r in rows)
    halluc = sum(r["verdict"] in ("hallucinated_tool", "hallucinated_param") for r in rows)
    per: dict[str, Counter] = {}
    for r in rows:
        c = per.setdefault(r["category"], Counter())
        c["n"] += 1
        c["correct"] += r["ok"]
    return {"mode": "bfcl", "n": n, "accuracy": correct / n if n else None,
            "hallucination": halluc / n if n else 0.0,
            "error": (n - correct - halluc) / n if n else None,
            "counts": dict(sorted(Counter(r["verdict"] for r in rows).items())),
            "error_types": dict(Counter(r.get("bfcl_error_type") or "(none)" for r in rows).most_common()),
            "by_category": {cat: {"n": c["n"], "accuracy": c["correct"] / c["n"]} for cat, c in sorted(per.items())}}


def write_report(summary: dict[str, Any], out_dir: Path, title: str, command: str = "") -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pct = lambda x: "n/a" if x is None else f"{100 * x:.2f}%"  # noqa: E731
    lines = [f"# Audit: {title}", ""] + ([f"Command: `{command}`", ""] if command else [])
    lines += [f"Mode: **bfcl** (the leaderboard's AST-checker rules). n = {summary['n']}; accuracy "
              f"{pct(summary['accuracy'])}, hallucination {pct(summary['hallucination'])}, error "
              f"{pct(summary['error'])}.", "", "## By category", "", "| category | n | accuracy |", "|---|---|---|"]
    lines += [f"| {cat} | {c['n']} | {pct(c['accuracy'])} |" for cat, c in summary["by_category"].items()]
    lines += ["", "## BFCL error types", "", "| error type | outputs |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in summary["error_types"].items()]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
