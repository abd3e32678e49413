"""`toolsift check` and `toolsift audit` (the checker's commands).

``--db`` takes a catalog, or any source file the catalog loaders read (Gorilla mode needs the
*_api.jsonl file itself: its line order is part of the upstream scoring rules).
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import typer

from apidb.display import json_text
from apidb.errors import ToolsiftError

from .errors import CliError
from .options import Db, Json, catalog_path

_SOURCE_SUFFIXES = {".json", ".jsonl", ".yaml", ".yml"}


class _Catalog:
    """The --db argument, opened on first use: a catalog file or any loadable source file."""

    def __init__(self, db: Optional[Path], namespace: Optional[str]) -> None:
        self.db, self.namespace = db, namespace
        self._records: Any = None
        self._index: Any = None

    @property
    def is_source(self) -> bool:
        return self.db is not None and self.db.suffix.lower() in _SOURCE_SUFFIXES

    def warn_order(self, mode: str) -> None:
        """Gorilla mode needs the API database's file order; a catalog may not keep it."""
        if mode == "gorilla" and not self.is_source:
            recs = self.records()
            if recs and not all("source_index" in r.metadata for r in recs):
                typer.echo("warning: this catalog does not record the source file order that upstream "
                           "scoring depends on; for upstream-exact Gorilla figures pass the *_api.jsonl "
                           "file itself as --db", err=True)

    def records(self) -> list:
        if self._records is None:
            if self.is_source:
                from apidb.loaders import load

                recs = load(self.db).records  # source order kept: Gorilla mode needs it
            else:
                from apidb.catalog import Catalog

                with Catalog.open(self.db, readonly=True) as cat:
                    recs = cat.records()
            if self.namespace is not None:
                recs = [r for r in recs if r.namespace == self.namespace]
                if not recs:
                    raise CliError(f"{self.db}: no records in namespace {self.namespace!r}")
            self._records = recs
        return self._records

    def index(self) -> Any:
        if self._index is None:
            from checker.code import CodeIndex

            self._index = CodeIndex(self.records(), self.namespace)
        return self._index


MODES = ("strict", "gorilla", "bfcl")  # gorilla: code-style answers only; bfcl: JSON calls only


def _mode(mode: str) -> str:
    if mode not in MODES:
        raise CliError(f"unknown --mode {mode!r} (choose from: {', '.join(MODES)})")
    return mode


def _bfcl_rows(file: Path, text: str, fc: bool, data: Optional[Path]) -> list[dict[str, Any]]:
    """--mode bfcl: every line checked first; a bad one is a one-line error naming it."""
    from checker.bfcl.batch import check_lines
    from checker.bfcl.data import BfclData

    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    try:
        return check_lines(lines, fc=fc, data=BfclData(data))
    except ToolsiftError as exc:
        raise CliError(f"{file}: {exc}") from None


def _audit_bfcl(responses: Path, fc: bool, data: Optional[Path], as_json: bool, report: Optional[Path]) -> None:
    from checker.bfcl.batch import summarize, write_report

    try:
        text = responses.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"{responses}: cannot read ({exc.strerror or exc})") from None
    summary = summarize(_bfcl_rows(responses, text, fc, data))
    summary.update({"file": str(responses), "fc": fc})
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        for key in ("n", "accuracy", "hallucination", "error"):
            value = summary[key]
            typer.echo(f"{key}\t{value if value is None or key == 'n' else f'{value:.4f}'}")
        typer.echo("verdicts\t" + ", ".join(f"{k} {v}" for k, v in summary["counts"].items()))
    if report is not None:
        cmd = "toolsift " + " ".join(sys.argv[1:]) if sys.argv else ""
        path = write_report(summary, report, f"{responses.name} (bfcl{', FC' if fc else ''})", cmd)
        typer.echo(f"report: {path}", err=True)


def _progress(total: int, label: str):  # noqa: ANN202
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    return Progress(console=console, transient=True, disable=not console.is_terminal or total < 200), label


def check_line(lineno: int, line: str, cat: _Catalog, mode: str) -> dict[str, Any]:
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


