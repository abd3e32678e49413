"""A small MCP server (stdio) for examples/mcp_servers.json: notes kept in memory.

    toolsift serve mcp --config examples/mcp_servers.json     # from the repository root
"""
from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes", log_level="ERROR")
NOTES: dict[str, str] = {}


@server.tool()
def add_note(title: str, text: str) -> str:
    """Save a note under a title (replaces a note with the same title)."""
    NOTES[title] = text
    return f"saved {title!r}"


@server.tool()
def search_notes(words: str) -> list[str]:
    """Titles of the notes whose title or text contains every given word."""
    ws = words.lower().split()
    return [t for t, x in NOTES.items() if all(w in (t + " " + x).lower() for w in ws)]


if __name__ == "__main__":
    server.run()
