"""`toolsift serve openai`: the OpenAI-compatible proxy (see router/middleware/proxy.py)."""
from __future__ import annotations

from typing import Optional

import typer

from .errors import CliError
from .options import Db, Model


def openai_command(
    upstream: str = typer.Option(..., "--upstream", help="Upstream base URL, e.g. https://api.openai.com/v1"),
    db: Db = None,
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
    model: Model = None,
) -> None:
    """Run an OpenAI-compatible proxy that routes tools and checks tool calls."""
    from apidb.catalog import default_db_path

    from router.middleware.checks import PROXY_MODES, check_mode
    from router.middleware.proxy import create_app, serve

    check_mode(on_hallucination, PROXY_MODES, "--on-hallucination")
    if max_body_mb <= 0:
        raise CliError(f"--max-body-mb must be positive, got {max_body_mb:g}")
    if db is None and default_db_path().exists():
        db = default_db_path()
    if db is not None and not db.exists():
        raise CliError(f"{db}: no such catalog (build one with `toolsift catalog add`)")
    router = None
    if db is not None:
        from router.engine import Router

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
        from router.dense import DEFAULT_MODEL, load_model

        load_model(model or DEFAULT_MODEL)
