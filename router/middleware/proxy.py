"""OpenAI- and Anthropic-compatible HTTP proxy: route tools into each request, check the calls
that come back.

Three endpoints are routed, forwarded and checked, each with or without the ``/v1`` prefix:
``POST /v1/chat/completions`` (Chat Completions), ``POST /v1/responses`` (Responses,
router/middleware/responses.py) and ``POST /v1/messages`` (Claude's Messages API,
router/middleware/messages.py). Every other path (``GET /v1/models`` ...) is forwarded unchanged,
with ``x-toolsift-route: unrouted; reason=...`` on the answer so that nothing is skipped silently.

Routing decisions and verdicts come back in ``x-toolsift-selected`` / ``x-toolsift-route`` /
``x-toolsift-verdicts`` (JSON or short text, at most 4 KiB each) next to the upstream's own
headers (request ids, rate limits, ``retry-after``), and in one JSON log line per request on the
``toolsift.proxy`` logger (router/middleware/request_log.py; no message contents unless
``log_content``; never any header, so never a key; the upstream URL only in its redacted form).

Streams are relayed line by line as they arrive. Headers are gone by the time the calls are
complete, so a streamed answer's verdicts are sent as an SSE comment line
``: toolsift-verdicts [...]`` just before the stream's last event (``data: [DONE]``,
``response.completed``, ``message_stop``; clients ignore comments) and logged; streamed answers
are annotated, never repaired or rejected.

Errors: upstream status + body + headers are passed through; upstream timeout → 504; upstream
unreachable → 502; a non-JSON upstream answer → 502; a malformed request → 400 (in the API's own
words, router/middleware/validate.py); a body over the limit → 413 (also when sent chunked); a body
not received within ``body_timeout`` (30 s) → 408; a missing/wrong proxy key → 401; a client that hangs up is
logged as 499 (no traceback); anything unexpected → 500 with a JSON error (the process keeps serving).
The FastAPI app around it: router/middleware/app.py.
"""

import asyncio
import json
import logging
import time
from typing import Any, Callable, Optional

from apidb.errors import ToolsiftError
from router.errors import NamespaceRefused
from router.tenancy.gate import Gate
from router.tenancy.keys import KEY_HELP, NAMESPACES_HEADER, client_id

from .checks import CHAT, PROXY_MODES, Api, Exchange, check_mode, verdicts_header
from .errors import MiddlewareError, RequestError, WireError
from .messages import MESSAGES
from .metrics import Metrics
from .policy import in_api_words
from .request import RequestRouter
from .routed import unrouted_header
from .request_body import read_request
from .relay import StreamRelay, error_response as _error
from .request_log import RequestLog, _short
from .conversations import Conversations
from .deferred import for_request
from .responses import RESPONSES
from .upstream import Upstream, request_headers, response_headers
from .validate import check_request

log = logging.getLogger("toolsift.proxy")
PATHS = {CHAT: "/chat/completions", RESPONSES: "/responses", MESSAGES: "/messages"}  # below /v1


class _TooLarge(Exception):
    pass


class _TooSlow(Exception):
    pass


