"""The middleware's errors: the wrapper, the exchange and the proxy (see `apidb.errors`)."""
from __future__ import annotations

from typing import Any

from apidb.errors import ToolsiftError


class MiddlewareError(ToolsiftError):
    """Base of the errors the OpenAI wrapper and the proxy raise on purpose."""


class RequestError(MiddlewareError):
    """The client's request is malformed (the proxy answers 400 with this message)."""


class WireError(RequestError):
    """The request body is not a well-formed Chat Completions request."""


class HallucinatedCallError(MiddlewareError):
    """The model answered with tool calls that fail the checker (``on_hallucination="raise"``)."""

    def __init__(self, checks: list[Any], response: Any = None) -> None:
        self.checks, self.response = checks, response
        bad = [c for c in checks if not c.verdict.ok]
        detail = "; ".join(f"choice {c.choice}: {c.verdict.verdict}"
                           + (f" ({c.verdict.defects[0].message})" if c.verdict.defects else "") for c in bad)
        super().__init__(f"model made invalid tool calls: {detail}")
