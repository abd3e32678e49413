"""Options that several commands share, declared once so that they mean the same everywhere.

Each is an ``Annotated`` type: a command writes ``db: Db = None`` and gets the same flag, help
and environment variable as every other command that takes a catalog.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from apidb.location import catalog_location, default_db_path

# a string, not a Path: Path("postgresql://u@h/db") would fold the URL's "//" into "/"
Db = Annotated[Optional[str], typer.Option(
    "--db", show_default=False,
    help="The catalog: a SQLite file, or a PostgreSQL database as postgresql://user@host:port/dbname. "
         "Default: $TOOLSIFT_DB, else ~/.local/share/toolsift/catalog.db.")]

Json = Annotated[bool, typer.Option("--json", help="Print JSON (one object, or one per line) instead of text.")]

def known_model(value: Optional[str]) -> Optional[str]:
    """--model names a bundled model or a folder; anything else is a usage error with the nearest
    name (`route --model nope` used to suggest `toolsift index --model nope`, which failed too)."""
    if value is None or Path(value).is_dir():
        return value
    from router.encoders.model import BASE_MODEL, BUNDLED, DEFAULT_MODEL

    if value in BUNDLED:
        return value
    import difflib

    from .errors import CliError

    near = difflib.get_close_matches(value, BUNDLED, n=1, cutoff=0.6)
    raise CliError(f"unknown embedding model {value!r}: neither a bundled model ({DEFAULT_MODEL}, {BASE_MODEL}) "
                   "nor a folder" + (f"; did you mean {near[0]}?" if near else " written by `toolsift tune`"))


Model = Annotated[Optional[str], typer.Option(
    "--model", show_default=False, callback=known_model,
    help="Embedding model: toolsift-general-minilm (bundled: MiniLM tuned for tool retrieval), "
         "all-MiniLM-L6-v2 (bundled, untuned), or a folder written by `toolsift tune` "
         "(default: the model the catalog was indexed with, else toolsift-general-minilm).")]

# `serve mcp` keeps its upstreams' tools in a catalog only when asked (they are live, not curated)
GatewayStore = Annotated[Optional[str], typer.Option(
    "--db", show_default=False,
    help="Catalog (a file, or a postgresql:// URL) to keep the upstream tools in (one namespace per server, synced by content hash). "
         "Default: in memory.")]

# `demo` builds its own catalog: never the user's $TOOLSIFT_DB
DemoDb = Annotated[Path, typer.Option("--db", help="Where to build the demo catalog.")]

IndexDir = Annotated[Optional[Path], typer.Option(
    "--index-dir", show_default=False, help="Index folder (default: <catalog>.index next to the catalog).")]


def catalog_path(db: Optional[str | Path]) -> Path | str:
    """The catalog a command works on: ``--db``, else ``$TOOLSIFT_DB``, else the per-user default.
    A file is a Path; a ``postgresql://`` URL stays a string."""
    return catalog_location(db) if db else default_db_path()
