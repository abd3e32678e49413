"""The MCP gateway: many upstream MCP servers behind two meta-tools.

Upstream tools are loaded into the catalog (one namespace per server, synced by content
hash) and indexed by the router. The gateway's own client sees exactly:

* ``search_tools(query, k)``: the best tools for a query, with names, descriptions,
  input schemas, scores and why each was chosen;
* ``call_tool(name, arguments)``: ``name`` is ``server__tool`` or the bare tool name
  when only one server has it. The call is checked against that tool's schema first;
  an unknown tool or bad arguments come back as a tool error naming the defect and the
  nearest valid tools, and are never forwarded;
* the pinned tools, exposed directly as ``server__tool``.

An upstream that fails to start or dies mid-call yields a tool error; the others keep
being served. `mcp` and the embedding model are imported only when a gateway runs.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio

from apidb.catalog import Catalog, SyncReport
from apidb.loaders.mcp import records_from_mcp_tools
from apidb.record import ApiRecord
from checker.messages import refusal

from .server import CALL_TOOL, SEARCH_TOOL, build_server, error_result, gateway_tools, json_result
from .errors import GatewayError
from .upstreams import Upstream, UpstreamSpec, UpstreamUnavailable

log = logging.getLogger("toolsift.mcp")

SEP = "__"  # server__tool, the qualified name a client may always use

def qualified(record: ApiRecord) -> str:
    return f"{record.namespace}{SEP}{record.name}"


class Gateway:
    """Upstream connections + catalog + router, and the MCP server that exposes them.

    Use as ``async with Gateway(specs) as gw:`` (connects the upstreams in the
    background), then serve ``gw.build_server()``; `search` and `call_tool` are the
    same operations without MCP around them.
    """

    def __init__(self, specs: Iterable[UpstreamSpec] = (), *, db_path: str | Path | None = None,
                 pinned: Sequence[str] = (), method: str | None = None, k: int = 5, model: str | None = None,
                 cache_dir: str | Path | None = None, start_timeout: float = 30.0,
                 call_timeout: float = 120.0) -> None:
        self.upstreams = {s.name: Upstream(s, self._on_change, start_timeout=start_timeout,
                                           call_timeout=call_timeout) for s in specs}
        # Without --db the catalog lives in memory: a gateway must never rewrite the
        # namespaces of a user's main catalog by accident.
        self.catalog = Catalog(str(db_path) if db_path else ":memory:")
        self.pinned_requested = list(pinned)
        self.method, self.default_k, self.model, self.cache_dir = method, k, model, cache_dir
        self.namespaces: set[str] = set(self.upstreams)
        self.warnings: list[str] = []
        self.ready = anyio.Event()
        self._index_lock = anyio.Lock()  # a list_changed during start-up must not install an older index
        self.router: Any = None
        self._by_qualified: dict[str, ApiRecord] = {}
        self._by_name: dict[str, list[ApiRecord]] = {}
        self.pinned: list[ApiRecord] = []
        self._tg: Any = None

    # -- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> "Gateway":
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        for upstream in self.upstreams.values():
            self._tg.start_soon(upstream.run)
        self._tg.start_soon(self._start)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for upstream in self.upstreams.values():
            upstream.stop()
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(*exc)
        self.catalog.close()

    async def _start(self) -> None:
        try:
            for upstream in self.upstreams.values():
                await upstream.settled.wait()
            async with self._index_lock:
                for upstream in self.upstreams.values():
                    if upstream.status == "ready":
                        self._sync(upstream.name, upstream.tools)
                await self._reindex()
        except Exception as exc:  # noqa: BLE001 - serve what we can; search_tools reports the problem
            self._warn(f"indexing the upstream tools failed: {type(exc).__name__}: {exc}")
        finally:
            self.ready.set()

    async def wait_ready(self) -> None:
        await self.ready.wait()

    async def _on_change(self, upstream: Upstream) -> None:
        """notifications/tools/list_changed: re-sync that server's namespace and re-index."""
        try:
            async with self._index_lock:
                report = self._sync(upstream.name, upstream.tools)
                log.info("upstream %s changed its tools: %s", upstream.name, report.to_dict())
                if report.changed:
                    await self._reindex()
        except Exception as exc:  # noqa: BLE001 - keep serving the previous index
            self._warn(f"re-indexing {upstream.name!r} after a tools/list_changed failed: {exc}")

    # -- catalog and index -----------------------------------------------------------
    def ingest(self, server: str, tools: Sequence[dict[str, Any]]) -> SyncReport:
        """Load a server's tools (as ``tools/list`` items) without a live connection.

        Used for static catalogs; call `reindex()` afterwards.
        """
        self.namespaces.add(server)
        return self._sync(server, tools)

    def _sync(self, server: str, tools: Sequence[dict[str, Any]]) -> SyncReport:
        records, skipped = records_from_mcp_tools(server, tools)
        for line in skipped:
            self._warn(f"skipped invalid tool: {line}")
        return self.catalog.sync(records, namespaces=[server])

    async def _reindex(self) -> None:
        records = self.catalog.records(sorted(self.namespaces)) if self.namespaces else []
        router = await anyio.to_thread.run_sync(self._build_router, records)
        self._install(records, router)

    def reindex(self) -> None:
        """Synchronous re-index (for callers outside an event loop)."""
        records = self.catalog.records(sorted(self.namespaces)) if self.namespaces else []
        self._install(records, self._build_router(records))

    def _build_router(self, records: list[ApiRecord]) -> Any:
        if not records:
            return None
        from router.engine import Router

        if self.router is not None:  # same model and embedding cache: only new tools get encoded
            router = self.router.with_records(records)
        else:
            kwargs: dict[str, Any] = {"model": self.model}
            if self.cache_dir is not None:
                kwargs["cache_dir"] = self.cache_dir
            router = Router.from_records(records, **kwargs)
        if self.method != "bm25":
            router.dense_index()  # embed now, in the background, not on the client's first search
        return router

    def _install(self, records: list[ApiRecord], router: Any) -> None:
        self.router = router
        self._by_qualified = {qualified(r): r for r in records}
        by_name: dict[str, list[ApiRecord]] = {}
        for rec in records:
            by_name.setdefault(rec.name, []).append(rec)
        self._by_name = by_name
        self.pinned = []
        for name in self.pinned_requested:
            rec = self._by_qualified.get(name) or _only(by_name.get(name))
            if rec is None:
                self._warn(f"pinned tool {name!r} is not offered by any available server")
            elif rec not in self.pinned:
                self.pinned.append(rec)
        for warning in getattr(router, "warnings", None) or ():
            self._warn(str(warning))

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            log.warning("%s", message)

    def _down(self) -> list[str]:
        return sorted(n for n, u in self.upstreams.items() if u.status != "ready")

    # -- search_tools ----------------------------------------------------------------
    def search(self, query: str, k: int | None = None) -> dict[str, Any]:
        """The best tools for ``query`` (only from servers that are up), with scores and why."""
        if not isinstance(query, str) or not query.strip():
            raise GatewayError("search_tools: 'query' must be a non-empty string")
        k = self.default_k if k is None else k
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 50:
            raise GatewayError("search_tools: 'k' must be an integer from 1 to 50")
        out: dict[str, Any] = {"query": query, "k": k, "tools": []}
        down = self._down()
        if self.router is not None:
            kwargs: dict[str, Any] = {"k": k}
            if self.method:
                kwargs["method"] = self.method
            indexed_down = [n for n in down if n in self.router.namespaces()]
            if indexed_down:  # tools a previous run stored for a server that is down now
                kwargs["exclude_namespaces"] = indexed_down
            for sel in self.router.select(query, **kwargs):
                out["tools"].append(_describe(sel))
        if self.router is None and self.warnings:
            out["warnings"] = list(self.warnings)
        if down:
            out["unavailable_servers"] = {n: self.upstreams[n].error or self.upstreams[n].status for n in down}
        return out

    # -- call_tool -------------------------------------------------------------------
    def resolve(self, name: str) -> ApiRecord:
        """The record a (qualified or bare) name refers to; GatewayError explains why not."""
        if not isinstance(name, str) or not name:
            raise GatewayError("call_tool: 'name' must be a non-empty string")
        rec = self._by_qualified.get(name)
        if rec is not None:
            return rec
        server, sep, tool = name.partition(SEP)
        if sep and server in self.upstreams and self.upstreams[server].status != "ready":
            up = self.upstreams[server]
            raise GatewayError(f"server {server!r} is unavailable ({up.error or up.status}); "
                               f"tool {tool!r} cannot be called now")
        matches = self._by_name.get(name) or []
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise GatewayError(f"tool name {name!r} is ambiguous: several servers have it; use one of "
                               + ", ".join(qualified(r) for r in matches))
        raise LookupError(name)

    async def call_tool(self, name: str, arguments: Any = None) -> Any:
        """Check, then forward one call; always returns an MCP `CallToolResult`."""
        from checker.calls import check_calls

        try:
            arguments = _arguments(arguments)
            record = self.resolve(name)
        except GatewayError as exc:
            return error_result(str(exc))
        except LookupError:
            verdict = check_calls([{"name": name, "arguments": arguments}], functions=self._functions())
            return error_result(_verdict_message(name, verdict, self._nearest(name, verdict)))
        verdict = check_calls([{"name": record.name, "arguments": arguments}], functions=[record])
        if not verdict.ok:
            return error_result(_verdict_message(qualified(record), verdict, []))
        upstream = self.upstreams.get(record.namespace)
        if upstream is None:
            return error_result(f"tool {qualified(record)!r} comes from a static catalog; no server to call")
        try:
            return await upstream.call(record.name, arguments)
        except UpstreamUnavailable as exc:
            return error_result(f"{exc}; the other servers are still available")

    def _functions(self) -> list[dict[str, Any]]:
        """Every callable tool, under the name a client would use for it."""
        out = []
        for qname, rec in self._by_qualified.items():
            name = rec.name if len(self._by_name.get(rec.name, ())) == 1 else qname
            out.append(rec.to_openai_tool(name=name)["function"])
        return out

    def _nearest(self, name: str, verdict: Any) -> list[str]:
        suggestions = list(getattr(verdict, "suggestions", []) or [])
        if suggestions:
            return suggestions
        from checker.suggest import suggest

        near = suggest(name, [f["name"] for f in self._functions()], n=3)
        if near or self.router is None:
            return near
        # No similar spelling: the tools whose descriptions best match the words of the name.
        words = re.sub(r"[_\W]+", " ", name).strip()
        return [t["name"] for t in self.search(words, 3)["tools"]] if words else []

    def list_tools(self) -> list[Any]:
        """The gateway's own tools: search_tools, call_tool and the pinned tools."""
        return gateway_tools([(qualified(r), r.description, r.parameters) for r in self.pinned])

    def build_server(self) -> Any:
        return build_server(self)

    async def handle_call(self, name: str, arguments: dict[str, Any] | None) -> Any:
        """Dispatch one call the gateway's client made to one of the gateway's own tools."""
        await self.ready.wait()
        try:
            return await self._dispatch(name, arguments or {})
        except Exception as exc:  # noqa: BLE001 - a gateway bug must reach the client as a tool error
            log.exception("gateway error while serving %r", name)
            return error_result(f"gateway error while serving {name!r}: {type(exc).__name__}: {exc}")

    async def _dispatch(self, name: str, args: dict[str, Any]) -> Any:
        if name == SEARCH_TOOL:
            try:
                found = self.search(args.get("query"), args.get("k"))
            except GatewayError as exc:
                return error_result(str(exc))
            return json_result(found)
        if name == CALL_TOOL:
            return await self.call_tool(args.get("name"), args.get("arguments"))
        if any(qualified(r) == name for r in self.pinned):
            return await self.call_tool(name, args)
        return error_result(f"unknown tool {name!r}: this gateway offers {SEARCH_TOOL}, {CALL_TOOL}"
                            + "".join(f", {qualified(r)}" for r in self.pinned))

    def status(self) -> dict[str, Any]:
        return {"servers": [u.info() for u in self.upstreams.values()], "tools": len(self._by_qualified),
                "pinned": [qualified(r) for r in self.pinned], "warnings": list(self.warnings)}


