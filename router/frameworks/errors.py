"""The framework adapters' errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class FrameworkError(ToolsiftError):
    """A tool that cannot become a catalog record, a registry that cannot route, or a
    framework extra that is not installed."""


class MissingExtraError(FrameworkError, ImportError):
    """A framework package is missing; the message names the extra that installs it.
    Also an ImportError, which is what code probing for an optional framework catches."""
