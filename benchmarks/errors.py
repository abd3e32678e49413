"""The benchmarks' errors (see `apidb.errors` for the whole tree)."""
from __future__ import annotations

from apidb.errors import ToolsiftError


class BenchmarkError(ToolsiftError):
    """A benchmark could not run (module missing, bad option, a server that did not start)."""


class DatasetError(BenchmarkError):
    """A benchmark dataset is unknown, or its files are missing or malformed."""


class MethodError(BenchmarkError):
    """A method is unknown, or the router does not offer the option it needs."""
