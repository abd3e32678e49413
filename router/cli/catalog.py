"""`toolsift catalog ...`: load, inspect and prune the catalog (apidb's commands)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from apidb.catalog import Catalog, SyncReport
from apidb.display import json_text, printable

from .errors import CliError
from .options import Db, Json, catalog_path

out = Console()
err = Console(stderr=True)


def print_json(value: object) -> None:
    typer.echo(json_text(value, indent=None, default=str))  # control characters escaped


def cell(value: object) -> Text:
    """Catalog data as a table cell: control characters escaped, no rich markup."""
    return Text(printable(value))


def load_sources(sources: list[Path], fmt: Optional[str], namespace: Optional[str], skip_invalid: bool):
    """Load every source before touching the catalog, so a bad file changes nothing."""
    from apidb import loaders

    results = []
    for src in sources:
        results.append(loaders.load(src, format=fmt, namespace=namespace, skip_invalid=skip_invalid))
    return results


def add(sources: list[Path] = typer.Argument(..., help="Catalog files (Gorilla, OpenAI tools, MCP, OpenAPI, BFCL, ToolBench)."),
        db: Db = None,
        fmt: Optional[str] = typer.Option(None, "--format", help="gorilla|openai|mcp|openapi|bfcl|toolbench (default: detect)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", help="Put every record in this namespace."),
        skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Load the valid records and report each skipped one."),
        as_json: Json = False) -> None:
    """Add or update records; a namespace that a source no longer lists loses them."""
    results = load_sources(sources, fmt, namespace, skip_invalid)
    records, namespaces = [], set()
    for res in results:
        records.extend(res.records)
        namespaces |= res.namespaces
        for skipped in res.skipped:
            typer.echo(f"skipped: {printable(skipped)}", err=True)  # one line each, never wrapped
    records = _check_unique(records)
    with Catalog(catalog_path(db)) as cat:
        report = cat.sync(records, namespaces)
    if as_json:
        print_json(report.to_dict() | {"skipped": sum(len(r.skipped) for r in results)})
    else:
        _print_report(report, results)


def _check_unique(records) -> list:
    """One record per id. Sources that share a namespace (the ToolBench query files all
    list some of the same endpoints) may repeat a record identically; a conflicting
    repeat is an error."""
    seen: dict[str, object] = {}
    for rec in records:
        if rec.id in seen:
            if seen[rec.id].content_hash == rec.content_hash:
                continue
            raise CliError(f"two sources define record {rec.id!r} differently; give one of them its own --namespace")
        seen[rec.id] = rec
    return list(seen.values())


def _print_report(report: SyncReport, results) -> None:
    for res in results:
        names = sorted(res.namespaces)
        shown = ", ".join(names[:6]) + (f", … (+{len(names) - 6} more)" if len(names) > 6 else "")
        # soft_wrap: one line per source even when stdout is not a terminal (rich wraps at 80)
        out.print(printable(f"{res.path}: {len(res.records)} records ({res.format}), "
                            f"{len(names)} namespace{'s' if len(names) != 1 else ''}: {shown}"),
                  highlight=False, markup=False, soft_wrap=True)
    out.print(f"added {report.added}, updated {report.updated}, removed {report.removed}, "
              f"unchanged {report.unchanged}", highlight=False, soft_wrap=True)


def stats(db: Db = None, as_json: Json = False) -> None:
    """Records per namespace and per source format."""
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        data = cat.stats()
    if as_json:
        print_json(data)
        return
    table = Table(title=cell(f"{data['path']}: {data['records']} records"))
    table.add_column("namespace")
    table.add_column("format")
    table.add_column("records", justify="right")
    for ns, fmts in sorted(data["namespace_formats"].items()):
        for fmt, n in sorted(fmts.items()):
            table.add_row(cell(ns), cell(fmt), str(n))
    out.print(table)


def list_(db: Db = None,
          namespace: Optional[str] = typer.Option(None, "--namespace"),
          as_json: Json = False,
          limit: int = typer.Option(0, "--limit", help="Show at most this many (0: all).")) -> None:
    """List records (id, namespace, name, description, call)."""
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        if namespace and namespace not in cat.namespaces():
            raise CliError(f"unknown namespace {namespace!r} (have: {', '.join(cat.namespaces()) or 'none'})")
        records = cat.records(namespace)
    if limit > 0:
        records = records[:limit]
    if as_json:
        print_json([_brief(r) for r in records])
        return
    table = Table(show_lines=False)
    for col in ("id", "name", "description"):
        table.add_column(col, overflow="fold")
    for r in records:
        table.add_row(cell(r.id), cell(r.name), cell(_short(r.description)))
    out.print(table)


def _brief(r) -> dict:
    d = {"id": r.id, "namespace": r.namespace, "name": r.name, "description": r.description}
    if r.call is not None:
        d["call"] = r.call
    return d


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def show(record_id: str = typer.Argument(..., help="Record id (see `catalog list`)."),
         db: Db = None) -> None:
    """Print one record as JSON."""
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        rec = cat.get(record_id)
    if rec is None:
        raise CliError(f"no record with id {record_id!r}")
    print_json(rec.to_dict())


def remove(namespace: str = typer.Option(..., "--namespace", help="Namespace to drop."),
           db: Db = None, as_json: Json = False) -> None:
    """Remove every record of a namespace."""
    with Catalog.open(catalog_path(db)) as cat:
        if namespace not in cat.namespaces():
            raise CliError(f"unknown namespace {namespace!r} (have: {', '.join(cat.namespaces()) or 'none'})")
        n = cat.remove_namespace(namespace)
    if as_json:
        print_json({"removed": n})
    else:
        out.print(printable(f"removed {n} records from namespace {namespace}"), highlight=False, markup=False)


def register(root: typer.Typer) -> None:
    group = typer.Typer(help="Build and inspect the API catalog (one SQLite file).", no_args_is_help=True)
    for name, command in (("add", add), ("stats", stats), ("list", list_), ("show", show), ("remove", remove)):
        group.command(name)(command)
    root.add_typer(group, name="catalog")

