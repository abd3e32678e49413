"""The proxy's FastAPI app (`toolsift serve openai` / `serve anthropic`): the routed endpoints of the
three APIs (router/middleware/proxy.py handles them), ``/healthz``, ``/metrics``, and every other
path forwarded unchanged."""
# no `from __future__ import annotations`: FastAPI must see the real `Request` class in the
# handlers defined inside create_app (fastapi itself is imported lazily there).

import os
from contextlib import asynccontextmanager
from typing import Any, Callable, Optional

from .checks import CHAT, Api
from .messages import MESSAGES
from .metrics import PROMETHEUS_TEXT
from .proxy import PATHS, Proxy
from .request import RequestRouter, catalog_health
from .responses import RESPONSES
from .server import warm_up_request_path

__all__ = ["create_app"]


def create_app(upstream: str, router: Any = None, *, k: int = 5, on_hallucination: str = "annotate",
               max_repairs: int = 2, api_key: Optional[str] = None, log_content: bool = False, timeout: float = 60.0,
               pinned: tuple[str, ...] = (), token_budget: Optional[int] = None, method: str = "hybrid",
               request_router: Optional[RequestRouter] = None, max_body_mb: float = 64.0,
               model: Optional[str] = None, inject: bool = False, max_request_tools: Optional[int] = None,
               loader: Optional[Callable[[], RequestRouter]] = None, tenants: Any = None, usage_log: Any = None,
               tool_search: bool = False, body_timeout: float = 30.0):
    """The FastAPI app. ``router``: a `router.Router`, a catalog path, or None. ``inject``: add
    catalog tools to requests that bring none (off by default). Request bodies over ``max_body_mb``
    are refused with 413. ``model``: the embedding model for tool lists that come with requests
    (default: the catalog's, else MiniLM). ``loader``: build the request router in a background
    thread once the server listens (``/healthz`` says ``starting`` until then; requests wait).
    ``tenants``: a `router.tenancy.tenants.Tenants`; each request's key then decides the catalog
    namespaces it is routed with (router/tenancy/gate.py), and a missing or wrong key is 401.
    ``tool_search``: offer the model a search over the tools routing left out (router/middleware/search.py)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, PlainTextResponse

    if isinstance(router, (str, os.PathLike)):
        from router.ranking.engine import Router

        router = Router.open(router)
    extra = {"max_request_tools": max_request_tools} if max_request_tools else {}
    if loader is None:
        rr = request_router or RequestRouter(router, k=k, pinned=pinned, token_budget=token_budget, method=method,
                                             model=model, inject=inject, tool_search=tool_search, **extra)
    else:
        rr = None
    proxy = Proxy(upstream, rr, on_hallucination=on_hallucination, max_repairs=max_repairs, api_key=api_key,
                  log_content=log_content, timeout=timeout, max_body_bytes=int(max_body_mb * 2**20), loader=loader,
                  k=k, tenants=tenants, usage_log=usage_log, body_timeout=body_timeout)

    @asynccontextmanager
    async def lifespan(app):
        from starlette.concurrency import run_in_threadpool

        proxy.client  # noqa: B018 - the upstream client (its TLS context), the worker threads and the
        await run_in_threadpool(warm_up_request_path)  # modules are made now, not on the first request
        proxy.start_loading()
        yield
        if proxy._client is not None:
            await proxy._client.aclose()

    app = FastAPI(title="toolsift proxy", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.proxy = proxy

    @app.get("/healthz")
    async def healthz(request: Request):
        # no key set: anyone who reaches the proxy may use it, so its settings are no secret (the
        # upstream only without credentials); with a key, unauthenticated callers see the status only
        live = catalog_health(proxy.rr.router if proxy.rr is not None else None)
        state = "degraded" if proxy.state == "ok" and live and live["status"] != "ok" else proxy.state
        body: dict[str, Any] = {"status": state}
        if not proxy.gate.closed or proxy.authorized(request):
            body.update(upstream=proxy.upstream, k=proxy.k, on_hallucination=proxy.mode,
                        catalog=bool(proxy.rr is not None and proxy.rr.router is not None))
            if live:
                body["catalog_sync"] = _seen_by(proxy, request, live)
        # degraded still routes (over the last loaded catalog): 200, so a balancer keeps sending
        return JSONResponse(body, status_code=200 if state in ("ok", "degraded") else 503)

    @app.get("/metrics")
    async def metrics(request: Request):
        denied, _ = proxy.auth(request)
        if denied is not None:
            return denied
        caches = {**proxy.rr.cache_stats(), **proxy.memory.stats()} if proxy.rr else {}
        if request.query_params.get("format") == "json":
            return JSONResponse({**proxy.metrics.snapshot(), "caches": caches})
        return PlainTextResponse(proxy.metrics.prometheus(caches), media_type=PROMETHEUS_TEXT)

    def routed(api: Api):
        async def handler(request: Request):
            return await proxy.handle(request, api)
        return handler

    for api in (CHAT, RESPONSES, MESSAGES):
        for prefix in ("/v1", ""):  # base URLs with or without /v1 both work
            app.add_api_route(prefix + PATHS[api], routed(api), methods=["POST"], include_in_schema=False)

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def forward(request: Request, path: str):
        return await proxy.forward(request)

    return app


def _seen_by(proxy: "Proxy", request: Any, live: dict) -> dict:
    """The catalog's sync state as one client may see it: a tenant's count is of its own tools
    (the whole catalog's size is the other tenants' business); an error never shows a password."""
    from apidb.urls import redact_text

    live = dict(live)
    if "error" in live:
        live["error"] = redact_text(live["error"])
    tenant = getattr(request.state, "tenant", None)
    if tenant is not None and tenant.namespaces is not None and proxy.rr is not None:
        view = proxy.gate.request_router(proxy.rr, tenant, None)
        live["records"] = len(view.router) if view is not proxy.rr else live.get("records")
        live.pop("passages_embedded", None)
    return live
