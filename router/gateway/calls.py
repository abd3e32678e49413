"""call_tool: a name resolved (under `router.gateway.names`, among what the client's tenant may
see), the call checked against that tool's schema, then forwarded to its server; an unknown tool
or bad arguments come back as a tool error naming the nearest valid tools. A valid call to a
tool a recent search offered is one usage-log line (opt-in). Mixed into `Gateway`
(router.gateway.gateway), whose upstreams, index, views and searches it reads; split from it to
keep modules under ~400 lines.
"""
from __future__ import annotations

import logging
import re
from typing import Any

from apidb.record import ApiRecord
from checker.messages import refusal

from .errors import GatewayError
from .names import qualified
from .server import call_arguments, error_result
from .upstreams import UpstreamUnavailable

log = logging.getLogger("toolsift.mcp")


class ToolNotFound(LookupError):
    """No tool has this name; ``detail`` says what the name would have meant, if anything."""

    def __init__(self, name: str, detail: str | None = None) -> None:
        super().__init__(name)
        self.name, self.detail = name, detail


class ToolCalls:
    """`Gateway`'s call_tool and the name resolution behind it (see the module doc)."""

    def resolve(self, name: str, tenant: Any = None) -> ApiRecord:
        """The record a (qualified or bare) name refers to, under `router.gateway.names`.

        Raises GatewayError (unavailable server, ambiguous name, tool withheld) or
        ToolNotFound. A name scoped to a server is looked up on that server only.
        """
        if not isinstance(name, str) or not name:
            raise GatewayError("call_tool: 'name' must be a non-empty string")
        directory = self.views.directory(self.index.directory, tenant)  # a tenant's servers only
        scoped = directory.scope(name)
        if scoped is not None:
            server, tool = scoped
            upstream = self.upstreams.get(server)
            if upstream is not None and upstream.status != "ready":
                raise GatewayError(f"server {server!r} is unavailable ({self._why_down(server)}); "
                                   f"tool {tool!r} cannot be called now")
            rec = directory.get(server, tool)
            if rec is not None:
                return rec
            withheld = directory.withheld(server, tool)
            if withheld:
                raise GatewayError(withheld)
            raise ToolNotFound(name, f"server {server!r} has no tool {tool!r}")
        matches = directory.named(name)
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise GatewayError(f"tool name {name!r} is ambiguous: several servers have it; use one of "
                               + ", ".join(qualified(r) for r in matches))
        withheld_on = directory.withheld_anywhere(name)
        if withheld_on:
            raise GatewayError("; ".join(withheld_on))
        raise ToolNotFound(name)

    async def call_tool(self, name: str, arguments: Any = None, tenant: Any = None) -> Any:
        """Check, then forward one call (to a tool ``tenant`` may see); always returns an MCP
        `CallToolResult`."""
        from checker.calls import check_calls

        try:
            arguments = call_arguments(arguments)
            record = self.resolve(name, tenant)
        except GatewayError as exc:
            return error_result(str(exc))
        except ToolNotFound as missing:
            verdict = check_calls([{"name": name, "arguments": arguments}], functions=self._functions(tenant))
            return error_result(_verdict_message(name, verdict, self._nearest(name, verdict, tenant), missing.detail))
        verdict = check_calls([{"name": record.name, "arguments": arguments}], functions=[record])
        if not verdict.ok:
            return error_result(_verdict_message(qualified(record), verdict, []))
        self._log_use(record, verdict.verdict, tenant)
        upstream = self.upstreams.get(record.namespace)
        if upstream is None:
            return error_result(f"tool {qualified(record)!r} comes from a static catalog; no server to call")
        try:
            return await upstream.call(record.name, arguments)
        except UpstreamUnavailable as exc:
            return error_result(f"{exc}; the other servers are still available")

    def _log_use(self, record: ApiRecord, verdict: str, tenant: Any = None) -> None:
        """A valid call to a tool a recent search offered: one usage-log line (opt-in)."""
        if self.usage_log is None:
            return
        name = qualified(record)
        who = _tenant_name(tenant)
        for searcher, query, offered in reversed(self._searches):
            if searcher == who and name in offered:
                try:
                    self.usage_log.record(source="gateway", query=query, offered=sorted(offered), called=name,
                                          verdict=verdict, record_id=record.id, route="search_tools",
                                          tenant=who or None)
                except OSError as exc:  # a full disk must not fail the call
                    log.warning("usage log: %s", exc)
                return

    def _functions(self, tenant: Any = None) -> list[dict[str, Any]]:
        """Every tool ``tenant`` may call, under the shortest name that reaches it."""
        directory = self.views.directory(self.index.directory, tenant)
        return [rec.to_openai_tool(name=directory.callable_name(rec))["function"] for rec in directory.records]

    def _nearest(self, name: str, verdict: Any, tenant: Any = None) -> list[str]:
        suggestions = list(getattr(verdict, "suggestions", []) or [])
        if suggestions:
            return suggestions
        from checker.suggest import suggest

        near = suggest(name, [f["name"] for f in self._functions(tenant)], n=3)
        if near or self.router is None:
            return near
        # No similar spelling: the tools whose descriptions best match the words of the name.
        words = re.sub(r"[_\W]+", " ", name).strip()
        return [t["name"] for t in self.search(words, 3, tenant)["tools"]] if words else []


def _tenant_name(tenant: Any) -> str:
    return getattr(tenant, "name", "") if tenant is not None else ""


def _verdict_message(name: str, verdict: Any, nearest: list[str], detail: str | None = None) -> str:
    subject = f"call to {name!r} not forwarded" + (f": {detail}" if detail else "")
    return refusal(subject, verdict, nearest, "Use search_tools to find tools and their input schemas.")
