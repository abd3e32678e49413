"""The MCP gateway's errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class GatewayError(ToolsiftError):
    """A bad gateway config, or an upstream tool that cannot be reached or called."""
