"""The checker's errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class CheckerError(ToolsiftError):
    """A check cannot run as asked: unknown mode, missing parser backend, unusable catalog."""


class AuditError(CheckerError):
    """A response or gold file cannot be read."""
