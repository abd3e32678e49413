"""The gateway's own ``notifications/tools/list_changed`` to its clients (issue 17).

Upstream changes reach the gateway as list_changed from a server (`upstreams.Upstream` re-lists
it, `tool_index.ToolIndex` syncs its namespace by content hash). What the gateway's *own* clients
see in ``tools/list`` is search_tools, call_tool and the pinned tools; when a pinned tool appears,
goes away or changes (its server joined late, or changed its list), the gateway tells them, the
way each protocol era expects it:

* 2026-era clients open a ``subscriptions/listen`` stream: the event goes on the bus of their view
  (`mcp.server.subscriptions`, one bus per tenant, so a tenant hears only of its own tools);
* handshake-era clients get the notification on their connection's standalone channel; the
  gateway remembers each connection (weakly) from its requests.

A view is what one client may see: ``""`` without tenants, else the tenant's name.
"""
from __future__ import annotations

import logging
import weakref
from typing import Any

log = logging.getLogger("toolsift.mcp")


class ClientNotifier:
    """Who listens to which view, and what each view's ``tools/list`` showed last."""

    def __init__(self) -> None:
        self._listeners: dict[str, tuple[Any, Any]] = {}  # view -> (bus, ListenHandler)
        self._connections: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._shown: dict[str, Any] = {}

    def _bus(self, view: str) -> tuple[Any, Any]:
        if view not in self._listeners:
            from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

            bus = InMemorySubscriptionBus()
            self._listeners[view] = (bus, ListenHandler(bus))
        return self._listeners[view]

    async def listen(self, ctx: Any, params: Any, view: str) -> Any:
        """Serve one ``subscriptions/listen`` request on the bus of ``view``."""
        return await self._bus(view)[1](ctx, params)

    def seen(self, ctx: Any, view: str) -> None:
        """Remember a handshake-era client's connection (2026-era change events ride listen streams)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
            return
        # ctx.session lives for one request; its connection lives as long as the client. mcp 2.3
        # gives a handler no public way to it (`Context.connection` is not what handlers get).
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
        if connection is not None:
            self._connections[connection] = view

    async def show(self, lists: dict[str, Any]) -> list[str]:
        """Record what each view's ``tools/list`` shows now; notify the views whose list changed
        (a view seen for the first time is not a change). Returns those views."""
        changed = [view for view, shown in lists.items() if view in self._shown and self._shown[view] != shown]
        self._shown.update(lists)
        for view in changed:
            await self._notify(view)
        return changed

    async def _notify(self, view: str) -> None:
        from mcp.server.subscriptions import ToolsListChanged

        if view in self._listeners:
            await self._listeners[view][0].publish(ToolsListChanged())
        for connection, of in list(self._connections.items()):
            if of != view:
                continue
            try:
                await connection.send_tool_list_changed()
            except Exception as exc:  # noqa: BLE001 - a client that went away just stops hearing
                log.info("a client of the gateway did not take tools/list_changed (%s); forgetting it", exc)
                self._connections.pop(connection, None)
