"""A small real MCP server (stdio) that dies in the middle of a tool call.

`ping` answers normally; `crash_now` kills the process before replying, as a
segfaulting or OOM-killed upstream would.
Run: python -m tests.support.mcp_servers.flaky
"""
from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("flaky", log_level="ERROR")


@server.tool()
def ping(message: str) -> str:
    """Echo a message back (health check)."""
    return f"pong: {message}"


@server.tool()
def crash_now(reason: str = "") -> str:
    """Start a long job (the process dies before it answers)."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
