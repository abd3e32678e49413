"""The retrieval core's errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class RouterError(ToolsiftError):
    """Bad query or control, unknown namespace/tool, or an unusable index."""
