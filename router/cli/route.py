"""`toolsift index` and `toolsift route`.

    toolsift index --db PATH [--model ID]
    toolsift route "QUERY" --db PATH [-k 5] [--method bm25|dense|hybrid] [--json]
    toolsift route --queries FILE.jsonl --db PATH [-k 5] [--method ...]

With --queries each input line is {"id", "query"} or {"id", "messages"}; each output
line on stdout is {"id", "tools": [...]} in rank order. Warnings (e.g. BM25-only
fallback) go to stderr so stdout stays machine-readable.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from apidb.display import json_text, printable
from apidb.jsonl import JsonLineError, TextFileError, parse_lines, read_utf8

from router.errors import RouterError

from .options import Db, IndexDir, Json, Model, catalog_path

err = Console(stderr=True)
out = Console()

def index(db: Db = None, model: Model = None, index_dir: IndexDir = None, as_json: Json = False) -> None:
    """Build the BM25 and dense indexes next to the catalog (only new/changed records are embedded)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from router.index import build_index

    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("embed", total=0)
        report = build_index(catalog_path(db), index_dir=index_dir, model=model,
                             on_start=lambda n: progress.update(task, total=n),
                             on_batch=lambda n: progress.advance(task, n))
    if as_json:
        typer.echo(json.dumps(report.to_dict()))
    elif report.up_to_date:
        out.print(f"index up to date: {report.records} records ({report.path})", highlight=False)
    else:
        out.print(f"indexed {report.records} records in {report.seconds:.1f}s: {report.embedded} embedded, "
                  f"{report.reused} from cache ({report.path})", highlight=False)


def _read_queries(path: Path) -> list[tuple[str, Any]]:
    """(id, query-or-messages) per line; a bad line is an error naming file and line."""
    items = []
    try:
        for n, row in parse_lines(read_utf8(path, "queries file")):
            if not isinstance(row, dict) or ("query" not in row and "messages" not in row):
                raise RouterError(f"{path}: line {n}: expected an object with 'query' or 'messages'")
            items.append((str(row.get("id", str(n))), row["query"] if "query" in row else row["messages"]))
    except JsonLineError as exc:
        raise RouterError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    except TextFileError as exc:
        raise RouterError(str(exc)) from None
    return items


def _tools(selections) -> list[dict[str, Any]]:
    return [s.to_dict() for s in selections]


def route(query: Optional[str] = typer.Argument(None, help="The request to route (or use --queries)."),
          db: Db = None,
          k: int = typer.Option(5, "-k", "--k", help="How many tools to select."),
          method: str = typer.Option("hybrid", "--method", help="hybrid | bm25 | dense."),
          as_json: Json = False,
          queries: Optional[Path] = typer.Option(None, "--queries", help="JSONL file: one {id, query|messages} per line."),
          min_score: Optional[float] = typer.Option(None, "--min-score", help="Drop tools scoring below this."),
          namespace: Optional[list[str]] = typer.Option(None, "--namespace", "-n", help="Only these namespaces (repeatable)."),
          exclude_namespace: Optional[list[str]] = typer.Option(None, "--exclude-namespace", help="Never these namespaces."),
          pin: Optional[list[str]] = typer.Option(None, "--pin", help="Always include this tool id or name (repeatable)."),
          token_budget: Optional[int] = typer.Option(None, "--token-budget", help="Max tokens of the selected tool schemas."),
          model: Model = None, index_dir: IndexDir = None) -> None:
    """Select the top-k tools for a request, with scores and why each was picked."""
    from router.engine import Router

    if (query is None) == (queries is None):
        raise RouterError("give either a QUERY argument or --queries FILE.jsonl (not both)")
    if k <= 0:
        raise RouterError(f"-k must be a positive integer, got {k}")
    items = _read_queries(queries) if queries is not None else [(None, query)]
    router = Router.open(catalog_path(db), model=model, index_dir=index_dir)
    for w in router.warnings:
        err.print(printable(f"warning: {w}"), highlight=False, markup=False, soft_wrap=True)
    opts = dict(k=k, method=method, min_score=min_score, pinned=pin or (), include_namespaces=namespace or None,
                exclude_namespaces=exclude_namespace or None, token_budget=token_budget)
    if queries is not None:
        for qid, q in items:  # one bad query must not lose the others' answers
            try:
                line = {"id": qid, "tools": _tools(router.select(q, **opts))}
            except RouterError as exc:
                err.print(printable(f"error: query {qid}: {exc}"), highlight=False, markup=False, soft_wrap=True)
                line = {"id": qid, "tools": [], "error": str(exc)}
            typer.echo(json_text(line))
        return
    selections = router.select(query, **opts)
    if as_json:
        used = method if (method == "bm25" or router.dense_index() is not None) else "bm25"
        typer.echo(json_text({"query": query, "method": used, "tools": _tools(selections),
                              "warnings": router.warnings}))
        return
    _print_table(query, selections)


def _print_table(query: str, selections) -> None:
    from rich.table import Table

    from rich.text import Text

    table = Table(title=Text(printable(f"top tools for: {query[:80]}")), title_justify="left")
    for col in ("#", "tool", "score", "bm25", "dense", "matched terms", "why"):
        table.add_column(col, overflow="fold")
    for s in selections:  # catalog data: escaped, never rich markup
        table.add_row(str(s.rank), Text(printable(s.record.id)), f"{s.score:.3f}",
                      "-" if s.bm25_score is None else f"{s.bm25_score:.2f}",
                      "-" if s.dense_score is None else f"{s.dense_score:.3f}",
                      Text(printable(", ".join(s.matched_terms))), Text(printable(s.reason)))
    out.print(table)
    if not selections:
        out.print("no tool matched", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("index")(index)
    app.command("route")(route)
