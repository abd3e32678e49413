"""Small real MCP servers (official `mcp` SDK) that the gateway and loop tests start.

weather (geocode_city, get_weather_by_coords; stdio or --http PORT), calculator,
files (root from $FILES_ROOT), changing (sends tools/list_changed), flaky (dies mid-call).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def stdio_entry(name: str, **env: str) -> dict[str, Any]:
    """An `mcpServers` entry that runs one of these servers over stdio."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(HERE / f"{name}.py")]}
    if env:
        entry["env"] = dict(env)
    return entry
