"""What the client wrapper did to one request (`Annotation`), attached to the answer it returns
as ``.toolsift``: to a completion when it comes back, to a stream once the stream ends.
Split from openai_client.py, whose calls and streams both build one from their `Exchange`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .checks import CallCheck, Exchange


@dataclass
class Annotation:
    """What toolsift did to one request; attached to the response as ``.toolsift``."""

    selected: list[dict]
    tools_in: int
    tools_out: int
    injected: bool = False
    checks: list[CallCheck] = field(default_factory=list)
    repairs: int = 0
    route: str = ""  # what routing did, as in the proxy's x-toolsift-route header

    @property
    def verdicts(self) -> list[Any]:
        return [c.verdict for c in self.checks]

    @property
    def ok(self) -> bool:
        return all(c.verdict.ok for c in self.checks)

    def to_dict(self) -> dict:
        return {"selected": self.selected, "tools_in": self.tools_in, "tools_out": self.tools_out,
                "injected": self.injected, "verdicts": [c.to_dict() for c in self.checks], "repairs": self.repairs,
                "route": self.route}


def _annotation(ex: Exchange) -> Annotation:
    r = ex.routed
    return Annotation(r.selected, r.tools_in, r.tools_out, r.injected, ex.checks, ex.repairs, r.route_header())


def _annotate(obj: Any, ex: Exchange) -> Any:
    object.__setattr__(obj, "toolsift", _annotation(ex))  # not a model field: stays out of model_dump()
    return obj
