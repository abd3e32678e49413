"""A small real MCP server (stdio): arithmetic tools.
Run: python -m tests.support.mcp_servers.calculator
"""
from __future__ import annotations

import math

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("calculator", log_level="ERROR")
_served = {"calls": 0}  # lets tests prove that a rejected call never reached this server


def _count() -> None:
    _served["calls"] += 1


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers and return the sum."""
    _count()
    return a + b


@server.tool()
def multiply(a: float, b: float) -> float:
    """Multiply two numbers and return the product."""
    _count()
    return a * b


@server.tool()
def square_root(x: float) -> float:
    """Square root of a non-negative number."""
    _count()
    if x < 0:
        raise ToolError("square_root needs x >= 0")
    return math.sqrt(x)


@server.tool()
def calls_served() -> int:
    """How many arithmetic calls this server has answered so far."""
    return _served["calls"]


if __name__ == "__main__":
    server.run()
