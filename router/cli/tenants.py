"""`toolsift tenants new-key | hash-key | check`: keys and the tenants file of the proxy and the gateway.

    toolsift tenants new-key                 a random key, and the line for the tenants file
    toolsift tenants hash-key < key.txt      the sha256 digest of a key read from stdin
    toolsift tenants check tenants.toml      the file's tenants and what each may see in a catalog

A key is read from stdin (or typed, hidden), never taken as an argument: arguments end up in
shell history and in every user's `ps`. The file format: `router.tenancy.tenants`, docs/middleware.md.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from .errors import CliError
from .options import Db, Json, catalog_path
from .output import print_json, say, show, table, wants_json

MIN_KEY_CHARS = 16


def new_key(as_json: Json = False) -> None:
    """Make a random key (256 bits) and its digest for the tenants file."""
    from router.tenancy.tenants import hash_key, new_key as make

    key = make()
    digest = hash_key(key)
    if wants_json(as_json):
        print_json({"key": key, "key_sha256": digest})
        return
    say(f"key:        {key}")
    say(f'key_sha256 = "{digest}"')
    say("Give the key to the tenant and put the key_sha256 line in its [tenants.NAME] table; "
        "the key itself is not kept anywhere.", err=True, wrap=True)


def hash_key(as_json: Json = False) -> None:
    """Print the sha256 digest of a key read from stdin (one line; typed hidden at a terminal)."""
    from router.tenancy.tenants import hash_key as digest_of

    if sys.stdin.isatty():
        key = typer.prompt("key", hide_input=True)
    else:
        key = sys.stdin.readline().rstrip("\r\n")
    if not key:
        raise CliError("no key on stdin (e.g. `printf %s \"$KEY\" | toolsift tenants hash-key`)")
    if len(key) < MIN_KEY_CHARS:
        raise CliError(f"the key has {len(key)} characters; use at least {MIN_KEY_CHARS} "
                       "(`toolsift tenants new-key` makes a random one)")
    digest = digest_of(key)
    if wants_json(as_json):
        print_json({"key_sha256": digest})
    else:
        say(digest)


def check(path: Path = typer.Argument(..., help="The tenants file (TOML)."), db: Db = None,
          as_json: Json = False) -> None:
    """Read a tenants file (one error line, exit 2, if it is wrong) and show what each tenant sees."""
    from router.tenancy.tenants import Tenants

    tenants = Tenants.load(path)
    counts = _namespace_counts(db)
    rows: list[dict[str, Any]] = []
    for t in tenants.tenants:
        row: dict[str, Any] = {"tenant": t.name, "namespaces": ["*"] if t.namespaces is None else sorted(t.namespaces)}
        if counts is not None:
            seen = counts if t.namespaces is None else {n: counts[n] for n in t.namespaces if n in counts}
            row["tools"] = sum(seen.values())
            row["not_in_catalog"] = [] if t.namespaces is None else sorted(t.namespaces - set(counts))
        rows.append(row)
    if wants_json(as_json):
        print_json({"file": str(path), "tenants": rows})
        return
    columns = ["tenant", "namespaces"] + (["tools", "not in catalog"] if counts is not None else [])
    show(table(columns, [[r["tenant"], ", ".join(r["namespaces"])]
                         + ([r["tools"], ", ".join(r["not_in_catalog"]) or "-"] if counts is not None else [])
                         for r in rows], title=f"{path}: {len(rows)} tenants", keep_whole=("tenant",)))


def _namespace_counts(db: Path | str | None) -> dict[str, int] | None:
    """Tools per namespace of the catalog (a file or a PostgreSQL URL), or None when there is no
    catalog to look at."""
    from apidb.catalog import Catalog
    from apidb.location import catalog_exists

    path = catalog_path(db)
    if not catalog_exists(path):
        if db is not None:
            raise CliError(f"{db}: no such catalog")
        return None
    with Catalog.open(path, readonly=True) as cat:
        return dict(cat.namespaces())


def register(root: typer.Typer) -> None:
    group = typer.Typer(help="Keys and the tenants file of `serve openai|anthropic|mcp --tenants`.",
                        no_args_is_help=True)
    group.command("new-key")(new_key)
    group.command("hash-key")(hash_key)
    group.command("check")(check)
    root.add_typer(group, name="tenants")
