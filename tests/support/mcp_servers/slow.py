"""A small real MCP server (stdio) that does not answer at all for DELAY seconds.

    python slow.py DELAY

It says so on stderr, sleeps without reading its input (a large DELAY is a hung server),
then serves one tool, `late_hello(name)`.
"""
from __future__ import annotations

import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("slow", log_level="ERROR")


@server.tool()
def late_hello(name: str) -> str:
    """Greet someone, from a server that started late."""
    return f"hello {name}, sorry I am late"


if __name__ == "__main__":
    delay = float(sys.argv[1])
    print(f"slow: warming up for {delay:g} s", file=sys.stderr, flush=True)
    time.sleep(delay)
    server.run()
