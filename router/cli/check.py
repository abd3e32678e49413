"""`toolsift check` (and, registered with it, `toolsift audit` from audit.py): the checker's commands.

    toolsift check outputs.jsonl [--db CATALOG] [--namespace NS] [--mode strict|gorilla|bfcl] [--json]

Each input line is {id, output, gold?} (code) or {id, calls, functions?, ground_truth?} (JSON
calls). On a terminal: a table of verdicts; on a pipe or with --json: one JSON verdict per line.
The summary goes to stderr. Exit 1 when a checked answer is defective (see --fail-on), 2 when the
input cannot be read.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import typer

from apidb.errors import ToolsiftError

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
from .output import dumps, ellipsize, print_jsonl, say, show, table, wants_json


def check_line(lineno: int, line: str, cat: CheckCatalog, mode: str) -> dict[str, Any]:
    """One input line -> one output object; problems become an 'error' verdict naming the line."""
    from apidb.safe_io import UnsafeDocument, loads_json

    try:  # within the limits of apidb.safe_io: a 5,000-digit number or [[[[... is this line's error
        obj = loads_json(line, strict_unicode=False)
    except json.JSONDecodeError as exc:
        return {"id": None, "line": lineno, "verdict": "error", "ok": False,
                "error": f"line {lineno}: malformed JSON ({exc.msg} at column {exc.colno})", "defects": []}
    except UnsafeDocument as exc:
        return {"id": None, "line": lineno, "verdict": "error", "ok": False,
                "error": f"line {lineno}: {exc}", "defects": []}
    if not isinstance(obj, dict):
        return {"id": None, "line": lineno, "verdict": "error", "ok": False,
                "error": f"line {lineno}: expected an object, got {type(obj).__name__}", "defects": []}
    rid = obj.get("id")
    try:
        if "output" in obj:
            from checker.code import check_code

            v = check_code(obj["output"], cat.index(), gold=obj.get("gold"), mode=mode)
        elif "calls" in obj:
            from checker.calls import check_calls

            functions = obj.get("functions")
            if functions is None and (cat.db is not None):
                functions = cat.records()
            v = check_calls(obj["calls"], functions, obj.get("ground_truth"))
        else:
            return {"id": rid, "line": lineno, "verdict": "error", "ok": False,
                    "error": f"line {lineno}: needs 'output' (code) or 'calls' (JSON tool calls)", "defects": []}
    except ToolsiftError as exc:
        return {"id": rid, "line": lineno, "verdict": "error", "ok": False, "error": f"line {lineno}: {exc}",
                "defects": []}
    except Exception as exc:  # noqa: BLE001 - a checker bug on one line must not lose the others' verdicts
        return {"id": rid, "line": lineno, "verdict": "error", "ok": False,
                "error": f"line {lineno}: could not be checked ({type(exc).__name__}: {str(exc)[:200]})",
                "defects": []}
    return {"id": rid, **v.to_dict()}


def _what(row: dict[str, Any]) -> str:
    """What a person needs from one verdict: what was wrong, or what it matched."""
    if row.get("error"):
        return row["error"]
    defects = row.get("defects") or []
    text = defects[0].get("message", "") if defects else ""
    sugg = row.get("suggestions") or []
    if sugg and str(sugg[0]) not in text:  # the defect's message often names it already
        text += f" (did you mean {sugg[0]}?)" if text else f"did you mean {sugg[0]}?"
    return text or (row.get("api") or "")


def print_verdicts(rows: list[dict[str, Any]]) -> None:
    cols = ("line", "id", "verdict", "what")
    show(table(cols, [(r.get("line", i), "-" if r.get("id") is None else r.get("id"), r.get("verdict"),
                       ellipsize(_what(r), 400)) for i, r in enumerate(rows, 1)],
               keep_whole=("verdict",), right=("line",)))


def check(
    file: Path = typer.Argument(..., metavar="FILE", show_default=False,
                                help="JSONL: {id, output, gold?} or {id, calls, functions?, ground_truth?}"),
    db: Db = None,
    namespace: Optional[str] = typer.Option(None, "--namespace", help="only match APIs of this namespace"),
    mode: str = typer.Option("strict", "--mode", help="strict | gorilla (upstream APIBench rules) | "
                             "bfcl (the BFCL leaderboard's AST checker; JSON calls)"),
    bfcl_fc: bool = typer.Option(False, "--bfcl-fc", help="bfcl: judge names as for a function-calling "
                                 "model (dots written as _)"),
    bfcl_data: Optional[Path] = typer.Option(None, "--bfcl-data", help="bfcl: BFCL data folder for lines "
                                             "that give only a question id (default $TOOLSIFT_BFCL_DATA)"),
    as_json: Json = False,
    fail: str = typer.Option("any", "--fail-on", metavar="VERDICT,...|any|none", help=FAIL_ON_HELP),
) -> None:
    """Check model outputs (code-style calls or JSON tool calls): a verdict per line; exit 1 if any is defective."""
    mode_of(mode)
    failing = fail_on(fail)
    try:
        text = file.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"{file}: cannot read ({exc.strerror or exc})") from None
    as_json = wants_json(as_json)
    start = time.perf_counter()
    if mode == "bfcl":
        rows = bfcl_rows(file, text, bfcl_fc, bfcl_data)
        print_jsonl(rows) if as_json else print_verdicts(rows)
    else:
        cat = CheckCatalog(catalog_path(db), namespace)
        lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
        rows = []
        with progress_bar(len(lines)) as progress:
            task = progress.add_task("checking", total=len(lines))
            for lineno, line in lines:
                row = check_line(lineno, line, cat, mode)
                rows.append(row)
                if as_json:  # streamed: a long file shows its first verdicts at once
                    sys.stdout.write(dumps(row) + "\n")  # control characters escaped
                progress.advance(task)
        if not as_json:
            print_verdicts(rows)
    counts = Counter(r["verdict"] for r in rows)
    summary = ", ".join(f"{k} {v}" for k, v in counts.most_common())
    n_failed = failed(rows, failing)
    say(f"checked {len(rows)} line(s) in {time.perf_counter() - start:.2f}s: {summary or 'nothing'}"
        + (f"; {n_failed} failing (exit 1)" if n_failed else ""), err=True)
    sys.stdout.flush()
    exit_for(n_failed)


def register(app: typer.Typer) -> None:
    from .audit import audit_cmd

    app.command("check")(check)
    app.command("audit")(audit_cmd)
