"""The root of the ``toolsift`` command tree.

Commands are plugged in through one registration pattern: a module exposes
``register(app: typer.Typer)`` and names itself in the ``toolsift.commands`` entry-point group
(pyproject.toml). The product's own command modules live in this package; ``toolsift bench``
comes from the benchmarks package the same way, so nothing here imports the benchmarks.

Heavy libraries (torch, sentence-transformers, faiss, fastapi, mcp) are imported inside the
commands that need them, never at start-up.
"""
from __future__ import annotations

import sys
from importlib.metadata import entry_points

import typer

from apidb.errors import ToolsiftError

GROUP = "toolsift.commands"
# The order commands are listed in `toolsift --help`: the main flow first.
ORDER = ("catalog", "index", "route", "check", "audit", "serve", "tune", "bench", "demo")

app = typer.Typer(name="toolsift", no_args_is_help=True, add_completion=False,
                  help="Route the few relevant tools into each request, and catch hallucinated calls.")


def _register() -> None:
    found = sorted(entry_points(group=GROUP), key=lambda ep: (ORDER.index(ep.name) if ep.name in ORDER
                                                               else len(ORDER), ep.name))
    for ep in found:
        ep.load()(app)


_register()


def main() -> None:
    """The console script: click's own usage errors (exit 2), toolsift's errors as one line (exit 2)."""
    try:
        app(prog_name="toolsift")
    except ToolsiftError as exc:
        from apidb.display import printable  # messages quote catalog data: escape control characters

        typer.echo(f"error: {printable(exc)}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
