"""A small real MCP server (stdio) that needs an environment variable, as a server that
needs an API key does.

    python needs_env.py VAR

It writes "needs_env: starting" to stderr. Without $VAR it writes "needs_env: VAR is not
set" to stderr and exits with status 1, before any MCP traffic (the way real servers quit
on a missing key). With it, it serves `secret_length()`: how long the value is (never the
value itself).
"""
from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("needs_env", log_level="ERROR")


if __name__ == "__main__":
    var = sys.argv[1]
    print("needs_env: starting", file=sys.stderr, flush=True)
    if not os.environ.get(var):
        print(f"needs_env: {var} is not set", file=sys.stderr, flush=True)
        sys.exit(1)

    @server.tool()
    def secret_length() -> str:
        """How many characters the secret has."""
        return f"{var} has {len(os.environ[var])} characters"

    server.run()
