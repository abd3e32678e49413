"""router.gateway: many MCP servers behind two meta-tools, ``search_tools`` and ``call_tool``.

    specs = load_config("mcp.json")            # the mcpServers shape
    async with Gateway(specs) as gw:           # connects the upstreams in the background
        await serve_stdio(gw)                  # or serve_http(gw, host, port)

``toolsift serve mcp`` does exactly this. Everything else in this package is internal.
"""
from .errors import GatewayError
from .gateway import Gateway
from .server import serve_http, serve_stdio
from .upstreams import UpstreamSpec, load_config, parse_config

__all__ = ["Gateway", "GatewayError", "UpstreamSpec", "load_config", "parse_config", "serve_http", "serve_stdio"]
