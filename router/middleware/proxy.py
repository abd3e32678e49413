"""OpenAI-compatible HTTP proxy: route tools into each request, check the calls that come back.

``POST /v1/chat/completions`` is routed, forwarded to the upstream and checked; every other
path (``GET /v1/models`` ...) is forwarded unchanged. Routing decisions and verdicts come back
in ``x-toolsift-selected`` / ``x-toolsift-verdicts`` (JSON, at most 4 KiB each) and in one JSON
log line per request on the ``toolsift.proxy`` logger (no message contents unless
``log_content``; never any header, so never the Authorization key).

Streams (``"stream": true``) are relayed line by line as they arrive. Headers are gone by the
time the calls are complete, so a streamed answer's verdicts are sent as an SSE comment line
``: toolsift-verdicts [...]`` just before ``data: [DONE]`` (clients ignore comments) and logged;
streamed answers are annotated, never repaired or rejected.

Errors: upstream status + body are passed through; upstream timeout → 504; upstream unreachable
→ 502; a non-JSON upstream answer → 502; a malformed request → 400; a missing/wrong proxy key →
401; anything unexpected → 500 with a JSON error (the process keeps serving).
"""
# no `from __future__ import annotations`: FastAPI must see the real `Request` class in the
# handlers defined inside create_app (fastapi itself is imported lazily there).

import gc
import hmac
import json
import logging
import os
import time
from contextlib import asynccontextmanager
from typing import Any

from apidb.errors import ToolsiftError

from .checks import PROXY_MODES, Exchange, StreamAssembler, check_answer, check_mode, verdicts_header
from .metrics import Metrics
from .errors import RequestError, WireError
from .request import RequestRouter
from .request_body import read_request

log = logging.getLogger("toolsift.proxy")
_HOP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade",
        "proxy-authorization", "proxy-connection", "accept-encoding", "x-toolsift-key"}
_RESP_DROP = {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}


def _error(status: int, message: str, kind: str = "toolsift_error", **extra: Any):
    from fastapi.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "code": kind, **extra}}, status_code=status)


