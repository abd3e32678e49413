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
from .output import dumps, ellipsize, print_jsonl, say, show, table, wants_json, warn


def read_lines(file: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a check file as (line number, object), all read before any is checked.

    The file's shape is the user's input, not the model's answer: a pretty-printed JSON file, a
    line that is not an object, or one with neither ``output`` nor ``calls`` is one error line
    naming the file and line (exit 2), never an ``error`` verdict per line (exit 1), so CI can tell
    "wrong file" from "the model made bad calls". What the model wrote is judged by the checker;
    a line that breaks a limit of apidb.safe_io (a 5,000-digit argument, [[[[... in the calls) is
    hostile model output and stays that line's ``error`` verdict (an ``_unsafe`` entry here).
    """
    from apidb.safe_io import UnsafeDocument, loads_json

    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line, strict_unicode=False)
        except json.JSONDecodeError as exc:
            raise CliError(f"{file}: line {lineno}: malformed JSON ({exc.msg} at column {exc.colno})"
                           + _whole_document_hint(text)) from None
        except UnsafeDocument as exc:
            rows.append((lineno, {"_unsafe": str(exc)}))
            continue
        if not isinstance(obj, dict):
            raise CliError(f"{file}: line {lineno}: expected an object, got {type(obj).__name__} "
                           "(check reads JSON Lines: one {id, output|calls, ...} object per line)")
        if "output" not in obj and "calls" not in obj:
            raise CliError(f"{file}: line {lineno}: needs 'output' (code) or 'calls' (JSON tool calls)"
                           + _near_keys(obj))
        rows.append((lineno, obj))
    return rows


def _near_keys(obj: dict[str, Any]) -> str:
    """'; it has 'call': did you mean 'calls'?' for a key one typo away from a known one."""
    import difflib

    keys = [str(k) for k in obj]
    for key in keys:
        near = difflib.get_close_matches(key, ["output", "calls"], n=1, cutoff=0.6)
        if near:
            return f"; it has {key!r}: did you mean {near[0]!r}?"
    return f"; it has {', '.join(map(repr, keys[:6]))}" if keys else "; it is empty"


def _whole_document_hint(text: str) -> str:
    """A pretty-printed JSON file fails on its first line; say what it is instead of that line's error."""
    from apidb.safe_io import UnsafeDocument, loads_json

    try:
        loads_json(text, strict_unicode=False)
    except (json.JSONDecodeError, UnsafeDocument):
        return ""
    return ("; the file is one JSON document over several lines, but check reads JSON Lines: one object "
            "per line (`jq -c '.[]'` or `jq -c .` converts it)")


def check_line(lineno: int, obj: dict[str, Any], cat: CheckCatalog, mode: str) -> dict[str, Any]:
    """One input object -> one output object; a checker failure becomes an 'error' verdict naming the line."""
    if "_unsafe" in obj:
        return {"id": None, "line": lineno, "verdict": "error", "ok": False,
                "error": f"line {lineno}: {obj['_unsafe']}", "defects": []}
    rid = obj.get("id")
    try:
        if "output" in obj:
            from checker.code import check_code

            v = check_code(obj["output"], cat.index(), gold=obj.get("gold"), mode=mode)
        else:
            from checker.calls import check_calls

            functions = obj.get("functions")
            if functions is None and (cat.db is not None):
                functions = cat.records()
            v = check_calls(obj["calls"], functions, obj.get("ground_truth"))
    except ToolsiftError as exc:
        return {"id": rid, "line": lineno, "verdict": "error", "ok": False, "error": f"line {lineno}: {exc}",
                "defects": []}
    except Exception as exc:  # noqa: BLE001 - a checker bug on one line must not lose the others' verdicts
        return {"id": rid, "line": lineno, "verdict": "error", "ok": False,
                "error": f"line {lineno}: could not be checked ({type(exc).__name__}: {str(exc)[:200]})",
                "defects": []}
    return {"id": rid, **v.to_dict()}


def open_catalog(cat: CheckCatalog, objs: list[tuple[int, dict[str, Any]]]) -> None:
    """Open the catalog once, before any line is checked, when a line needs it: a missing catalog
    is one error (exit 2), not one per line; an empty one is a warning (every call would be
    hallucinated)."""
    needed = any("output" in o or ("calls" in o and o.get("functions") is None) for _, o in objs)
    if not needed:
        return
    try:
        records = cat.records()
    except ToolsiftError as exc:
        raise CliError(str(exc)) from None
    if not records:
        warn(f"{cat.db}: the catalog holds no tools, so every call is checked against nothing "
             "(add tools with `toolsift catalog add FILE --db ...`)")


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


def verdict_style(verdict: str) -> str:
    """The colour of a verdict on a terminal: green fine, red made up, yellow otherwise wrong."""
    if verdict in ("correct", "valid"):
        return "green"
    if verdict.startswith("hallucinated"):
        return "bold red"
    return "magenta" if verdict in ("error", "no_gold") else "yellow"


def print_verdicts(rows: list[dict[str, Any]]) -> None:
    cols = ("line", "id", "verdict", "what")
    show(table(cols, [(r.get("line", i), "-" if r.get("id") is None else r.get("id"), r.get("verdict"),
                       ellipsize(_what(r), 400)) for i, r in enumerate(rows, 1)],
               keep_whole=("verdict",), right=("line",), styles={"verdict": verdict_style}))


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
        objs = read_lines(file, text)
        cat = CheckCatalog(catalog_path(db), namespace)
        open_catalog(cat, objs)
        rows = []
        with progress_bar(len(objs)) as progress:
            task = progress.add_task("checking", total=len(objs))
            for lineno, obj in objs:
                row = check_line(lineno, obj, cat, mode)
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
        + (f"; {n_failed} failing (exit 1)" if n_failed else ""), err=True, wrap=True)
    sys.stdout.flush()
    exit_for(n_failed)


def register(app: typer.Typer) -> None:
    from .audit import audit_cmd

    app.command("check")(check)
    app.command("audit")(audit_cmd)
