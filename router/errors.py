"""Errors the router raises on purpose (the CLI prints them as one line, exit 2)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class RouterError(ToolsiftError):
    """Bad query or control, unknown namespace/tool, or an unusable index."""
