"""The retrieval core's errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class RouterError(ToolsiftError):
    """Bad query or control, unknown namespace/tool, or an unusable index."""


class TenancyError(RouterError):
    """A key, tenants setting or namespace request that the tenancy rules refuse."""


class NamespaceRefused(TenancyError):
    """``X-Toolsift-Namespaces`` names a namespace the request's key may not see (403)."""
