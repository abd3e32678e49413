"""The reference loop's errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class AgentError(ToolsiftError, ValueError):
    """A loop setting that cannot work (unknown mode or call format, no rounds), or a model
    response the loop cannot read. Also a ValueError, which is what callers caught before."""
