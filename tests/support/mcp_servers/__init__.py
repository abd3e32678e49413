"""Small real MCP servers (official `mcp` SDK) that the gateway and loop tests start.

weather (geocode_city, get_weather_by_coords; stdio or --http PORT), calculator,
files (root from $FILES_ROOT), changing (adds, rewords and removes a tool, announcing each
change with tools/list_changed), flaky (dies mid-call), named (tools with any names given
on its command line; can list one twice), slow (answers only after a delay: a large one is
a hung server), needs_env (exits at start, saying why, without a variable).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def stdio_entry(name: str, *args: str, **env: str) -> dict[str, Any]:
    """An `mcpServers` entry that runs one of these servers over stdio (``args`` after the script)."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(HERE / f"{name}.py"), *args]}
    if env:
        entry["env"] = dict(env)
    return entry


def named_entry(label: str, *args: str) -> dict[str, Any]:
    """An `mcpServers` entry for ``named.py LABEL ARGS...`` (tool names and flags)."""
    return stdio_entry("named", label, *args)
