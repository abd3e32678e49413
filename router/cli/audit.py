"""`toolsift audit`: score a file of released model answers against a catalog and gold answers.

    toolsift audit RESPONSES.jsonl --db CATALOG|API.jsonl --namespace NS [--gold EVAL.json]
        [--mode strict|gorilla|bfcl] [--report DIR] [--answers FILE.jsonl|.csv] [--json]

On a terminal: the figures (n, accuracy, hallucination, error, one per line), how the mode
scores them, warnings about the files, and one example per verdict. On a pipe or with --json: one
JSON object. Exit 1 when an answer is defective (see --fail-on), 2 when the files cannot be
read or cannot belong together (a gold file of another hub).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer

from .checked import (
    FAIL_ON_HELP,
    CheckCatalog,
    bfcl_rows,
    exit_for,
    fail_on,
    failed,
    mode_of,
    progress_bar,
)
from .errors import CliError
from .options import Db, Json, catalog_path
from .output import ellipsize, print_json, say, terminal_width, wants_json, warn


def _command_line() -> str:
    return "toolsift " + " ".join(sys.argv[1:]) if sys.argv else ""


def _figures(summary: dict) -> None:
    """The headline figures as an aligned block (one figure per line, the verdicts wrapped under
    their label): the tab-separated lines were ragged on a terminal."""
    for key in ("n", "accuracy", "hallucination", "error"):
        value = summary[key]
        shown = value if key == "n" else "n/a" if value is None else f"{value:.4f}"
        say(f"{key:<14} {shown}")
    say(f"{'verdicts':<14} " + ", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items(), key=lambda kv: -kv[1])),
        wrap=True, indent=" " * 15)


def _audit_bfcl(responses: Path, fc: bool, data: Optional[Path], as_json: bool, report: Optional[Path],
                failing, answers: Optional[Path]) -> None:
    from checker.audit import write_answers
    from checker.bfcl.batch import summarize, write_report

    try:
        text = responses.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"{responses}: cannot read ({exc.strerror or exc})") from None
    rows = bfcl_rows(responses, text, fc, data)
    summary = summarize(rows)
    summary.update({"file": str(responses), "fc": fc})
    if as_json:
        print_json(summary)
    else:
        _figures(summary)
    if answers is not None:
        say(f"answers: {write_answers(rows, answers)}", err=True)
    if report is not None:
        path = write_report(summary, report, f"{responses.name} (bfcl{', FC' if fc else ''})", _command_line())
        say(f"report: {path}", err=True)
    exit_for(failed(rows, failing))


def audit_cmd(
    responses: Path = typer.Argument(..., metavar="RESPONSES", show_default=False,
                                     help="a Gorilla response file (question_id, text per line); "
                                          "--mode bfcl: BFCL outputs as for check"),
    db: Db = None,
    namespace: Optional[str] = typer.Option(None, "--namespace", help="the catalog namespace of the hub"),
    gold: Optional[Path] = typer.Option(None, "--gold", help="APIBench *_eval.json (line i = question i)"),
    mode: str = typer.Option("strict", "--mode", help="strict (the gold API itself) | gorilla (upstream APIBench "
                             "scoring, as published) | bfcl"),
    as_json: Json = False,
    report: Optional[Path] = typer.Option(None, "--report", help="write report.md, a PNG chart and "
                                          "answers.jsonl / answers.csv here"),
    answers: Optional[Path] = typer.Option(None, "--answers", help="write one line per answer here "
                                           "(.csv for CSV, else JSON Lines)"),
    allow_mismatch: bool = typer.Option(False, "--allow-mismatch", help="score even when the gold answers are "
                                        "not APIs of --namespace"),
    fail: str = typer.Option("any", "--fail-on", metavar="VERDICT,...|any|none", help=FAIL_ON_HELP),
    bfcl_fc: bool = typer.Option(False, "--bfcl-fc", help="bfcl: a function-calling model (dots written as _)"),
    bfcl_data: Optional[Path] = typer.Option(None, "--bfcl-data", help="bfcl: BFCL data folder"),
) -> None:
    """Score a file of model answers: n, accuracy, hallucination, error (fractions); exit 1 if any is defective."""
    from checker.audit import (
        audit,
        gold_mismatch,
        read_gold,
        read_jsonl,
        response_shape,
        write_answers,
        write_report,
    )

    mode_of(mode)
    failing = fail_on(fail)
    as_json = wants_json(as_json)
    if mode == "bfcl":
        _audit_bfcl(responses, bfcl_fc, bfcl_data, as_json, report, failing, answers)
        return
    if namespace is None:
        raise CliError(f"--namespace is required with --mode {mode} (the catalog namespace of the hub)")
    rows = read_jsonl(responses, "responses")
    response_shape(rows, responses)
    gold_rows = read_gold(gold) if gold is not None else None
    db = catalog_path(db)
    cat = CheckCatalog(db, namespace)
    index = cat.index()
    cat.warn_order(mode)
    if not len(index):
        raise CliError(f"{db}: namespace {namespace!r} holds no code-style APIs to audit against")
    warnings: list[str] = []
    other = None if cat.is_source else _other_hub(db, rows, namespace)
    if other and not allow_mismatch:
        raise CliError(f"{responses}: {other} (--allow-mismatch scores it anyway)")
    if other:
        warnings.append(other)
    if gold_rows is not None:
        warnings, mismatch = gold_mismatch(rows, gold_rows, index, namespace)
        if mismatch and not allow_mismatch:
            for w in warnings:
                warn(w)
            raise CliError(f"{gold}: {mismatch} (--allow-mismatch scores it anyway)")
        if mismatch:
            warnings.append(mismatch)
    for w in warnings:
        warn(w)
    start = time.perf_counter()
    with progress_bar(len(rows)) as progress:
        task = progress.add_task("auditing", total=len(rows))
        result = audit(rows, index, gold_rows, mode, progress=lambda: progress.advance(task))
    summary = result.summary()
    summary.update({"file": str(responses), "namespace": namespace, "seconds": round(time.perf_counter() - start, 3),
                    "warnings": warnings, "examples": {v: [_brief(r) for r in rs]
                                                       for v, rs in result.examples(3).items()}})
    if as_json:
        print_json(summary)
    else:
        _figures(summary)
        _explain(summary, result)
    if answers is not None:
        say(f"answers: {write_answers(result.rows, answers)}", err=True)
    if report is not None:
        path = write_report(result, report, f"{responses.name} ({namespace}, {mode})", _command_line(), warnings)
        say(f"report: {path} (per answer: {path.parent / 'answers.jsonl'}, answers.csv)", err=True)
    exit_for(failed(result.rows, failing) if failing is not None else result.defective)


def _other_hub(db, rows: list, namespace: str) -> Optional[str]:
    """Whether the answers call APIs of another namespace of the catalog (checker.audit)."""
    from checker.audit import responses_namespace

    whole = CheckCatalog(db, None)
    if len({r.namespace for r in whole.records()}) < 2:
        return None
    return responses_namespace(rows, whole.index(), namespace)


def _brief(row: dict) -> dict:
    """An example for the JSON summary: everything but the model's whole text."""
    return {k: v for k, v in row.items() if k != "answer"}


def _explain(summary: dict, result) -> None:
    """How the figures were scored, and one example of each verdict (the whole row is in --answers)."""
    import textwrap

    width = max(60, terminal_width())
    say("")
    say(textwrap.fill(f"How it is scored: {summary['scoring']}", width=width))
    if summary["accuracy"] is None:
        say("accuracy is n/a without --gold: only hallucinations (APIs the catalog does not have) are measured.")
    say("")
    say("One example per verdict:")
    for verdict, rows in result.examples(1).items():
        r = rows[0]
        wrong = r.get("why") or r.get("differs") or ""
        say(f"  {verdict}: question {r.get('question_id')}: {ellipsize(r.get('call') or '(no call)', width - 30)}")
        if r.get("gold"):
            say(f"      gold: {ellipsize(r['gold'], width - 12)}")
        if wrong:
            say(f"      {ellipsize(wrong, width - 6)}")
