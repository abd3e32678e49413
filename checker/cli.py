"""`toolsift check` and `toolsift audit`."""
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
                    raise ToolsiftError(f"{self.db}: no records in namespace {self.namespace!r}")
            self._records = recs
        return self._records

    def index(self) -> Any:
        if self._index is None:
            from .code import CodeIndex

            self._index = CodeIndex(self.records(), self.namespace)
        return self._index


def _mode(mode: str) -> str:
    if mode not in ("strict", "gorilla"):
        raise ToolsiftError(f"unknown --mode {mode!r} (choose from: strict, gorilla)")
    return mode


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
            from .code import check_code

            v = check_code(obj["output"], cat.index(), gold=obj.get("gold"), mode=mode)
        elif "calls" in obj:
            from .calls import check_calls

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


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        file: Path = typer.Argument(..., help="JSONL: {id, output, gold?} or {id, calls, functions?, ground_truth?}"),
        db: Optional[Path] = typer.Option(None, "--db", help="catalog file (or a source file); default $TOOLSIFT_DB"),
        namespace: Optional[str] = typer.Option(None, "--namespace", help="only match APIs of this namespace"),
        mode: str = typer.Option("strict", "--mode", help="strict | gorilla (upstream APIBench rules)"),
    ) -> None:
        """Check model outputs (code-style calls or JSON tool calls); one JSON verdict per line."""
        _mode(mode)
        try:
            text = file.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise ToolsiftError(f"{file}: cannot read ({exc.strerror or exc})") from None
        if db is None:
            from apidb.catalog import default_db_path

            db = default_db_path()
        cat = _Catalog(db, namespace)
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

    @app.command("audit")
    def audit_cmd(
        responses: Path = typer.Argument(..., help="a Gorilla response file (question_id, text per line)"),
        db: Path = typer.Option(..., "--db", help="catalog file (or the Gorilla *_api.jsonl itself)"),
        namespace: str = typer.Option(..., "--namespace", help="the catalog namespace of the hub"),
        gold: Optional[Path] = typer.Option(None, "--gold", help="APIBench *_eval.json (line i = question i)"),
        mode: str = typer.Option("strict", "--mode", help="strict | gorilla"),
        as_json: bool = typer.Option(False, "--json", help="print the figures as one JSON object"),
        report: Optional[Path] = typer.Option(None, "--report", help="write report.md and a PNG chart here"),
    ) -> None:
        """Score a file of model answers: n, accuracy, hallucination, error (fractions)."""
        from .audit import audit, read_gold, read_jsonl, write_report

        _mode(mode)
        rows = read_jsonl(responses, "responses")
        gold_rows = read_gold(gold) if gold is not None else None
        cat = _Catalog(db, namespace)
        index = cat.index()
        cat.warn_order(mode)
        if not len(index):
            raise ToolsiftError(f"{db}: namespace {namespace!r} holds no code-style APIs to audit against")
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