def _only(records: list[ApiRecord] | None) -> ApiRecord | None:
    return records[0] if records and len(records) == 1 else None


def _arguments(arguments: Any) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):  # some clients send the arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise GatewayError(f"call_tool: 'arguments' is not valid JSON ({exc.msg})") from None
    if not isinstance(arguments, dict):
        raise GatewayError(f"call_tool: 'arguments' must be an object, got {type(arguments).__name__}")
    return arguments


def _describe(sel: Any) -> dict[str, Any]:
    rec = sel.record
    why: dict[str, Any] = {"reason": sel.reason}
    if sel.matched_terms:
        why["matched_terms"] = list(sel.matched_terms)
    if sel.bm25_score is not None:
        why["bm25_score"] = round(float(sel.bm25_score), 4)
    if sel.dense_score is not None:
        why["dense_score"] = round(float(sel.dense_score), 4)
    return {"name": qualified(rec), "server": rec.namespace, "tool": rec.name, "description": rec.description,
            "input_schema": rec.parameters, "score": round(float(sel.score), 4), "rank": sel.rank, "why": why}


def _verdict_message(name: str, verdict: Any, nearest: list[str]) -> str:
    return refusal(f"call to {name!r} not forwarded", verdict, nearest,
                   "Use search_tools to find tools and their input schemas.")


