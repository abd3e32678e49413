"""The gateway's own MCP face: its tools' schemas, results, and the stdio / HTTP servers.

Split from `router.gateway.gateway` (which holds the upstreams, catalog and index; the checks: calls);
everything here imports `mcp` lazily.
"""
from __future__ import annotations

import json
import socket
from typing import Any, Protocol

from ..http_guard import HEADER_TIMEOUT, header_guarded_protocol
from ..stopping import terminate_cleanly
from .errors import GatewayError
from .names import qualified


class ServedGateway(Protocol):
    """What the MCP face needs of a gateway (`router.gateway.Gateway` is the one there is); a
    protocol, so this module never imports the gateway that imports it."""

    tenants: Any            # router.tenancy.tenants.Tenants, or None
    notifier: Any           # router.gateway.freshness.ClientNotifier
    async def wait_listed(self) -> None: ...  # until list_tools can answer
    def client_tenant(self, ctx: Any) -> Any: ...  # the tenant of one request (None without tenants)
    def list_tools(self, tenant: Any = None) -> list[Any]: ...
    async def handle_call(self, name: str, arguments: dict[str, Any] | None, tenant: Any = None) -> Any: ...
    def build_server(self) -> Any: ...
    async def __aenter__(self) -> Any: ...
    async def __aexit__(self, *exc: Any) -> None: ...

SEARCH_TOOL, CALL_TOOL = "search_tools", "call_tool"
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What you want to do, in words (e.g. 'weather at a place')."},
        "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5,
              "description": "How many tools to return."},
    },
    "required": ["query"],
}
CALL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "A tool name from search_tools: 'server__tool', or the bare "
                                                  "tool name when only one server has it."},
        "arguments": {"type": "object", "description": "The tool's arguments, matching its input schema."},
    },
    "required": ["name"],
}
INSTRUCTIONS = ("This gateway fronts several MCP servers. Call search_tools with what you want to do to find "
                "tools (names, descriptions, input schemas), then call_tool with a tool name and its arguments.")


def gateway_tools(pinned: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """search_tools, call_tool, then each pinned tool as (name, description, input schema)."""
    import mcp_types as types

    tools = [types.Tool(name=SEARCH_TOOL, description="Find the tools (from every connected MCP server) "
                        "that fit a task; returns their names, descriptions, input schemas, scores and why.",
                        input_schema=SEARCH_SCHEMA),
             types.Tool(name=CALL_TOOL, description="Call a tool found with search_tools. Arguments are "
                        "checked against the tool's schema before the call is forwarded.",
                        input_schema=CALL_SCHEMA)]
    for name, description, schema in pinned:
        tools.append(types.Tool(name=name, description=description,
                                input_schema=schema or {"type": "object", "properties": {}}))
    return tools


def build_server(gateway: ServedGateway) -> Any:
    """A low-level MCP `Server` exposing ``gateway``'s tools (to each client, its tenant's), which
    tells its clients when they change (router/gateway/freshness.py)."""
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.lowlevel.server import NotificationOptions
    from mcp.shared.exceptions import MCPError

    def tenant(ctx: Any) -> Any:
        try:
            return gateway.client_tenant(ctx)
        except GatewayError as exc:  # the HTTP face answers 401 first; this is the last line of defence
            raise MCPError(code=-32001, message=str(exc)) from None

    def view(who: Any) -> str:
        return who.name if who is not None else ""

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        who = tenant(ctx)
        await gateway.wait_listed()
        gateway.notifier.seen(ctx, view(who))
        return types.ListToolsResult(tools=gateway.list_tools(who))

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        who = tenant(ctx)
        gateway.notifier.seen(ctx, view(who))
        return await gateway.handle_call(params.name, params.arguments, who)

    async def on_listen(ctx: Any, params: Any) -> Any:
        return await gateway.notifier.listen(ctx, params, view(tenant(ctx)))

    class GatewayServer(Server):  # handshake-era clients learn that tools/list can change
        def create_initialization_options(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
            return super().create_initialization_options(notification_options or NotificationOptions(
                tools_changed=True), *args, **kw)

    return GatewayServer("toolsift-gateway", version=_version(), instructions=INSTRUCTIONS,
                         on_list_tools=on_list_tools, on_call_tool=on_call_tool, on_subscriptions_listen=on_listen)


def error_result(text: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def json_result(payload: dict[str, Any]) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
                                structured_content=payload, is_error=False)


def call_arguments(arguments: Any) -> dict[str, Any]:
    """call_tool's ``arguments``: an object (a JSON string of one is accepted too)."""
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


def describe_selection(sel: Any) -> dict[str, Any]:
    """One search_tools result: a router `Selection` under its qualified name, with why."""
    rec = sel.record
    # matched_terms always, empty when no word matched: a client reading it must not need a guard
    why: dict[str, Any] = {"reason": sel.reason, "matched_terms": list(sel.matched_terms or ())}
    if sel.bm25_score is not None:
        why["bm25_score"] = round(float(sel.bm25_score), 4)
    if sel.dense_score is not None:
        why["dense_score"] = round(float(sel.dense_score), 4)
    return {"name": qualified(rec), "server": rec.namespace, "tool": rec.name, "description": rec.description,
            "input_schema": rec.parameters, "score": round(float(sel.score), 4), "rank": sel.rank, "why": why}


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("toolsift")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        return "0"


async def serve_stdio(gateway: ServedGateway) -> None:
    from mcp.server.stdio import stdio_server

    async with gateway:
        server = gateway.build_server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def listen_socket(host: str = "127.0.0.1", port: int = 8765) -> socket.socket:
    """The HTTP gateway's bound socket. Bound before anything else starts, so that a busy
    port is one GatewayError, not a stack of task-group tracebacks after the upstreams and
    the model have been started for nothing."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise GatewayError(f"cannot listen on {host}:{port}: unknown host ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        # SO_REUSEADDR lets a restarted gateway take over a port in TIME_WAIT; a port that
        # another process is listening on is still refused.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise GatewayError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


async def serve_http(gateway: ServedGateway, host: str = "127.0.0.1", port: int = 8765,
                     sock: socket.socket | None = None, header_timeout: float = HEADER_TIMEOUT) -> None:
    """Serve ``gateway`` over streamable HTTP at ``http://host:port/mcp`` (or on ``sock``,
    already bound by `listen_socket`). A connection gets ``header_timeout`` seconds for each
    request's line and headers, then it is closed (`router.http_guard`): a client that sends half a
    header holds no socket for long."""
    import uvicorn

    sock = sock or listen_socket(host, port)  # before the gateway starts anything
    try:
        async with gateway:
            app = gateway.build_server().streamable_http_app(host=host)
            if gateway.tenants is not None:  # every HTTP request needs a tenant's key (router/tenancy/views.py)
                from router.tenancy.views import KeyCheck

                app = KeyCheck(app, gateway.tenants)
            config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                                    http=header_guarded_protocol(header_timeout))
            server = uvicorn.Server(config)
            with terminate_cleanly(server):
                await server.serve(sockets=[sock])
    finally:
        sock.close()