class Proxy(StreamRelay, RequestLog):
    """The proxy's state and handlers; `create_app` wires them into FastAPI."""

    def __init__(self, upstream: str, rr: Optional[RequestRouter] = None, *, on_hallucination: str = "annotate",
                 max_repairs: int = 2, api_key: Optional[str] = None, log_content: bool = False,
                 timeout: float = 60.0, max_body_bytes: int = 64 * 2**20,
                 loader: Optional[Callable[[], RequestRouter]] = None, k: int = 5, tenants: Any = None,
                 usage_log: Any = None, body_timeout: float = 30.0) -> None:
        check_mode(on_hallucination, PROXY_MODES, "--on-hallucination")
        self.body_timeout = body_timeout  # the whole request body, from the first byte read
        self.up = Upstream(upstream)
        self.upstream = self.up.display  # what /healthz and the start-up line show: no credentials
        self.mode, self.max_repairs, self.k = on_hallucination, max_repairs, (rr.k if rr else k)
        self.api_key, self.log_content, self.timeout = api_key, log_content, timeout
        self.gate = Gate(api_key, tenants)  # one key, a tenants file (router.tenancy.tenants), or an open door
        self.max_body_bytes = max_body_bytes
        self.usage_log = usage_log  # router.training.usage_log.UsageLog (opt-in: --usage-log), or None
        self.metrics = Metrics()
        self.memory = Conversations()  # per tenant: router/middleware/conversations.py
        self._rr, self._loader = rr, loader
        self.state = "ok" if rr is not None else "starting"
        self.load_error: Optional[str] = None
        self._loading: Optional[asyncio.Future] = None
        self.on_ready: Optional[Callable[[], None]] = None
        self.on_failed: Optional[Callable[[str], None]] = None
        self._client = None

    @property
    def rr(self) -> Optional[RequestRouter]:
        return self._rr

    @property
    def client(self):
        import httpx

        if self._client is None:  # created in the server's event loop
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                                             limits=limits)
        return self._client

    # -- start-up: the port is bound before this runs; the router loads in a thread
    def start_loading(self) -> None:
        if self._rr is not None:
            if self.on_ready:
                self.on_ready()
            return
        self._loading = asyncio.ensure_future(asyncio.to_thread(self._load))

    def _load(self) -> None:
        try:
            self._rr = self._loader()
            self.k = self._rr.k
            self.state = "ok"
            if self.on_ready:
                self.on_ready()
        except Exception as exc:  # said once, on one line, by the command; /healthz says "failed"
            self.state, self.load_error = "failed", self.up.redact(exc)
            if self.on_failed:
                self.on_failed(self.load_error)

    async def request_router(self) -> RequestRouter:
        """The request router, once loaded (requests that arrive while it loads wait for it)."""
        if self._rr is None and self._loading is not None:
            await asyncio.shield(self._loading)
        if self._rr is None:
            raise MiddlewareError(f"the proxy could not start: {self.load_error or 'still loading'}")
        return self._rr

    # -- auth and headers
    def authorized(self, request) -> bool:
        return self.auth(request)[0] is None

    def auth(self, request, api: Api = CHAT) -> tuple[Any, dict[str, str]]:
        """(error response or None, headers to send upstream); the tenant, if any, goes to
        ``request.state.tenant`` (router/tenancy/gate.py)."""
        headers = request_headers(request.headers.items())
        admitted, request.state.tenant = self.gate.admit(request.headers, headers)
        if not admitted:
            return _error(401, f"missing or wrong toolsift key ({KEY_HELP})", "invalid_api_key", api), headers
        return None, headers

    def toolsift_headers(self, ex: Exchange, with_verdicts: bool = True) -> dict[str, str]:
        h = {"x-toolsift-selected": ex.routed.header(), "x-toolsift-route": ex.routed.route_header()} \
            if ex.routed else {}
        if ex.routed and ex.routed.abstain_header() is not None:
            h["x-toolsift-abstain"] = ex.routed.abstain_header()
        if with_verdicts:
            h["x-toolsift-verdicts"] = verdicts_header(ex.checks)
            h["x-toolsift-repairs"] = str(ex.repairs)
        return h

    async def read_body(self, request) -> bytes:
        """The body, refused (`_TooLarge`) as soon as it passes the limit: by its declared length
        before reading, else while it streams in (a chunked upload declares none)."""
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _TooLarge()
        chunks, size = [], 0
        try:  # a client that trickles its body holds a socket and memory: it gets body_timeout in all
            async with asyncio.timeout(self.body_timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > self.max_body_bytes:
                        raise _TooLarge()
                    chunks.append(chunk)
        except TimeoutError:
            raise _TooSlow() from None
        return b"".join(chunks)

    def parse(self, raw: bytes, api: Api, rr: RequestRouter) -> Any:
        """The request body, checked against its API's shape before any work (router/middleware/
        validate.py). ValueError: not JSON, or nested too deeply; WireError / RequestError: wrong
        shape (in the API's own words) or too many tools."""
        try:
            if api is CHAT:
                body = read_request(raw, max_tools=rr.max_request_tools)
            else:
                import orjson

                try:
                    body = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise ValueError(str(exc)) from None
                tools = body.get("tools") if isinstance(body, dict) else None
                if isinstance(tools, list):
                    from .policy import check_tool_count

                    check_tool_count(len(tools), rr.max_request_tools)
            check_request(api.name, body)
        except RecursionError:  # msgspec decodes as deep as Python recurses: refuse, never 500
            raise ValueError("the JSON nests too deeply") from None
        return body

    # -- handlers
    async def handle(self, request, api: Api = CHAT):
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import ClientDisconnect

        t0, ex, status = time.perf_counter(), None, 500
        rec: dict[str, Any] = {"path": request.url.path, "method": "POST", "api": api.name}
        try:
            denied, headers = self.auth(request, api)
            if denied is not None:
                status = 401
                return denied
            keep = tuple(n.strip() for n in request.headers.get("x-toolsift-keep", "").split(",") if n.strip())
            t_body = time.perf_counter()
            try:
                raw = await self.read_body(request)
            except _TooLarge:
                status = 413
                return _error(413, f"request body is over the proxy's limit of {self.max_body_bytes / 2**20:g} MB "
                              "(--max-body-mb)", "request_too_large", api)
            except _TooSlow:
                status = 408
                return _error(408, f"request body not received within {self.body_timeout:g} s", "request_timeout", api)
            rec["body_ms"] = round((time.perf_counter() - t_body) * 1000, 2)  # the client's upload, not ours
            tenant = request.state.tenant
            if tenant is not None:
                rec["tenant"] = tenant.name
            try:  # only the namespaces this request may see, before anything is ranked
                rr = self.gate.request_router(await self.request_router(), tenant,
                                              request.headers.get(NAMESPACES_HEADER))
            except NamespaceRefused as exc:
                status = 403
                return _error(403, str(exc), "namespace_not_allowed", api)
            try:
                body = self.parse(raw, api, rr)
            except ValueError as exc:
                status = 400
                return _error(400, f"request body is not valid JSON: {exc}", "invalid_request_error", api)
            memory = self.memory.for_tenant(client_id(tenant, headers))
            earlier = memory.loaded(body.get("previous_response_id")) if api is RESPONSES else []
            body, deferral, keep = for_request(api.name, body, keep, earlier)  # the providers' tool searches
            ex = Exchange(rr, body, self.mode, self.max_repairs, api=api, keep=keep, search_streams=True, memory=memory,
                          search_pool=deferral.pool if deferral is not None and not deferral.client else None,
                          deferral=deferral)
            try:
                # A tool list seen before is ranked here, on the event loop (~1-5 ms): handing it to a
                # worker thread cost more than the work under 20 clients (the two threads fought for
                # the GIL; own time p50 69.6 -> 6.6 ms in `toolsift bench proxy`). A list that needs a
                # router built or vectors encoded goes to a thread, so it never stalls other requests.
                send = ex.start() if rr.warm(body) else await run_in_threadpool(ex.start)
            except RequestError as exc:
                status = 400
                return _error(400, in_api_words(api.name, str(exc)), "invalid_request_error", api)
            rec.update(model=_short(body.get("model")), stream=bool(send.get("stream")))
            if send.get("stream"):
                resp = await self.stream(send, headers, ex, rec, t0)
                status = -1 if resp.status_code == 200 else resp.status_code  # a stream logs itself at its end
                return resp
            resp = await self.complete(send, headers, ex)
            status = resp.status_code
            return resp
        except ClientDisconnect:  # the client hung up: nobody to answer, nothing broke
            status, rec["error"] = 499, "client closed the connection"
            from fastapi.responses import Response

            return Response(status_code=499)
        except (RequestError, WireError) as exc:
            status = 400
            return _error(400, str(exc), "invalid_request_error", api)
        except ToolsiftError as exc:
            status = 500
            return _error(500, f"toolsift: {self.up.redact(exc)}", api=api)
        except Exception as exc:  # never take the server down; say what broke
            log.exception("toolsift proxy: unexpected error")
            status = 500
            return _error(500, f"toolsift internal error: {type(exc).__name__}: {self.up.redact(exc)}", api=api)
        finally:
            if status != -1:
                self.finish(rec, t0, status, ex)

    async def post_upstream(self, api: Api, body: dict, headers: dict[str, str], stream: bool = False):
        """(httpx response, None) or (None, error response) for timeouts / unreachable upstreams."""
        import httpx

        req = self.client.build_request("POST", self.up.target(PATHS[api]), headers=headers,
                                        content=json.dumps(body).encode())
        try:
            return await self.client.send(req, stream=stream), None
        except httpx.TimeoutException:
            return None, _error(504, f"upstream did not answer within {self.timeout:g} s", "upstream_timeout", api)
        except httpx.TransportError as exc:
            return None, _error(502, f"upstream unreachable: {type(exc).__name__}: {self.up.redact(exc)}",
                                "upstream_unreachable", api)

    async def complete(self, send: dict, headers: dict[str, str], ex: Exchange):
        from fastapi.responses import Response

        last = None
        while send is not None:
            t_up = time.perf_counter()
            r, err = await self.post_upstream(ex.api, send, headers)
            ex.upstream_ms += (time.perf_counter() - t_up) * 1000
            if err is not None:
                err.headers.update(self.toolsift_headers(ex, False))
                return err
            if r.status_code != 200:  # the upstream's own error, as it sent it, with its headers
                return Response(r.content, status_code=r.status_code,
                                headers={**response_headers(r.headers), **self.toolsift_headers(ex, False)})
            try:
                data = r.json()
            except ValueError:
                return _error(502, f"upstream answered {len(r.content)} bytes that are not JSON "
                              f"(content-type {r.headers.get('content-type')!r})", "upstream_bad_response", ex.api)
            if not isinstance(data, dict):
                return _error(502, "upstream answer is JSON but not an object", "upstream_bad_response", ex.api)
            last = r
            send = ex.feed(data)  # checks the calls against the k offered tools only: sub-ms, on the loop
        ex.remember(ex.response)
        if self.mode == "reject" and ex.failed:
            return _error(422, "toolsift rejected the model's tool calls: "
                          + "; ".join(f"{c.verdict.verdict}" for c in ex.checks if not c.verdict.ok),
                          "hallucinated_call", ex.api, headers=self.toolsift_headers(ex),
                          verdicts=[c.to_dict() for c in ex.checks])
        # the upstream's own bytes and headers: the proxy adds its headers and changes nothing else
        # (but the client's own tool searches, put in front of a Messages answer: deferred.py)
        content = (ex.deferral.answer(data, ex.search_log) if ex.deferral is not None else None) or last.content
        if ex.deferral is not None and ex.api is RESPONSES:  # a follow-up by previous_response_id keeps them
            ex.memory.remember_loaded(data.get("id"), [*ex.deferral.loaded, *(n for _, names in ex.search_log
                                                                                 for n in names)])
        out = response_headers(last.headers)
        if content is not last.content:
            out = {k: v for k, v in out.items() if k.lower() != "content-length"}
        return Response(content, status_code=200, headers={**out, **self.toolsift_headers(ex)})

    async def forward(self, request):
        """Any other path: forwarded unchanged (method, query, body, headers minus hop-by-hop)."""
        import httpx
        from fastapi.responses import Response

        t0 = time.perf_counter()
        denied, headers = self.auth(request)
        note = {"x-toolsift-route": unrouted_header("not a routed endpoint: forwarded unchanged")}
        if denied is not None:
            resp = denied
        else:
            try:
                req = self.client.build_request(request.method, self.up.target(request.url.path, request.url.query),
                                                headers=headers, content=await self.read_body(request))
                r = await self.client.send(req)
                resp = Response(r.content, status_code=r.status_code, headers={**response_headers(r.headers), **note})
            except _TooLarge:
                resp = _error(413, "request body is over the proxy's limit (--max-body-mb)", "request_too_large")
            except _TooSlow:
                resp = _error(408, f"request body not received within {self.body_timeout:g} s", "request_timeout")
            except httpx.TimeoutException:
                resp = _error(504, f"upstream did not answer within {self.timeout:g} s", "upstream_timeout")
            except httpx.TransportError as exc:
                resp = _error(502, f"upstream unreachable: {type(exc).__name__}: {self.up.redact(exc)}",
                              "upstream_unreachable")
        # forwarded requests are logged but not counted in /metrics (those are about routed requests)
        self.log_line({"path": request.url.path, "method": request.method, "forwarded": True,
                       "status": resp.status_code, "ms": round((time.perf_counter() - t0) * 1000, 2)})
        return resp
