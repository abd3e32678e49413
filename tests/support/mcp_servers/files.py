"""A small real MCP server (stdio): lists and reads files under one root directory.

The root is $FILES_ROOT (set through the `env` block of the gateway config).
Run: FILES_ROOT=/some/dir python -m tests.support.mcp_servers.files
"""
from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("files", log_level="ERROR")


def _root() -> Path:
    return Path(os.environ.get("FILES_ROOT", ".")).resolve()


def _inside(rel: str) -> Path:
    path = (_root() / rel).resolve()
    if _root() not in (path, *path.parents):
        raise ToolError(f"{rel!r} is outside the served directory")
    return path


@server.tool()
def list_directory(path: str = ".") -> list[str]:
    """List the files and folders in a directory of the served file tree."""
    target = _inside(path)
    if not target.is_dir():
        raise ToolError(f"{path!r} is not a directory")
    return sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())


@server.tool()
def read_text_file(path: str) -> str:
    """Read a UTF-8 text file from the served file tree."""
    target = _inside(path)
    if not target.is_file():
        raise ToolError(f"{path!r} is not a file")
    return target.read_text(encoding="utf-8")


if __name__ == "__main__":
    server.run()
