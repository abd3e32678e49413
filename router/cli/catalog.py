"""`toolsift catalog ...`: load, inspect and prune the catalog (apidb's commands)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from apidb.catalog import Catalog, SyncReport
from apidb.limits import check_limits
from apidb.errors import CatalogError
from apidb.display import printable
from apidb.relations import KINDS

from .errors import CliError
from .options import Db, Json, catalog_path
from .output import ellipsize, print_json, say, show, table, wants_json


def load_sources(sources: list[Path], fmt: Optional[str], namespace: Optional[str], skip_invalid: bool):
    """Load every source before touching the catalog, so a bad file changes nothing."""
    from apidb import loaders

    results = []
    for src in expand_folders(sources):
        results.append(loaders.load(src, format=fmt, namespace=namespace, skip_invalid=skip_invalid))
    return results


SPEC_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")


def expand_folders(sources: list[Path]) -> list[Path]:
    """A folder stands for the spec files in it (.json, .jsonl, .yaml, .yml, sorted, searched
    recursively, hidden ones skipped): `catalog add specs/` failed with "Is a directory"."""
    out: list[Path] = []
    for src in sources:
        if not src.is_dir():
            out.append(src)
            continue
        found = sorted(p for p in src.rglob("*") if p.is_file() and p.suffix.lower() in SPEC_SUFFIXES
                       and not any(part.startswith(".") for part in p.relative_to(src).parts))
        if not found:
            raise CliError(f"{src}: a folder with no spec files in it ({', '.join(SPEC_SUFFIXES)})")
        out += found
    return out


def add(sources: list[Path] = typer.Argument(..., metavar="SOURCES", show_default=False, help="Catalog files (Gorilla, OpenAI tools, MCP, OpenAPI, BFCL, ToolBench), or folders of them."),
        db: Db = None,
        fmt: Optional[str] = typer.Option(None, "--format", help="gorilla|openai|mcp|openapi|bfcl|toolbench (default: detect)."),
        namespace: Optional[str] = typer.Option(None, "--namespace", help="Put every record in this namespace."),
        skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Load the valid records and report each skipped one."),
        as_json: Json = False) -> None:
    """Add or update records; a namespace that a source no longer lists loses them."""
    results = load_sources(sources, fmt, namespace, skip_invalid)
    records, namespaces = [], set()
    for res in results:
        for rec in res.records:  # the stores' key limits, said with the file (apidb.limits.check_limits)
            try:
                check_limits(rec)
            except CatalogError as exc:
                raise CliError(f"{res.path}: {exc}") from None
        records.extend(res.records)
        namespaces |= res.namespaces
        for skipped in res.skipped:
            typer.echo(f"skipped: {printable(skipped)}", err=True)  # one line each, never wrapped
    records = _check_unique(records)
    with Catalog(catalog_path(db)) as cat:
        report = cat.sync(records, namespaces)
    if wants_json(as_json):
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
        say(f"{res.path}: {len(res.records)} records ({res.format}), "
            f"{len(names)} namespace{'s' if len(names) != 1 else ''}: {shown}", wrap=True)
    say(f"added {report.added}, updated {report.updated}, removed {report.removed}, unchanged {report.unchanged}",
        wrap=True)


def stats(db: Db = None, as_json: Json = False) -> None:
    """Records per namespace and per source format."""
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        data = cat.stats()
    if wants_json(as_json):
        print_json(data)
        return
    rows = [(ns, fmt, n) for ns, fmts in sorted(data["namespace_formats"].items()) for fmt, n in sorted(fmts.items())]
    show(table(("namespace", "format", "records"), rows, title=f"{data['path']}: {data['records']} records",
               keep_whole=("namespace",), right=("records",)))


def list_(text: Optional[str] = typer.Argument(None, metavar="[TEXT]", show_default=False,
                                               help="Only records whose id, name, description or call contains "
                                                    "this text (case-insensitive)."),
          db: Db = None,
          namespace: Optional[str] = typer.Option(None, "--namespace", "-n", metavar="NS",
                                                  help="Only this namespace (see `catalog stats`)."),
          as_json: Json = False,
          limit: int = typer.Option(0, "--limit", metavar="N", help="Show at most this many (0: all).")) -> None:
    """List records: id, namespace, name, description and call."""
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        if namespace and namespace not in cat.namespaces():
            raise CliError(f"unknown namespace {namespace!r} (have: {', '.join(cat.namespaces()) or 'none'})"
                           + _did_you_mean(namespace, cat.namespaces()))
        records = cat.records(namespace)
    if text:
        needle = text.casefold()
        records = [r for r in records if any(needle in (x or "").casefold()
                                             for x in (r.id, r.name, r.description, r.call))]
    if limit > 0:
        records = records[:limit]
    if wants_json(as_json):
        print_json([_brief(r) for r in records])
        return
    if not records:
        say("no records" + (f" containing {text!r}" if text else ""), err=True)
        return
    with_call = any(r.call for r in records)
    cols = ("id", "namespace", "name", "description") + (("call",) if with_call else ())
    show(table(cols, [(r.id, r.namespace, r.name, ellipsize(r.description, 160))
                      + ((ellipsize(r.call or "", 160),) if with_call else ()) for r in records],
               keep_whole=("id", "namespace", "name")))


def _did_you_mean(value: str, choices) -> str:
    import difflib

    near = difflib.get_close_matches(value, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""


def resolve(cat: Catalog, given: str):
    """A record from what the user typed: its id, else its bare name or the part after the
    namespace when exactly one record has it; otherwise an error naming the candidates or the
    nearest ids (`catalog show AlexNet` failed although the name is unique)."""
    rec = cat.get(given)
    if rec is not None:
        return rec
    records = cat.records()
    key = given.casefold()
    hits = [r for r in records if r.name.casefold() == key or r.id.split("/", 1)[-1].casefold() == key]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise CliError(f"{given!r} names {len(hits)} records: " + ", ".join(r.id for r in hits[:8])
                       + (" ..." if len(hits) > 8 else "") + " (give the id)")
    names = {r.name: r.id for r in records}
    ids = [r.id for r in records]
    import difflib

    near = difflib.get_close_matches(given, ids, n=3, cutoff=0.6) or \
        [names[n] for n in difflib.get_close_matches(given, list(names), n=3, cutoff=0.6)]
    return_hint = f"; did you mean {' or '.join(near)}?" if near else " (see `toolsift catalog list TEXT`)"
    raise CliError(f"no record with id or name {given!r}{return_hint}")


def _brief(r) -> dict:
    d = {"id": r.id, "namespace": r.namespace, "name": r.name, "description": r.description}
    if r.call is not None:
        d["call"] = r.call
    return d


def show_record(record_id: str = typer.Argument(..., metavar="ID", show_default=False,
                                               help="Record id, or a name only one record has (see `catalog list`)."),
                db: Db = None, as_json: Json = False) -> None:
    """Print one record as JSON (indented on a terminal, one line on a pipe or with --json)."""
    with Catalog.open(catalog_path(db), readonly=True) as cat:
        rec = resolve(cat, record_id)
    if wants_json(as_json):
        print_json(rec.to_dict())
    else:
        import json

        say(json.dumps(rec.to_dict(), ensure_ascii=False, indent=2, default=str))


def remove(namespace: str = typer.Option(..., "--namespace", help="Namespace to drop."),
           db: Db = None, as_json: Json = False) -> None:
    """Remove every record of a namespace."""
    with Catalog.open(catalog_path(db)) as cat:
        if namespace not in cat.namespaces():
            raise CliError(f"unknown namespace {namespace!r} (have: {', '.join(cat.namespaces()) or 'none'})")
        n = cat.remove_namespace(namespace)
    if wants_json(as_json):
        print_json({"removed": n})
    else:
        say(f"removed {n} records from namespace {namespace}")


def relations(db: Db = None, learn: list[Path] = typer.Option(
        [], "--learn-from-log", metavar="FILE", show_default=False,
        help="Usage logs (serve --usage-log) to learn co-use from: the tools called for one request; "
             "stored in the catalog, replacing what was learned before. Repeatable."),
        as_json: Json = False) -> None:
    """The tool relations routing completes multi-step requests with (docs/routing.md): how many of
    each kind; with --learn-from-log, learn which tools are used together and store it.

    Example: toolsift catalog relations --learn-from-log usage.jsonl
    """
    from router.ranking.companions import RelationGraph

    learned = None
    with Catalog.open(catalog_path(db), readonly=not learn) as cat:
        records = cat.records()
        if learn:
            from router.training.co_use import learn_co_use

            learned = learn_co_use(learn, records)
            cat.set_co_use(learned.relations)
        counts = RelationGraph.build(records, cat.co_use()).counts()
    data = {"records": len(records), "relations": {k: counts.get(k, 0) for k in KINDS}}
    if learned is not None:
        data["learned"] = {"lines": learned.lines, "requests": learned.requests, "unknown_tools": learned.unknown,
                           "co_use": len(learned.relations)}
    if wants_json(as_json):
        print_json(data)
        return
    if learned is not None:
        say(f"learned {len(learned.relations)} co-use relations from {learned.requests} requests with several "
            f"tools called ({learned.lines} log lines; {learned.unknown} name no single catalog tool)", wrap=True)
    show(table(("relation", "pairs"), [(k, counts.get(k, 0)) for k in KINDS],
               title=f"{len(records)} tools", right=("pairs",)))


def register(root: typer.Typer) -> None:
    group = typer.Typer(help="Build and inspect the API catalog (one SQLite file).", no_args_is_help=True)
    for name, command in (("add", add), ("stats", stats), ("list", list_), ("show", show_record), ("remove", remove),
                          ("relations", relations)):
        group.command(name)(command)
    root.add_typer(group, name="catalog")

