"""The root of the ``toolsift`` command tree.

Commands are plugged in through one registration pattern: a module exposes
``register(app: typer.Typer)`` and names itself in the ``toolsift.commands`` entry-point group
(pyproject.toml). The product's own command modules live in this package; ``toolsift bench``
comes from the benchmarks package the same way, so nothing here imports the benchmarks.

Heavy libraries (torch, sentence-transformers, faiss, fastapi, mcp, rich tables) are imported
inside the commands that need them, never at start-up: a fresh `toolsift route` is mostly
start-up (see `toolsift bench cold-route`).

Conventions (docs/cli.md, "Output and exit codes"): a usage mistake prints click's three plain
lines (Usage / Try '... --help' / Error) and exits 2; toolsift's own errors print one
``error: ...`` line and exit 2; a checked call that is defective makes `check` / `audit` exit 1.
"""
from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import Optional

import typer

from apidb.errors import ToolsiftError

from .output import INTERRUPTED, USAGE

GROUP = "toolsift.commands"
# The order commands are listed in `toolsift --help`: the main flow first.
ORDER = ("catalog", "index", "route", "check", "audit", "serve", "tune", "cache", "doctor", "bench", "demo")

# rich_markup_mode=None: click's own plain help and error text. Typer's rich boxes turned a
# one-word mistake into a 6-line box (issue 14); people and scripts both expect click's
# "Usage: ... / Try 'toolsift X --help' for help. / Error: ..." and exit code 2.
app = typer.Typer(name="toolsift", no_args_is_help=True, add_completion=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="Route the few relevant tools into each request, and catch hallucinated calls.")


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"toolsift {version('toolsift')}")
        except PackageNotFoundError:  # running from a source tree that was never installed
            typer.echo("toolsift (not installed)")
        raise typer.Exit()


@app.callback()
def _root(version: Optional[bool] = typer.Option(None, "--version", is_eager=True, callback=_version,
                                                 help="Print the version and exit.")) -> None:
    """Route the few relevant tools into each request, and catch hallucinated calls.

    Exit codes: 0 done; 1 a checked call is defective (check, audit; see --fail-on);
    2 a usage or input error (one line on stderr); 130 interrupted.
    """


# Commands registered by another command's entry point (check registers audit; route registers index).
_REGISTERED_BY = {"audit": "check", "index": "route"}


def _only() -> str | None:
    """The one entry point a console-script run needs, when argv names it: a fresh `toolsift route`
    then imports only route's module, not serve's, check's or the benchmarks' (~0.2 s of start-up,
    `toolsift bench cold-route`). Anything else (help, completion, an unknown command, the app
    imported as a library or by tests) registers every command."""
    import os

    if os.path.basename(sys.argv[0] if sys.argv else "") != "toolsift" or os.environ.get("_TOOLSIFT_COMPLETE"):
        return None
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        return None
    return _REGISTERED_BY.get(args[0], args[0])


def _register() -> None:
    found = sorted(entry_points(group=GROUP), key=lambda ep: (ORDER.index(ep.name) if ep.name in ORDER
                                                               else len(ORDER), ep.name))
    only = _only()
    if only is not None and any(ep.name == only for ep in found):
        found = [ep for ep in found if ep.name == only]
    for ep in found:
        ep.load()(app)


_register()


def main() -> None:
    """The console script: click's own usage errors (exit 2), toolsift's errors as one line (exit 2)."""
    from .help import polish

    command = typer.main.get_command(app)
    polish(command)  # placeholders named for their meaning, an example per command
    try:
        command(prog_name="toolsift")
    except ToolsiftError as exc:
        from apidb.display import (
            printable,  # messages quote catalog data: escape control characters
        )

        sys.stdout.flush()
        from apidb.urls import redact_text  # whatever a message quotes, never a URL's credentials

        typer.echo(f"error: {printable(redact_text(exc))}", err=True)
        sys.exit(USAGE)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(INTERRUPTED)
    except BrokenPipeError:  # `toolsift route ... | head -1`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