class Proxy:
    """The proxy's state and handlers; `create_app` wires them into FastAPI."""

    def __init__(self, upstream: str, rr: RequestRouter, *, on_hallucination: str = "annotate", max_repairs: int = 2,
                 api_key: str | None = None, log_content: bool = False, timeout: float = 60.0) -> None:
        check_mode(on_hallucination, PROXY_MODES, "--on-hallucination")
        if not upstream.startswith(("http://", "https://")):
            raise RequestError(f"--upstream must be an http(s) URL, got {upstream!r}")
        self.upstream, self.rr, self.mode, self.max_repairs = upstream.rstrip("/"), rr, on_hallucination, max_repairs
        self.api_key, self.log_content, self.timeout = api_key, log_content, timeout
        self.metrics = Metrics()
        self._client = None

    @property
    def client(self):
        import httpx

        if self._client is None:  # created in the server's event loop
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                                             limits=limits)
        return self._client

    def target(self, path: str, query: str = "") -> str:
        rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
        return f"{self.upstream}{rest}" + (f"?{query}" if query else "")

    # -- auth and headers
    def auth(self, request) -> tuple[Any, dict[str, str]]:
        """(error response or None, headers to send upstream)."""
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        if not self.api_key:
            return None, headers
        given = request.headers.get("x-toolsift-key")
        bearer = request.headers.get("authorization", "")
        if given is None and bearer.lower().startswith("bearer "):
            given = bearer[7:].strip()
            headers.pop("authorization", None)  # it was the proxy's key: never send it upstream
            if os.environ.get("TOOLSIFT_UPSTREAM_API_KEY"):
                headers["authorization"] = f"Bearer {os.environ['TOOLSIFT_UPSTREAM_API_KEY']}"
        if given is None or not hmac.compare_digest(given.encode(), self.api_key.encode()):
            return _error(401, "missing or wrong toolsift proxy key (send it as 'Authorization: Bearer KEY' "
                          "or 'X-Toolsift-Key: KEY')", "invalid_api_key"), headers
        return None, headers

    def log_line(self, rec: dict) -> None:
        log.info(json.dumps(rec, ensure_ascii=False, default=str))

    def finish(self, rec: dict, t0: float, status: int, ex: Exchange | None) -> None:
        routed = ex.routed if ex else None
        verdicts = [c.verdict.verdict for c in ex.checks] if ex else []
        ms = (time.perf_counter() - t0) * 1000
        rec.update(status=status, ms=round(ms, 2), verdicts=verdicts, repairs=ex.repairs if ex else 0)
        own = None
        if ex is not None and ex.upstream_ms and not rec.get("stream"):
            own = ms - ex.upstream_ms - rec.get("body_ms", 0.0)
            rec.update(upstream_ms=round(ex.upstream_ms, 2), own_ms=round(own, 2))
        if routed:
            rec.update(tools_in=routed.tools_in, tools_out=routed.tools_out, injected=routed.injected,
                       selected=[s["name"] for s in routed.selected][:32])
        if self.log_content and ex is not None:
            rec.update(messages=ex.request.get("messages") if isinstance(ex.request, dict) else None,
                       answer=[c.get("message") for c in (ex.response or {}).get("choices") or []]
                       if isinstance(ex.response, dict) else None)
        self.metrics.record(status, ms, rec.get("tools_in", 0), rec.get("tools_out", 0), verdicts, rec["repairs"],
                            own if status == 200 else None)
        self.log_line(rec)

    def toolsift_headers(self, ex: Exchange, with_verdicts: bool = True) -> dict[str, str]:
        h = {"x-toolsift-selected": ex.routed.header()} if ex.routed else {}
        if with_verdicts:
            h["x-toolsift-verdicts"] = verdicts_header(ex.checks)
            h["x-toolsift-repairs"] = str(ex.repairs)
        return h

    # -- handlers
    async def chat(self, request):
        from starlette.concurrency import run_in_threadpool

        t0, rec, ex, status = time.perf_counter(), {"path": request.url.path, "method": "POST"}, None, 500
        try:
            denied, headers = self.auth(request)
            if denied is not None:
                status = 401
                return denied
            t_body = time.perf_counter()
            raw = await request.body()
            rec["body_ms"] = round((time.perf_counter() - t_body) * 1000, 2)  # the client's upload, not ours
            try:
                body = read_request(raw)
            except ValueError as exc:
                status = 400
                return _error(400, f"request body is not valid JSON: {exc}", "invalid_request_error")
            except WireError as exc:
                status = 400
                return _error(400, str(exc), "invalid_request_error")
            ex = Exchange(self.rr, body, self.mode, self.max_repairs)
            try:
                send = await run_in_threadpool(ex.start)
            except RequestError as exc:
                status = 400
                return _error(400, str(exc), "invalid_request_error")
            rec.update(model=body.get("model"), stream=bool(send.get("stream")))
            if send.get("stream"):
                resp = await self.stream(send, headers, ex, rec, t0)
                status = -1 if resp.status_code == 200 else resp.status_code  # a stream logs itself at its end
                return resp
            resp = await self.complete(send, headers, ex)
            status = resp.status_code
            return resp
        except ToolsiftError as exc:
            status = 500
            return _error(500, f"toolsift: {exc}")
        except Exception as exc:  # never take the server down; say what broke
            log.exception("toolsift proxy: unexpected error")
            status = 500
            return _error(500, f"toolsift internal error: {type(exc).__name__}: {exc}")
        finally:
            if status != -1:
                self.finish(rec, t0, status, ex)

    async def post_upstream(self, body: dict, headers: dict[str, str], stream: bool = False):
        """(httpx response, None) or (None, error response) for timeouts / unreachable upstreams."""
        import httpx

        req = self.client.build_request("POST", self.target("/v1/chat/completions"), headers=headers,
                                        content=json.dumps(body).encode())
        try:
            return await self.client.send(req, stream=stream), None
        except httpx.TimeoutException:
            return None, _error(504, f"upstream did not answer within {self.timeout:g} s", "upstream_timeout")
        except httpx.TransportError as exc:
            return None, _error(502, f"upstream unreachable: {type(exc).__name__}: {exc}", "upstream_unreachable")

    async def complete(self, send: dict, headers: dict[str, str], ex: Exchange):
        from fastapi.responses import JSONResponse, Response
        from starlette.concurrency import run_in_threadpool

        while send is not None:
            t_up = time.perf_counter()
            r, err = await self.post_upstream(send, headers)
            ex.upstream_ms += (time.perf_counter() - t_up) * 1000
            if err is not None:
                return err
            if r.status_code != 200:  # the upstream's own error, as it sent it
                return Response(r.content, status_code=r.status_code, headers=self.toolsift_headers(ex, False),
                                media_type=r.headers.get("content-type", "application/json"))
            try:
                data = r.json()
            except ValueError:
                return _error(502, f"upstream answered {len(r.content)} bytes that are not JSON "
                              f"(content-type {r.headers.get('content-type')!r})", "upstream_bad_response")
            if not isinstance(data, dict):
                return _error(502, "upstream answer is JSON but not an object", "upstream_bad_response")
            send = await run_in_threadpool(ex.feed, data)
        if self.mode == "reject" and ex.failed:
            return _error(422, "toolsift rejected the model's tool calls: "
                          + "; ".join(f"{c.verdict.verdict}" for c in ex.checks if not c.verdict.ok),
                          "hallucinated_call", verdicts=[c.to_dict() for c in ex.checks])
        return JSONResponse(ex.response, headers=self.toolsift_headers(ex))

    async def stream(self, send: dict, headers: dict[str, str], ex: Exchange, rec: dict, t0: float):
        from fastapi.responses import Response, StreamingResponse

        r, err = await self.post_upstream(send, headers, stream=True)
        if err is not None:
            return err
        if r.status_code != 200:
            content = await r.aread()
            await r.aclose()
            return Response(content, status_code=r.status_code, headers=self.toolsift_headers(ex, False),
                            media_type=r.headers.get("content-type", "application/json"))
        return StreamingResponse(self._relay(r, ex, rec, t0), media_type="text/event-stream",
                                 headers={**self.toolsift_headers(ex, False), "cache-control": "no-cache"})

    async def _relay(self, r, ex: Exchange, rec: dict, t0: float):
        import httpx

        asm, done = StreamAssembler(), False
        try:
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        done = True
                        yield self._verdict_comment(ex, asm)
                    else:
                        try:
                            asm.feed(json.loads(payload))
                        except ValueError:
                            pass  # not ours to judge; the client sees it as sent
                yield (line + "\n").encode()
            if not done:
                yield self._verdict_comment(ex, asm)
        except httpx.TimeoutException:
            rec["error"] = "upstream timeout mid-stream"
            yield _sse_error(f"upstream stopped sending for {self.timeout:g} s", "upstream_timeout")
        except httpx.TransportError as exc:
            rec["error"] = f"upstream connection lost mid-stream: {type(exc).__name__}"
            yield _sse_error(rec["error"], "upstream_unreachable")
        finally:
            # sync work first: a client that hangs up after [DONE] cancels this generator at its next await
            if not ex.checks and asm.choices:
                self._check_stream(ex, asm)
            self.finish(rec, t0, 200, ex)
            await r.aclose()

    def _check_stream(self, ex: Exchange, asm: StreamAssembler) -> None:
        ex.response = asm.response()
        try:
            ex.checks = check_answer(ex.response, ex.routed)
        except Exception:  # a checker failure must not break a stream already under way
            log.exception("toolsift proxy: checking a streamed answer failed")

    def _verdict_comment(self, ex: Exchange, asm: StreamAssembler) -> bytes:
        self._check_stream(ex, asm)
        return f": toolsift-verdicts {verdicts_header(ex.checks)}\n\n".encode()

    async def forward(self, request):
        """Any other path: forwarded unchanged (method, query, body, headers minus hop-by-hop)."""
        import httpx
        from fastapi.responses import Response

        t0 = time.perf_counter()
        denied, headers = self.auth(request)
        if denied is not None:
            resp = denied
        else:
            req = self.client.build_request(request.method, self.target(request.url.path, request.url.query),
                                            headers=headers, content=await request.body())
            try:
                r = await self.client.send(req)
                keep = {k: v for k, v in r.headers.items() if k.lower() not in _RESP_DROP}
                resp = Response(r.content, status_code=r.status_code, headers=keep)
            except httpx.TimeoutException:
                resp = _error(504, f"upstream did not answer within {self.timeout:g} s", "upstream_timeout")
            except httpx.TransportError as exc:
                resp = _error(502, f"upstream unreachable: {type(exc).__name__}: {exc}", "upstream_unreachable")
        # forwarded requests are logged but not counted in /metrics (those are about chat completions)
        self.log_line({"path": request.url.path, "method": request.method, "forwarded": True,
                       "status": resp.status_code, "ms": round((time.perf_counter() - t0) * 1000, 2)})
        return resp


