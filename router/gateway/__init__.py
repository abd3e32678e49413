"""router.gateway: many MCP servers behind two meta-tools, ``search_tools`` and ``call_tool``.

    specs = load_config("mcp.json")            # the mcpServers shape
    await serve_stdio(Gateway(specs))          # or serve_http(Gateway(specs), host, port)

`serve_stdio` and `serve_http` enter the gateway themselves (it connects the upstreams and
loads the encoder in the background); `serve_http` binds its port first (`listen_socket`),
so a busy port fails before anything starts. ``toolsift serve mcp`` does exactly this.
``async with Gateway(specs) as gw:`` gives the same gateway without a server face
(``gw.search``, ``gw.call_tool``, ``gw.status()``, ``gw.build_server()``).

Tool names (``server__tool``, or a bare name only one server has) follow
`router.gateway.names`. Everything else in this package is internal.
"""
from .config import UpstreamSpec, load_config, parse_config
from .errors import GatewayError
from .gateway import Gateway
from .server import listen_socket, serve_http, serve_stdio

__all__ = ["Gateway", "GatewayError", "UpstreamSpec", "listen_socket", "load_config", "parse_config",
           "serve_http", "serve_stdio"]
