"""`toolsift serve mcp`: run the MCP gateway (stdio or streamable HTTP)."""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Literal, Optional

import typer

from .options import GatewayStore, Model


def serve_mcp(
    config: Path = typer.Option(..., "--config", "-c", help="JSON file in the mcpServers shape: "
                                '{"mcpServers": {NAME: {"command", "args", "env"} | {"url"}}}.'),
    transport: Literal["stdio", "http"] = typer.Option("stdio", "--transport", "-t", help="How clients reach the gateway: stdio | http."),
    db: GatewayStore = None,
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP transport: interface to bind."),
    port: int = typer.Option(8765, "--port", help="HTTP transport: port (path /mcp)."),
    header_timeout: float = typer.Option(10.0, "--header-timeout", help="HTTP transport: seconds a client "
                                         "connection has to send each request's line and headers (then it is "
                                         "closed)."),
    pin: list[str] = typer.Option([], "--pin", help="Expose this tool directly (server__tool or a unique bare "
                                  "name); repeatable."),
    method: Optional[Literal["hybrid", "bm25", "dense"]] = typer.Option(None, "--method", help="Ranking for search_tools: hybrid | bm25 | dense "
                                         "(default: the router's default)."),
    k: int = typer.Option(5, "-k", "--k", help="Tools search_tools returns when the client gives no k."),
    adaptive_k: bool = typer.Option(False, "--adaptive-k", help="search_tools picks how many tools from the "
                                    "scores, up to the client's k (else --k) (docs/routing.md)."),
    on_abstain: Literal["empty", "flag"] = typer.Option("empty", "--on-abstain", help="When no tool fits a search: empty (answer no "
                                   "tools, flagged) or flag (the ranked tools, flagged)."),
    usage_log: Optional[Path] = typer.Option(None, "--usage-log", help="Record each valid call to a searched tool "
                                             "with its query's hash, for `toolsift tune --from-log` (off by default)."),
    usage_log_content: bool = typer.Option(False, "--usage-log-content", help="With --usage-log: also record the "
                                           "search query text (needed to train on the log)."),
    start_timeout: float = typer.Option(30.0, "--start-timeout", help="Seconds an upstream may take to start."),
    ready_timeout: float = typer.Option(10.0, "--ready-timeout", help="Seconds the gateway waits for its upstreams "
                                        "before it serves those that answered; a later one joins when it answers."),
    inherit_env: bool = typer.Option(False, "--inherit-env", help="Start every stdio upstream with this process's "
                                     "whole environment (default: PATH, HOME and a few more, plus its 'env'; "
                                     "per server: \"inheritEnv\": true)."),
    tenants: Optional[Path] = typer.Option(None, "--tenants", envvar="TOOLSIFT_TENANTS", metavar="FILE.toml",
                                           help="HTTP transport: tenants file; each client key (X-Toolsift-Key or "
                                                "Authorization: Bearer) sees only its servers; else 401."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log upstream events to stderr."),
    model: Model = None,
) -> None:
    """Serve many MCP servers behind search_tools and call_tool (plus pinned tools)."""
    from dataclasses import replace

    import anyio

    from router.gateway import Gateway, GatewayError, listen_socket, load_config, serve_http, serve_stdio

    if transport not in ("stdio", "http"):
        raise GatewayError(f"--transport must be stdio or http, not {transport!r}")
    if not (math.isfinite(header_timeout) and header_timeout > 0):  # NaN compares false with everything
        raise GatewayError(f"--header-timeout must be a positive number of seconds, got {header_timeout:g}")
    if method is not None and method not in ("hybrid", "bm25", "dense"):
        raise GatewayError(f"--method must be hybrid, bm25 or dense, not {method!r}")
    if model is not None:
        from router.encoders.dense import check_model

        check_model(model)  # an unknown model fails now, not at the first search
    specs = load_config(config)
    tenant_table = None
    if tenants is not None:
        from router.tenancy.tenants import Tenants

        if transport != "http":
            raise GatewayError("--tenants needs --transport http: a stdio gateway has one client, the process "
                               "that started it")
        tenant_table = Tenants.load(tenants)
        for name in sorted(tenant_table.namespaces() - {s.name for s in specs}):
            typer.echo(f"warning: {tenants}: namespace {name!r} is not a server of {config}", err=True)
    if inherit_env:
        specs = [replace(s, inherit_env=True) for s in specs]
    # The port first: a busy one is a one-line error before any upstream or model starts.
    sock = listen_socket(host, port) if transport == "http" else None
    # Logs go to stderr: on the stdio transport stdout carries the protocol.
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="toolsift-mcp: %(message)s")
    # faiss's loader says at INFO which CPU build it tries and why the others failed ("Could not load
    # library with AVX512 support"): noise that reads like an error, and not the gateway's doing
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    log = None
    if usage_log is not None:
        from router.training.usage_log import UsageLog

        log = UsageLog(usage_log, content=usage_log_content)
    elif usage_log_content:
        raise GatewayError("--usage-log-content needs --usage-log FILE")
    gateway = Gateway(specs, db_path=db, pinned=pin, method=method, k=k, start_timeout=start_timeout,
                      ready_timeout=ready_timeout, model=model, tenants=tenant_table, adaptive=adaptive_k,
                      on_abstain=on_abstain, usage_log=log)
    if sock is None:
        anyio.run(serve_stdio, gateway)
    else:
        door = f", {len(tenant_table)} tenants" if tenant_table is not None else ""
        typer.echo(f"toolsift MCP gateway on http://{host}:{port}/mcp ({len(specs)} upstream servers{door})", err=True)
        anyio.run(serve_http, gateway, host, port, sock, header_timeout)
