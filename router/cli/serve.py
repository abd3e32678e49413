"""`toolsift serve ...`: the long-running ways in (OpenAI-compatible proxy, MCP gateway).

The servers' heavy imports (fastapi, uvicorn, mcp) happen only when a command runs.
"""
from __future__ import annotations

import typer

from . import serve_mcp, serve_openai

def register(root: typer.Typer) -> None:
    group = typer.Typer(help="Run toolsift as a service (OpenAI- and Anthropic-compatible proxy, MCP gateway).",
                        no_args_is_help=True)
    group.command("openai")(serve_openai.openai_command)
    group.command("anthropic")(serve_openai.anthropic_command)
    group.command("mcp")(serve_mcp.serve_mcp)
    root.add_typer(group, name="serve")
