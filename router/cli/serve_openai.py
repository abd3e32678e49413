"""`toolsift serve openai` and `toolsift serve anthropic`: the proxy (router/middleware/proxy.py).

Both run the same server, which routes Chat Completions, Responses and Messages requests; they
differ in the default upstream and in the line that says how to point a client at it.

Start-up order (issue 13): cheap checks, then the port is bound (a busy port is one line, exit 2,
before anything heavy), then the server answers while the catalog and the model load in a
thread (``/healthz``: ``starting``, then ``ok``); one line says when it is ready.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .config_file import config_option
from .errors import CliError
from .options import Db, Model
from .output import stream_is_terminal

ANTHROPIC_UPSTREAM = "https://api.anthropic.com"
TOOL_SEARCH_DEFAULT = "on"  # measured: docs/middleware.md, "A search the model can call"


def _options(upstream_default: Optional[str]):
    upstream_help = "Upstream base URL (with or without /v1), e.g. " + (
        "https://api.anthropic.com" if upstream_default else "https://api.openai.com/v1")

    def command(
        upstream: str = typer.Option(upstream_default if upstream_default else ..., "--upstream", help=upstream_help),
        db: Db = None,
        host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (default: loopback only)."),
        port: int = typer.Option(8808, "--port"),
        k: int = typer.Option(5, "-k", "--k", help="Tools kept per request (the tools always kept come on top)."),
        on_hallucination: str = typer.Option("annotate", "--on-hallucination",
                                             help="annotate (verdict headers), repair (ask the model again), "
                                                  "or reject (answer 422)."),
        max_repairs: int = typer.Option(2, "--max-repairs", help="Repair turns at most, with --on-hallucination repair."),
        pinned: list[str] = typer.Option([], "--pin", help="Tool name always offered (repeatable)."),
        token_budget: Optional[int] = typer.Option(None, "--token-budget", help="Max tokens of tool schemas per request."),
        method: str = typer.Option("hybrid", "--method", help="hybrid, bm25 or dense."),
        api_key: Optional[str] = typer.Option(None, "--api-key", envvar="TOOLSIFT_PROXY_KEY",
                                              help="Require this key from clients (Authorization: Bearer, "
                                                   "X-Toolsift-Key or x-api-key)."),
        tenants: Optional[Path] = typer.Option(None, "--tenants", envvar="TOOLSIFT_TENANTS", metavar="FILE.toml",
                                               help="Tenants file: each client key (X-Toolsift-Key) sees only its "
                                                    "namespaces of the catalog; a missing or wrong key is 401."),
        log_content: bool = typer.Option(False, "--log-content", help="Also log messages and answers."),
        timeout: float = typer.Option(60.0, "--timeout", help="Seconds to wait for the upstream (then 504)."),
        header_timeout: float = typer.Option(10.0, "--header-timeout", help="Seconds a client connection has "
                                             "to send each request's line and headers (then it is closed)."),
        max_body_mb: float = typer.Option(64.0, "--max-body-mb", help="Refuse larger request bodies with 413 "
                                          "(a 2,000-tool request is ~1.2 MB)."),
        max_request_tools: int = typer.Option(20_000, "--max-request-tools",
                                              help="Refuse requests that bring more tools with 400 (checked "
                                                   "before any per-tool work)."),
        inject_catalog: bool = typer.Option(False, "--inject-catalog",
                                            help="Add the top-k catalog tools to requests that bring none "
                                                 "(off: a request's tools are only ever cut, never added)."),
        adaptive_k: bool = typer.Option(False, "--adaptive-k", help="Choose how many tools to keep from the scores, "
                                        "up to -k (docs/routing.md)."),
        on_abstain: str = typer.Option("flag", "--on-abstain", help="When no tool fits: flag (x-toolsift-abstain "
                                       "header, tools kept) or strip (send only the tools that must be kept)."),
        usage_log: Optional[Path] = typer.Option(None, "--usage-log", help="Record each valid call to an offered "
                                                 "tool, with the routing query's hash, for `toolsift tune "
                                                 "--from-log` (off by default)."),
        usage_log_content: bool = typer.Option(False, "--usage-log-content", help="With --usage-log: also record "
                                               "the routing query text (needed to train on the log)."),
        tool_search: str = typer.Option(TOOL_SEARCH_DEFAULT, "--tool-search",
                                        help="on: when routing leaves tools out, offer the model a search over them "
                                             "(toolsift answers it; docs/middleware.md); off: a cut is final."),
        model: Model = None,
        _config: Optional[Path] = config_option("anthropic" if upstream_default else "openai"),
    ) -> None:
        run(upstream=upstream, db=db, host=host, port=port, k=k, on_hallucination=on_hallucination,
            max_repairs=max_repairs, pinned=pinned, token_budget=token_budget, method=method, api_key=api_key,
            log_content=log_content, timeout=timeout, max_body_mb=max_body_mb, max_request_tools=max_request_tools,
            inject_catalog=inject_catalog, model=model, anthropic=bool(upstream_default), tenants=tenants,
            adaptive_k=adaptive_k, on_abstain=on_abstain, usage_log=usage_log, usage_log_content=usage_log_content,
            tool_search=tool_search, header_timeout=header_timeout)

    return command


def run(*, upstream: str, db, host: str, port: int, k: int, on_hallucination: str, max_repairs: int,
        pinned: list[str], token_budget: Optional[int], method: str, api_key: Optional[str], log_content: bool,
        timeout: float, max_body_mb: float, max_request_tools: int, inject_catalog: bool, model: Optional[str],
        anthropic: bool, tenants: Optional[Path] = None, adaptive_k: bool = False, on_abstain: str = "flag",
        usage_log: Optional[Path] = None, usage_log_content: bool = False,
        tool_search: str = TOOL_SEARCH_DEFAULT, header_timeout: float = 10.0) -> None:
    from apidb.location import catalog_exists, catalog_location, default_db_path
    from router.middleware.checks import PROXY_MODES, check_mode
    from router.middleware.app import create_app
    from router.middleware.server import bind, serve
    from router.middleware.upstream import Upstream

    # cheap checks first: every mistake is one line before the port is even taken
    check_mode(on_hallucination, PROXY_MODES, "--on-hallucination")
    shown = Upstream(upstream).display  # also rejects a URL that is not http(s); never shows credentials
    import math

    # NaN compares false with everything and inf overflowed int(): both are refused by name
    if not (math.isfinite(max_body_mb) and max_body_mb > 0):
        raise CliError(f"--max-body-mb must be positive, got {max_body_mb:g}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise CliError(f"--timeout must be a positive number of seconds, got {timeout:g}")
    if not (math.isfinite(header_timeout) and header_timeout > 0):
        raise CliError(f"--header-timeout must be a positive number of seconds, got {header_timeout:g}")
    if not 1 <= k <= 128:  # the most tools the APIs accept in one request
        raise CliError(f"-k must be from 1 to 128, got {k}")
    if token_budget is not None and token_budget < 1:
        raise CliError(f"--token-budget must be at least 1, got {token_budget}")
    if max_repairs < 0:
        raise CliError(f"--max-repairs must be 0 or more, got {max_repairs}")
    if max_request_tools < 1:
        raise CliError(f"--max-request-tools must be at least 1, got {max_request_tools}")
    if method not in ("hybrid", "bm25", "dense"):
        raise CliError(f"--method must be hybrid, bm25 or dense, got {method!r}")
    from router.middleware.request import ON_ABSTAIN

    if on_abstain not in ON_ABSTAIN:
        raise CliError(f"--on-abstain must be flag or strip, got {on_abstain!r}")
    if tool_search not in ("on", "off"):
        raise CliError(f"--tool-search must be on or off, got {tool_search!r}")
    if usage_log_content and usage_log is None:
        raise CliError("--usage-log-content needs --usage-log FILE")
    log = None
    if usage_log is not None:
        from router.training.usage_log import UsageLog

        log = UsageLog(usage_log, content=usage_log_content)  # an unwritable path is one line now
    if db is None and catalog_exists(default_db_path()):
        db = default_db_path()
    db = catalog_location(db) if db is not None else None
    if db is not None and not catalog_exists(db):
        raise CliError(f"{db}: no such catalog (build one with `toolsift catalog add`)")
    if db is not None:
        _reachable(db)  # an unreachable server is one line now, before the port is taken
    if model:
        from router.encoders.dense import check_model

        check_model(model)  # an unknown model is one line now, not after the port is taken
    if tenants is not None and api_key:
        raise CliError("--tenants and --api-key cannot be combined: give the key that sees everything its own "
                       "tenant with namespaces = [\"*\"]")
    tenant_table = _load_tenants(tenants)

    sock = bind(host, port)  # before anything heavy: a busy port costs nothing
    address = f"http://{host}:{port}"
    typer.echo(f"toolsift proxy listening on {address}, loading the router ...", err=True)

    def load():
        from router.middleware.request import RequestRouter

        router = None
        if db is not None:
            from router.ranking.engine import Router

            # watch: a change committed to the catalog (any machine) reaches this replica's routing
            router = Router.open(db, model=model, watch=True)
            for warning in getattr(router, "warnings", []) or []:
                typer.echo(f"warning: {warning}", err=True)
            _warn_missing_namespaces(tenant_table, router.namespaces())
        _warm_up(router, method, model)
        return RequestRouter(router, k=k, pinned=tuple(pinned), token_budget=token_budget, method=method,
                             model=model, inject=inject_catalog, max_request_tools=max_request_tools,
                             adaptive=adaptive_k, on_abstain=on_abstain, tool_search=tool_search == "on")

    app = create_app(upstream, k=k, on_hallucination=on_hallucination, max_repairs=max_repairs, api_key=api_key,
                     log_content=log_content, timeout=timeout, max_body_mb=max_body_mb, loader=load,
                     tenants=tenant_table, usage_log=log)
    proxy = app.state.proxy
    client = (f"ANTHROPIC_BASE_URL={address}" if anthropic else f"OPENAI_BASE_URL={address}/v1")
    door = f", {len(tenant_table)} tenants" if tenant_table is not None else ""
    proxy.on_ready = lambda: typer.echo(f"toolsift proxy on {address}/v1 -> {shown} (k={k}, {on_hallucination}"
                                        f"{door}); ready: {client}", err=True)
    # readable lines for a person at a terminal, JSON on a pipe or file (TOOLSIFT_FORCE_TERMINAL as elsewhere)
    serve(app, sock, header_timeout=header_timeout,  # a router that cannot load stops the server; serve() then
          readable=stream_is_terminal(err=True))     # raises it (one line, exit 2)


def _reachable(db) -> None:
    from apidb.catalog import Catalog

    with Catalog.open(db, readonly=True):
        pass


def _load_tenants(path: Optional[Path]):
    """The tenants file (router.tenancy.tenants), read before the port is bound: a mistake is one line."""
    if path is None:
        return None
    from router.tenancy.tenants import Tenants

    return Tenants.load(path)


def _warn_missing_namespaces(tenants, namespaces) -> None:
    """A tenant's namespace that the catalog lacks is likely a typo (or not added yet): say so."""
    if tenants is None:
        return
    known = set(namespaces)
    for tenant in tenants.tenants:
        for name in sorted((tenant.namespaces or set()) - known):
            typer.echo(f"warning: {tenants.source}: tenant {tenant.name!r}: namespace {name!r} is not in the catalog",
                       err=True)


def _warm_up(router, method: str, model: str | None = None) -> None:
    """Load the index / embedding model now, so the first client request is not the slow one."""
    if router is not None:
        router.select("warm up", k=1, method=method)
    if method != "bm25" and (router is None or model):
        from router.encoders.dense import DEFAULT_MODEL, Embedder

        Embedder(model or DEFAULT_MODEL).encode_query("warm up")  # the encoder routers share (per process)


openai_command = _options(None)
openai_command.__doc__ = "Run an OpenAI-compatible proxy that routes tools and checks tool calls."
anthropic_command = _options(ANTHROPIC_UPSTREAM)
anthropic_command.__doc__ = ("Run the proxy for Claude's Messages API (x-api-key and anthropic-version "
                             "pass through); the same server also routes OpenAI requests.")
