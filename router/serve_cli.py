"""`toolsift serve ...`: the long-running ways in (OpenAI-compatible proxy, MCP gateway).

Each server module registers its own command on the `serve` group; the servers'
heavy imports (fastapi, uvicorn, mcp) happen only when a command runs.
"""
from __future__ import annotations

import importlib

import typer

serve = typer.Typer(help="Run toolsift as a service (OpenAI-compatible proxy, MCP gateway).", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    for module in ("router.proxy_cli", "router.mcp_cli"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        mod.register(serve)
    root.add_typer(serve, name="serve")
