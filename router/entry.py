"""The `toolsift` command: each package registers its own sub-commands here.

Heavy libraries (torch, sentence-transformers, faiss, fastapi, mcp) are imported
inside the commands that need them, never at start-up.
"""
from __future__ import annotations

import sys

import typer

from apidb.errors import ToolsiftError

app = typer.Typer(name="toolsift", no_args_is_help=True, add_completion=False,
                  help="Route the few relevant tools into each request, and catch hallucinated calls.")


def _register() -> None:
    import importlib

    for module in ("apidb.cli", "router.cli", "router.tune_cli", "checker.cli", "router.serve_cli", "benchmarks.cli", "router.demo"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:  # that package's commands have not landed yet
                continue
            raise
        mod.register(app)


_register()


def main() -> None:
    try:
        app(standalone_mode=False)
    except ToolsiftError as exc:
        from apidb.display import printable  # messages quote catalog data: escape control characters

        typer.echo(f"error: {printable(exc)}", err=True)
        sys.exit(2)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Exit):
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
