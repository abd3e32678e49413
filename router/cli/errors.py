"""The command line's own errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class CliError(ToolsiftError):
    """A command-line value that cannot work: an unknown record or namespace, a bad option value."""