def _sse_error(message: str, kind: str) -> bytes:
    return f"data: {json.dumps({'error': {'message': message, 'type': kind, 'code': kind}})}\n\n".encode()


def create_app(upstream: str, router: Any = None, *, k: int = 5, on_hallucination: str = "annotate",
               max_repairs: int = 2, api_key: str | None = None, log_content: bool = False, timeout: float = 60.0,
               pinned: tuple[str, ...] = (), token_budget: int | None = None, method: str = "hybrid",
               request_router: RequestRouter | None = None, max_body_mb: float = 64.0, model: str | None = None):
    """The FastAPI app. ``router``: a `router.Router`, a catalog path, or None. Request bodies over
    ``max_body_mb`` are refused with 413 before they are read into memory. ``model``: the
    embedding model for tool lists that come with requests (default: the catalog's, else MiniLM)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, PlainTextResponse

    if isinstance(router, (str, os.PathLike)):
        from router.engine import Router

        router = Router.open(router)
    rr = request_router or RequestRouter(router, k=k, pinned=pinned, token_budget=token_budget, method=method,
                                         model=model)
    proxy = Proxy(upstream, rr, on_hallucination=on_hallucination, max_repairs=max_repairs, api_key=api_key,
                  log_content=log_content, timeout=timeout)
    @asynccontextmanager
    async def lifespan(app):
        yield
        if proxy._client is not None:
            await proxy._client.aclose()

    app = FastAPI(title="toolsift proxy", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan,
                  max_body_size=int(max_body_mb * 2**20))
    app.state.proxy = proxy

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok", "upstream": proxy.upstream, "k": rr.k, "on_hallucination": proxy.mode,
                "catalog": rr.router is not None}

    @app.get("/metrics")
    async def metrics(request: Request):
        denied, _ = proxy.auth(request)
        if denied is not None:
            return denied
        if request.query_params.get("format") == "json":
            return JSONResponse(proxy.metrics.snapshot())
        return PlainTextResponse(proxy.metrics.prometheus())

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await proxy.chat(request)

    @app.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def forward(request: Request, path: str):
        return await proxy.forward(request)

    return app


def serve(app: Any, host: str = "127.0.0.1", port: int = 8808) -> None:
    """Run the proxy in the foreground until interrupted; one JSON log line per request on stderr."""
    import uvicorn

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    gc.freeze()  # the catalog and indexes live as long as the server: keep them out of every GC pass
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
