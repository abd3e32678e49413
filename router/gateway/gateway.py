"""The MCP gateway: many upstream MCP servers behind two meta-tools.

Upstream tools are loaded into the catalog (one namespace per server, synced by content
hash) and indexed by the router (`tool_index`). The gateway's own client sees exactly:

* ``search_tools(query, k)``: the best tools for a query, with names, descriptions,
  input schemas, scores and why each was chosen;
* ``call_tool(name, arguments)``: ``name`` is ``server__tool`` or the bare tool name
  when only one server has it (the scheme is `router.gateway.names`; a name that starts
  with a server's name never reaches another server). The call is checked against that
  tool's schema first; an unknown tool or bad arguments come back as a tool error naming
  the defect and the nearest valid tools, and are never forwarded;
* the pinned tools, exposed directly as ``server__tool``.

Start-up: the encoder loads and every upstream connects at once. The gateway answers
``call_tool`` once each server has answered or failed, or after ``ready_timeout`` seconds,
whichever comes first: a server that has not answered by then is reported as starting and
joins when it does (until ``start_timeout``). ``list_tools`` also waits for the pinned
tools' servers, ``search_tools`` for an index that covers every listing synced so far. An
upstream that fails to start or dies mid-call yields a tool error; the others keep being
served. `mcp` and the embedding model are imported only when a gateway runs. The call_tool
side (name resolution, the check, the forwarding) is mixed in from `router.gateway.calls`.
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio

from apidb.catalog import SyncReport
from apidb.record import ApiRecord
from router.errors import TenancyError
from router.tenancy.views import Views, sees, tenant_of

from .calls import ToolCalls, _tenant_name
from .errors import GatewayError
from .freshness import ClientNotifier
from .names import qualified, server_name_problem
from .server import CALL_TOOL, SEARCH_TOOL, build_server, describe_selection, error_result, gateway_tools, json_result
from .tool_index import ToolIndex
from .upstreams import Upstream, UpstreamSpec

log = logging.getLogger("toolsift.mcp")


class Gateway(ToolCalls):
    """Upstream connections + catalog + router, and the MCP server that exposes them.

    Use as ``async with Gateway(specs) as gw:`` (connects the upstreams in the
    background), then serve ``gw.build_server()``; `search` and `call_tool` are the
    same operations without MCP around them.
    """

    def __init__(self, specs: Iterable[UpstreamSpec] = (), *, db_path: str | Path | None = None,
                 pinned: Sequence[str] = (), method: str | None = None, k: int = 5, model: str | None = None,
                 cache_dir: str | Path | None = None, start_timeout: float = 30.0,
                 call_timeout: float = 120.0, ready_timeout: float = 10.0, adaptive: bool = False,
                 on_abstain: str = "empty", usage_log: Any = None, tenants: Any = None) -> None:
        if on_abstain not in ("empty", "flag"):
            raise GatewayError(f"on_abstain must be empty or flag, got {on_abstain!r}")
        # adaptive: search_tools' k (the client's, else k) is the ceiling of adaptive k; on_abstain:
        # when no tool fits, answer with no tools ("empty") or with the ranked ones, flagged ("flag")
        self.adaptive, self.on_abstain = adaptive, on_abstain
        self.usage_log = usage_log  # router.training.usage_log.UsageLog (opt-in: --usage-log), or None
        # recent (tenant, query, names offered): a call is logged against its own tenant's search only
        self._searches: deque[tuple[str, str, frozenset[str]]] = deque(maxlen=64)
        self.upstreams = {s.name: Upstream(s, self._on_listing, start_timeout=start_timeout,
                                           call_timeout=call_timeout) for s in specs}
        self.index = ToolIndex(self.upstreams, db_path=db_path, method=method, model=model, cache_dir=cache_dir)
        self.pinned_requested = list(pinned)
        self.method, self.default_k, self.model = method, k, model
        self.ready_timeout = ready_timeout
        self.warnings: list[str] = []
        self.listed = anyio.Event()  # every upstream answered or failed, or ready_timeout passed
        self.ready = anyio.Event()   # and the first index is built: search_tools can answer
        self.encoder: str = "not needed" if method == "bm25" else "not loaded"
        self.pinned: list[ApiRecord] = []
        self._pin_warnings: list[str] = []
        self._tg: Any = None
        # tenants (router.tenancy.tenants): each client sees only its servers (router/tenancy/views.py)
        self.tenants, self.views = tenants, Views()
        self.notifier = ClientNotifier()  # the gateway's own tools/list_changed (router/gateway/freshness.py)

    @property
    def catalog(self) -> Any:
        return self.index.catalog

    @property
    def router(self) -> Any:
        return self.index.router

    @property
    def namespaces(self) -> set[str]:
        return self.index.namespaces

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> "Gateway":
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._load_encoder)  # at once: it takes longer than most servers
        for upstream in self.upstreams.values():
            self._tg.start_soon(upstream.run)
        self._tg.start_soon(self._start)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for upstream in self.upstreams.values():
            upstream.stop()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(*exc)
        self.index.close()

    async def _load_encoder(self) -> None:
        if self.method == "bm25":
            return
        self.encoder = "loading"
        started = anyio.current_time()
        failure = await self.index.load_encoder()
        if failure:
            self.encoder = f"failed: {failure}"
            self._warn(f"the embedding model could not be loaded: {failure}")
        else:
            self.encoder = "loaded"
            log.info("encoder %s loaded in %.1f s", self.model or "(default)", anyio.current_time() - started)

    async def _start(self) -> None:
        try:
            with anyio.move_on_after(self.ready_timeout):  # a hung server must not hold up the others
                for upstream in self.upstreams.values():
                    await upstream.settled.wait()
            for upstream in self.upstreams.values():
                if upstream.status == "starting":
                    log.warning("upstream %s has not answered after %g s; serving the others without it "
                                "until it does", upstream.name, self.ready_timeout)
            self.listed.set()
            self._refresh_pins()
            await self._announce()
            await self.index.rebuild()
        except Exception as exc:  # noqa: BLE001 - serve what we can; search_tools reports the problem
            self._warn(f"indexing the upstream tools failed: {type(exc).__name__}: {exc}")
        finally:
            self.listed.set()
            self.ready.set()

    async def wait_ready(self) -> None:
        await self.ready.wait()

    async def wait_listed(self) -> None:
        """Wait for what `list_tools` shows: `listed`, and then every pinned tool, or the end of
        the start of each server that could offer it (a pin is the user asking for that tool,
        so its server is waited for up to the start timeout, and a hung server without pins
        is not)."""
        await self.listed.wait()
        while not all(self._pin_settled(name) for name in self.pinned_requested):
            await anyio.sleep(0.05)  # until a server settles; every one does by its start timeout

    def _pin_settled(self, name: str) -> bool:
        directory = self.index.directory
        if directory.find(name) is not None:
            return True
        scoped = directory.scope(name)
        servers = [self.upstreams[scoped[0]]] if scoped and scoped[0] in self.upstreams else self.upstreams.values()
        return all(u.settled.is_set() for u in servers)

    async def _on_listing(self, upstream: Upstream) -> None:
        """A server's tools/list (its first, or after a list_changed): sync its namespace,
        then re-index if anything changed (before `listed`, `_start` indexes them all)."""
        try:
            report = self.index.sync(upstream.name, upstream.tools)
            self._refresh_pins()
            if report is not None and report.changed:
                log.info("upstream %s tools synced: %s", upstream.name, report.to_dict())
            if self.listed.is_set():
                await self._announce()
                await self.index.rebuild()
                if report is not None and report.changed and self.index.encoded is not None:
                    n = self.index.encoded  # only what was added or edited: the others come from the cache
                    log.info("upstream %s re-indexed: %d tool%s embedded", upstream.name, n, "" if n == 1 else "s")
        except Exception as exc:  # noqa: BLE001 - keep serving the previous index
            self._warn(f"re-indexing {upstream.name!r} after its tools/list failed: {type(exc).__name__}: {exc}")

    # -- catalog and index -----------------------------------------------------------
    def ingest(self, server: str, tools: Sequence[dict[str, Any]]) -> SyncReport:
        """Load a server's tools (as ``tools/list`` items) without a live connection.

        Used for static catalogs; call `reindex()` afterwards.
        """
        problem = server_name_problem(server)
        if problem:
            raise GatewayError(f"server {server!r}: {problem}")
        report = self.index.sync(server, tools)
        if report is None:
            raise GatewayError(f"server {server!r}: " + "; ".join(self.index.problems[server]))
        self._refresh_pins()
        return report

    def reindex(self) -> None:
        """Synchronous re-index (for callers outside an event loop)."""
        self.index.rebuild_now()
        self._refresh_pins()

    def _refresh_pins(self) -> None:
        pinned, missing = [], []
        for name in self.pinned_requested:
            rec = self.index.directory.find(name)
            if rec is None:
                missing.append(f"pinned tool {name!r} is not offered by any available server")
            elif rec not in pinned:
                pinned.append(rec)
        self.pinned = pinned
        if self.listed.is_set():  # before that, a pin's server may simply not have answered yet
            for message in missing:
                if message not in self._pin_warnings:
                    log.warning("%s", message)
            self._pin_warnings = missing

    async def _announce(self) -> None:
        """Tell the clients whose tools/list (the pins they may see) has just changed."""
        tenants = self.tenants.tenants if self.tenants is not None else [None]
        lists = {t.name if t else "": [(qualified(r), r.description, r.parameters) for r in self.pinned
                                       if sees(t, r.namespace)] for t in tenants}
        for view in await self.notifier.show(lists):
            log.info("told the clients%s that the gateway's tools changed", f" of tenant {view!r}" if view else "")

    def client_tenant(self, ctx: Any) -> Any:
        """The tenant an MCP request comes from (None without tenants; GatewayError: no valid key)."""
        try:
            return tenant_of(ctx, self.tenants)
        except TenancyError as exc:
            raise GatewayError(str(exc)) from None

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning("%s", message)

    def _down(self, tenant: Any = None) -> list[str]:
        return sorted(n for n, u in self.upstreams.items() if u.status != "ready" and sees(tenant, n))

    def _why_down(self, server: str) -> str:
        upstream = self.upstreams[server]
        return upstream.error or (upstream.waiting() if upstream.status == "starting" else upstream.status)

    # -- search_tools ----------------------------------------------------------------
    def search(self, query: str, k: int | None = None, tenant: Any = None) -> dict[str, Any]:
        """The best tools for ``query`` (only from servers that are up, and that ``tenant`` may
        see: filtered before ranking), with scores and why."""
        if not isinstance(query, str) or not query.strip():
            raise GatewayError("search_tools: 'query' must be a non-empty string")
        k = self.default_k if k is None else k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 50:
            raise GatewayError("search_tools: 'k' must be an integer from 1 to 50")
        out: dict[str, Any] = {"query": query, "k": k, "tools": []}
        down = self._down(tenant)
        router = self.views.router(self.router, tenant)  # a tenant's servers only, before ranking
        if router is not None:
            kwargs: dict[str, Any] = {"k": k, "adaptive": self.adaptive,
                                      "abstain": "empty" if self.on_abstain == "empty" else "flag"}
            if self.method:
                kwargs["method"] = self.method
            indexed_down = [n for n in down if n in router.namespaces()]
            if indexed_down:  # tools a previous run stored, or a server that is down now
                kwargs["exclude_namespaces"] = indexed_down
            directory = self.views.directory(self.index.directory, tenant)
            selections = router.select(query, **kwargs)
            for sel in selections:
                # only what a call can reach: a tool removed or withheld since this index was built is not
                if directory.get(sel.record.namespace, sel.record.name) is not None:
                    out["tools"].append(describe_selection(sel))
            if selections.abstention is not None:
                out["abstain"] = selections.abstention.to_dict()
                if selections.abstained:
                    out["note"] = ("no tool fits this query well" + (": none returned" if self.on_abstain == "empty"
                                   else ": the tools listed are the least bad ones") + "; try other words")
            self._searches.append((_tenant_name(tenant), query, frozenset(t["name"] for t in out["tools"])))
        if router is None and tenant is None and (self.warnings or self.index.warnings):
            out["warnings"] = self.warnings + self.index.warnings  # the operator's: they name any server
        if down:
            out["unavailable_servers"] = {n: self._why_down(n) for n in down}
        problems = {n: p for n, p in self.index.server_problems().items() if sees(tenant, n)}
        if problems:
            out["server_problems"] = problems
        return out

    # -- the gateway's own tools (call_tool itself: router.gateway.calls) ------------
    def list_tools(self, tenant: Any = None) -> list[Any]:
        """The gateway's own tools: search_tools, call_tool and the pinned tools (``tenant``'s)."""
        return gateway_tools([(qualified(r), r.description, r.parameters) for r in self._pins(tenant)])

    def _pins(self, tenant: Any) -> list[ApiRecord]:
        return [r for r in self.pinned if sees(tenant, r.namespace)]

    def build_server(self) -> Any:
        return build_server(self)

    async def handle_call(self, name: str, arguments: dict[str, Any] | None, tenant: Any = None) -> Any:
        """Dispatch one call the gateway's client made to one of the gateway's own tools."""
        # A search needs the index, up to date with every listing synced so far; a call needs
        # only the listings.
        if name == SEARCH_TOOL:
            await self.ready.wait()
            await self.index.wait_current()
        else:
            await self.listed.wait()
        try:
            return await self._dispatch(name, arguments or {}, tenant)
        except Exception as exc:  # noqa: BLE001 - a gateway bug must reach the client as a tool error
            log.exception("gateway error while serving %r", name)
            return error_result(f"gateway error while serving {name!r}: {type(exc).__name__}: {exc}")

    async def _dispatch(self, name: str, args: dict[str, Any], tenant: Any = None) -> Any:
        if name == SEARCH_TOOL:
            try:
                found = self.search(args.get("query"), args.get("k"), tenant)
            except GatewayError as exc:
                return error_result(str(exc))
            return json_result(found)
        if name == CALL_TOOL:
            return await self.call_tool(args.get("name"), args.get("arguments"), tenant)
        pins = self._pins(tenant)
        if any(qualified(r) == name for r in pins):
            return await self.call_tool(name, args, tenant)
        return error_result(f"unknown tool {name!r}: this gateway offers {SEARCH_TOOL}, {CALL_TOOL}"
                            + "".join(f", {qualified(r)}" for r in pins))

    def status(self) -> dict[str, Any]:
        servers = []
        for upstream in self.upstreams.values():
            info = upstream.info()
            if self.index.problems.get(upstream.name):
                info["problems"] = list(self.index.problems[upstream.name])
            if upstream.name in self.index.last_sync:
                info["last_sync"] = dict(self.index.last_sync[upstream.name])
            servers.append(info)
        return {"servers": servers, "tools": len(self.index.directory.records),
                "pinned": [qualified(r) for r in self.pinned], "encoder": self.encoder,
                "last_encoded": self.index.encoded,
                "warnings": self.warnings + self.index.warnings + self._pin_warnings}
