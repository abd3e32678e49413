"""`toolsift serve openai`: the OpenAI-compatible proxy (see router/proxy.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def openai_command(
    upstream: str = typer.Option(..., "--upstream", help="Upstream base URL, e.g. https://api.openai.com/v1"),
    db: Optional[Path] = typer.Option(None, "--db", help="Catalog to inject tools from when a request has none "
                                      "(default: $TOOLSIFT_DB if set)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (default: loopback only)."),
    port: int = typer.Option(8808, "--port"),
    k: int = typer.Option(5, "-k", "--k", help="Tools kept per request (pinned and tool_choice tools come on top)."),
    on_hallucination: str = typer.Option("annotate", "--on-hallucination",
                                         help="annotate (verdict headers), repair (ask the model again), "
                                              "or reject (answer 422)."),
    max_repairs: int = typer.Option(2, "--max-repairs", help="Repair turns at most, with --on-hallucination repair."),
    pinned: list[str] = typer.Option([], "--pin", help="Tool name always offered (repeatable)."),
    token_budget: Optional[int] = typer.Option(None, "--token-budget", help="Max tokens of tool schemas per request."),
    method: str = typer.Option("hybrid", "--method", help="hybrid, bm25 or dense."),
    api_key: Optional[str] = typer.Option(None, "--api-key", envvar="TOOLSIFT_PROXY_KEY",
                                          help="Require this key from clients (Authorization: Bearer or X-Toolsift-Key)."),
    log_content: bool = typer.Option(False, "--log-content", help="Also log messages and answers."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds to wait for the upstream (then 504)."),
    max_body_mb: float = typer.Option(64.0, "--max-body-mb", help="Refuse larger request bodies with 413 "
                                      "(a 2,000-tool request is ~1.2 MB)."),
    model: Optional[str] = typer.Option(None, "--model", help="Embedding model: the bundled id or a folder from "
                                        "`toolsift tune` (default: the one the catalog was indexed with)."),
) -> None:
    """Run an OpenAI-compatible proxy that routes tools and checks tool calls."""
    from apidb.catalog import default_db_path
    from apidb.errors import ToolsiftError

    from .proxy import create_app, serve

    if on_hallucination not in ("annotate", "repair", "reject"):
        raise ToolsiftError(f"--on-hallucination must be annotate, repair or reject, got {on_hallucination!r}")
    if max_body_mb <= 0:
        raise ToolsiftError(f"--max-body-mb must be positive, got {max_body_mb:g}")
    if db is None and default_db_path().exists():
        db = default_db_path()
    if db is not None and not db.exists():
        raise ToolsiftError(f"{db}: no such catalog (build one with `toolsift catalog add`)")
    router = None
    if db is not None:
        from .router import Router

        router = Router.open(db, model=model)
        for warning in getattr(router, "warnings", []) or []:
            typer.echo(f"warning: {warning}", err=True)
    app = create_app(upstream, router, k=k, on_hallucination=on_hallucination, max_repairs=max_repairs,
                     api_key=api_key, log_content=log_content, timeout=timeout, pinned=tuple(pinned),
                     token_budget=token_budget, method=method, max_body_mb=max_body_mb, model=model)
    _warm_up(router, method, model)
    typer.echo(f"toolsift proxy on http://{host}:{port}/v1 -> {upstream} (k={k}, {on_hallucination})", err=True)
    serve(app, host=host, port=port)


def _warm_up(router, method: str, model: str | None = None) -> None:
    """Load the index / embedding model now, so the first client request is not the slow one."""
    if router is not None:
        router.select("warm up", k=1, method=method)
    if method != "bm25" and (router is None or model):
        from .dense import DEFAULT_MODEL, load_model

        load_model(model or DEFAULT_MODEL)


def register(serve_app: typer.Typer) -> None:
    serve_app.command("openai")(openai_command)
