"""The MCP gateway's door and views (issue 17): which upstream servers a client may see.

`toolsift serve mcp --transport http --tenants FILE` reads the tenants file of `router.tenancy.tenants`;
a tenant's namespaces are server names of the `mcpServers` config. Every HTTP request must carry
a tenant's key, as ``X-Toolsift-Key: KEY`` or ``Authorization: Bearer KEY`` (what MCP clients'
``headers`` settings and bearer-token options send); anything else is answered 401 before the MCP
layer sees it (`KeyCheck`). The gateway does not forward client headers to upstream servers, so
the bearer can be the key itself.

For a tenant, the gateway is a gateway of its servers only: `search_tools` ranks among their
tools (the namespace filter applies before ranking), `call_tool` resolves names in a directory
that holds nothing else (`Directory.restricted`: another server's ``other__tool`` is an unknown
name, with suggestions from the tenant's own tools), pins, ``unavailable_servers`` and
``server_problems`` show its servers only. stdio has one client, the process that started the
gateway, so tenants need the HTTP transport.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import TenancyError
from .keys import UNAUTHORIZED, presented_key
from .scope import ScopedRouter
from .tenants import Tenant, Tenants

# The gateway's name directory (router.gateway.names.Directory): ``restricted(namespaces)`` is
# the same directory holding only those servers' tools.
Directory = Any


class KeyCheck:
    """ASGI middleware: an HTTP request without a tenant's key gets 401 (a JSON-RPC error body)."""

    def __init__(self, app: Any, tenants: Tenants) -> None:
        self.app, self.tenants = app, tenants

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            from starlette.datastructures import Headers

            if self.tenants.identify(presented_key(Headers(scope=scope))) is None:
                body = json.dumps({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32001, "message": UNAUTHORIZED}}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode()),
                                        (b"www-authenticate", b'Bearer realm="toolsift-gateway"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def tenant_of(ctx: Any, tenants: Tenants | None) -> Tenant | None:
    """The tenant of one MCP request (None without tenants). `KeyCheck` has let only tenants'
    requests through; a request that still has none is refused rather than shown everything."""
    if tenants is None:
        return None
    request = getattr(ctx, "request", None)
    tenant = tenants.identify(presented_key(getattr(request, "headers", None)))
    if tenant is None:
        raise TenancyError(UNAUTHORIZED)
    return tenant


class Views:
    """Each tenant's `Directory` and router, remade when the gateway's own change."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[Directory, Directory]] = {}
        self._routers: dict[str, tuple[Any, Any]] = {}

    def router(self, router: Any, tenant: Tenant | None) -> Any:
        """``router`` seen through the tenant's servers (`router.tenancy.scope.ScopedRouter`)."""
        if router is None or tenant is None or tenant.namespaces is None:
            return router
        made = self._routers.get(tenant.name)
        if made is None or made[0] is not router:

            made = (router, ScopedRouter(router, tenant.namespaces))
            self._routers[tenant.name] = made
        return made[1]

    def directory(self, directory: Directory, tenant: Tenant | None) -> Directory:
        if tenant is None or tenant.namespaces is None:
            return directory
        made = self._made.get(tenant.name)
        if made is None or made[0] is not directory:
            made = (directory, directory.restricted(tenant.namespaces))
            self._made[tenant.name] = made
        return made[1]


def sees(tenant: Tenant | None, server: str) -> bool:
    return tenant is None or tenant.sees(server)