def check(
    file: Path = typer.Argument(..., help="JSONL: {id, output, gold?} or {id, calls, functions?, ground_truth?}"),
    db: Db = None,
    namespace: Optional[str] = typer.Option(None, "--namespace", help="only match APIs of this namespace"),
    mode: str = typer.Option("strict", "--mode", help="strict | gorilla (upstream APIBench rules) | "
                             "bfcl (the BFCL leaderboard's AST checker; JSON calls)"),
    bfcl_fc: bool = typer.Option(False, "--bfcl-fc", help="bfcl: judge names as for a function-calling "
                                 "model (dots written as _)"),
    bfcl_data: Optional[Path] = typer.Option(None, "--bfcl-data", help="bfcl: BFCL data folder for lines "
                                             "that give only a question id (default $TOOLSIFT_BFCL_DATA)"),
) -> None:
    """Check model outputs (code-style calls or JSON tool calls); one JSON verdict per line."""
    _mode(mode)
    try:
        text = file.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise CliError(f"{file}: cannot read ({exc.strerror or exc})") from None
    if mode == "bfcl":
        start = time.perf_counter()
        rows = _bfcl_rows(file, text, bfcl_fc, bfcl_data)
        sys.stdout.writelines(json_text(r, default=str) + "\n" for r in rows)
        counts = Counter(r["verdict"] for r in rows)
        summary = ", ".join(f"{k} {v}" for k, v in counts.most_common())
        typer.echo(f"checked {len(rows)} line(s) in {time.perf_counter() - start:.2f}s: {summary or 'nothing'}",
                   err=True)
        return
    cat = _Catalog(catalog_path(db), namespace)
    counts: Counter = Counter()
    start = time.perf_counter()
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    progress, _ = _progress(len(lines), "checking")
    with progress:
        task = progress.add_task("checking", total=len(lines))
        for lineno, line in lines:
            out = check_line(lineno, line, cat, mode)
            counts[out["verdict"]] += 1
            sys.stdout.write(json_text(out, default=str) + "\n")  # control characters escaped
            progress.advance(task)
    took = time.perf_counter() - start
    summary = ", ".join(f"{k} {v}" for k, v in counts.most_common())
    typer.echo(f"checked {len(lines)} line(s) in {took:.2f}s: {summary or 'nothing'}", err=True)

def audit_cmd(
    responses: Path = typer.Argument(..., help="a Gorilla response file (question_id, text per line); "
                                     "--mode bfcl: BFCL outputs as for check"),
    db: Db = None,
    namespace: Optional[str] = typer.Option(None, "--namespace", help="the catalog namespace of the hub"),
    gold: Optional[Path] = typer.Option(None, "--gold", help="APIBench *_eval.json (line i = question i)"),
    mode: str = typer.Option("strict", "--mode", help="strict | gorilla | bfcl"),
    as_json: Json = False,
    report: Optional[Path] = typer.Option(None, "--report", help="write report.md and a PNG chart here"),
    bfcl_fc: bool = typer.Option(False, "--bfcl-fc", help="bfcl: a function-calling model (dots written as _)"),
    bfcl_data: Optional[Path] = typer.Option(None, "--bfcl-data", help="bfcl: BFCL data folder"),
) -> None:
    """Score a file of model answers: n, accuracy, hallucination, error (fractions)."""
    from checker.audit import audit, read_gold, read_jsonl, write_report

    _mode(mode)
    if mode == "bfcl":
        _audit_bfcl(responses, bfcl_fc, bfcl_data, as_json, report)
        return
    if namespace is None:
        raise CliError(f"--namespace is required with --mode {mode} (the catalog namespace of the hub)")
    rows = read_jsonl(responses, "responses")
    gold_rows = read_gold(gold) if gold is not None else None
    db = catalog_path(db)
    cat = _Catalog(db, namespace)
    index = cat.index()
    cat.warn_order(mode)
    if not len(index):
        raise CliError(f"{db}: namespace {namespace!r} holds no code-style APIs to audit against")
    start = time.perf_counter()
    progress, _ = _progress(len(rows), "auditing")
    with progress:
        task = progress.add_task("auditing", total=len(rows))
        result = audit(rows, index, gold_rows, mode, progress=lambda: progress.advance(task))
    took = time.perf_counter() - start
    summary = result.summary()
    summary.update({"file": str(responses), "namespace": namespace, "seconds": round(took, 3)})
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        for key in ("n", "accuracy", "hallucination", "error"):
            value = summary[key]
            typer.echo(f"{key}\t{value if value is None or key == 'n' else f'{value:.4f}'}")
        typer.echo("verdicts\t" + ", ".join(f"{k} {v}" for k, v in result.counts.most_common()))
    if report is not None:
        cmd = "toolsift " + " ".join(sys.argv[1:]) if sys.argv else ""
        path = write_report(result, report, f"{responses.name} ({namespace}, {mode})", cmd)
        typer.echo(f"report: {path}", err=True)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("audit")(audit_cmd)
