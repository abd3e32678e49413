"""The MCP gateway's door and views (issue 17): which upstream servers a client may see.

`toolsift serve mcp --transport http --tenants FILE` reads the tenants file of `router.tenancy.tenants`;
a tenant's namespaces are server names of the `mcpServers` config. Every HTTP request must carry
a tenant's key, as ``X-Toolsift-Key: KEY`` or ``Authorization: Bearer KEY`` (what MCP clients'
``headers`` settings and bearer-token options send; router.tenancy.keys reads it); anything else is
answered 401 before the MCP layer sees it (`KeyCheck`), and a session belongs to the tenant that
opened it. The gateway does not forward client headers to upstream servers, so
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
from collections import OrderedDict
from typing import Any

from ..errors import TenancyError
from .keys import UNAUTHORIZED, presented_key
from .scope import ScopedRouter
from .tenants import Tenant, Tenants

# The gateway's name directory (router.gateway.names.Directory): ``restricted(namespaces)`` is
# the same directory holding only those servers' tools.
Directory = Any


SESSION_HEADER = "mcp-session-id"
MAX_SESSIONS = 65_536  # session owners remembered (the oldest forgotten first)


class KeyCheck:
    """ASGI middleware: an HTTP request without a tenant's key gets 401 (a JSON-RPC error body).

    It also binds each MCP session to the tenant that opened it: the session id the server hands
    out (``Mcp-Session-Id``) is remembered with its tenant's name, and another tenant's request
    naming that session (a POST, GET or DELETE) is answered 404, exactly as an unknown session is,
    so one tenant can neither use, end nor learn of another's session."""

    def __init__(self, app: Any, tenants: Tenants) -> None:
        self.app, self.tenants = app, tenants
        self._owners: OrderedDict[str, str] = OrderedDict()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import Headers

        headers = Headers(scope=scope)
        tenant = self.tenants.identify(presented_key(headers))
        if tenant is None:
            await _json_error(send, 401, -32001, UNAUTHORIZED,
                              [(b"www-authenticate", b'Bearer realm="toolsift-gateway"')])
            return
        session = headers.get(SESSION_HEADER)
        if session is not None and self._owners.get(session, tenant.name) != tenant.name:
            await _json_error(send, 404, -32600, "Session not found")  # the words of an unknown session
            return
        if session is not None and scope.get("method") == "DELETE":
            self._owners.pop(session, None)

        async def bind(message: dict) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers") or []:
                    if name.lower() == SESSION_HEADER.encode():
                        sid = value.decode("latin-1")
                        if sid not in self._owners:
                            self._owners[sid] = tenant.name
                            while len(self._owners) > MAX_SESSIONS:
                                self._owners.popitem(last=False)
            await send(message)

        await self.app(scope, receive, bind)


async def _json_error(send: Any, status: int, code: int, message: str,
                      extra: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *extra]})
    await send({"type": "http.response.body", "body": body})


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
