"""A small real MCP server (stdio) whose tools have the names given on the command line.

    python named.py LABEL NAME [NAME ...] [--list-twice NAME] [--list-twice-edited NAME]

Every tool answers ``LABEL:NAME`` (so a test sees which server ran a call) and takes one
optional string argument ``note``. Names may be anything a server could send, including
``bank__transfer`` or ``_b``: the gateway's qualified names must stay unambiguous for them.
``--list-twice NAME`` makes ``tools/list`` carry NAME a second time, identical (as a
paginator that repeats an item would); ``--list-twice-edited NAME`` repeats it with another
description. Both are malformed lists, as buggy servers send them.
"""
from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer


class _Server(MCPServer):
    twice: list[str] = []
    edited: list[str] = []

    async def list_tools(self):  # type: ignore[override]
        tools = await super().list_tools()
        extra = [t for t in tools if t.name in self.twice]
        extra += [t.model_copy(update={"description": f"{t.description} (listed again)"})
                  for t in tools if t.name in self.edited]
        return tools + extra


def _take(argv: list[str], flag: str) -> list[str]:
    values = []
    while flag in argv:
        i = argv.index(flag)
        values.append(argv[i + 1])
        del argv[i:i + 2]
    return values


def _echo(label: str, name: str):
    def tool(note: str = "") -> str:
        return f"{label}:{name}"

    return tool


def main(argv: list[str]) -> None:
    twice, edited = _take(argv, "--list-twice"), _take(argv, "--list-twice-edited")
    label, names = argv[0], argv[1:]
    server = _Server(label, log_level="ERROR")
    server.twice, server.edited = twice, edited
    for name in names:
        server.add_tool(_echo(label, name), name=name, description=f"The {name} operation of {label}.")
    server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
