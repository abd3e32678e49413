"""What a run of the reference loop records: each call, each round, and the result."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CallTrace:
    round: int
    id: str
    name: str
    arguments: Any
    verdict: str | None = None   # the checker's verdict ("valid", "hallucinated_tool", ...)
    executed: bool = False
    result: str = ""
    error: str | None = None


@dataclass
class RoundTrace:
    round: int
    tools: list[str]              # tool names offered in this request
    request_had_tools: bool
    reply: str | None = None
    calls: int = 0
    note: str | None = None


@dataclass
class LoopResult:
    answer: str
    stop_reason: str
    rounds: int
    calls: list[CallTrace] = field(default_factory=list)
    trace: list[RoundTrace] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    found_tools: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def verdicts(self) -> list[str | None]:
        return [c.verdict for c in self.calls]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("messages")
        out["verdicts"] = self.verdicts
        return out
