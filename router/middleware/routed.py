"""What routing decided for one request, and how the ways in say it: `RoutedRequest` (the body
to send upstream, the tools offered and why) and its ``x-toolsift-*`` headers, capped in size."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

__all__ = ["HEADER_LIMIT", "STATUSES", "RoutedRequest", "as_dict", "capped_json", "unrouted_header", "without_tools"]

HEADER_LIMIT = 4096  # bytes per x-toolsift-* header; proxies and servers reject huge headers


def as_dict(obj: Any) -> Any:
    """Plain JSON data from openai pydantic objects (messages, responses) or dicts."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    if isinstance(obj, dict):
        return {k: as_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_dict(v) for v in obj]
    return obj


# What routing did with a request (the first word of ``x-toolsift-route``).
STATUSES = {
    "routed": "more tools than k: the top k ranked, plus the tools that are always kept",
    "all": "at most k tools (or nothing to cut): all passed",
    "none": "the request brought no tools and none were added",
    "injected": "the request brought no tools; catalog tools were added (inject on)",
    "unrouted": "passed through without routing (the reason follows)",
}


@dataclass
class RoutedRequest:
    body: dict                      # what goes upstream
    offered: list[dict]             # the tools offered (exact dicts)
    original: Sequence[dict]        # the caller's tools (empty when injected)
    selected: list[dict]            # [{"name", "reason", "score"[, "id"]}] in rank order
    tools_in: int
    tools_out: int
    injected: bool = False
    budget_exceeded: bool = False
    status: str = "routed"          # a key of STATUSES
    k: int = 0
    extra: dict = field(default_factory=dict)  # e.g. built-in tools passed untouched (Responses, Messages)
    abstention: Any = None          # router.ranking.abstain.Abstention of the ranking, when one was made
    ids: dict = field(default_factory=dict)    # tool name -> catalog record id, for the ranked catalog tools
    checked: bool = True            # False: the tool list is held upstream and unknown here, calls go unjudged
    budget: int | None = None       # the token budget, and the tokens its tools use (budget.py)
    budget_used: int = 0

    def abstain_header(self) -> str | None:
        """``x-toolsift-abstain``: ``1; evidence=E; threshold=T[; stripped]`` when no tool fits, ``0; ...``
        when the ranking was checked and one does; None when nothing was ranked."""
        if self.abstention is None:
            return None
        return self.abstention.header() + ("; stripped" if self.extra.get("abstain") == "stripped" else "")

    def header(self) -> str:
        return capped_json(self.selected, lambda s: s["name"])

    def route_header(self) -> str:
        """``x-toolsift-route``: ``STATUS; in=N; out=N; k=N[; kept=REASON:N,...][; note="..."]``."""
        parts = [self.status, f"in={self.tools_in}", f"out={self.tools_out}", f"k={self.k}"]
        kept: dict[str, int] = {}
        for s in self.selected:
            if s["reason"] not in ("ranked", "all"):
                kept[s["reason"]] = kept.get(s["reason"], 0) + 1
        if kept:
            parts.append("kept=" + ",".join(f"{r}:{n}" for r, n in sorted(kept.items())))
        for key, value in self.extra.items():
            parts.append(f"{key}={value}")
        if self.budget is not None:
            parts.append(f"budget={self.budget_used}/{self.budget}")
        return "; ".join(parts)


def without_tools(body: dict) -> dict:
    """The body with no tool fields: the APIs refuse ``"tools": []``, and ``tool_choice`` or
    ``parallel_tool_calls`` without tools."""
    return {key: v for key, v in body.items() if key not in ("tools", "tool_choice", "parallel_tool_calls")}


def unrouted_header(reason: str) -> str:
    """``x-toolsift-route`` for a request that went upstream untouched, saying why."""
    return f'unrouted; reason="{reason}"'


def capped_json(items: list[dict], short: Any) -> str:
    """JSON of ``items`` under HEADER_LIMIT bytes: full, else short forms, else truncated + a count."""
    text = json.dumps(items, ensure_ascii=True, separators=(",", ":"))
    if len(text) <= HEADER_LIMIT:
        return text
    shorts = [short(i) for i in items]
    for n in range(len(shorts), -1, -1):
        text = json.dumps(shorts[:n] + ([f"+{len(shorts) - n} more"] if n < len(shorts) else []),
                          ensure_ascii=True, separators=(",", ":"))
        if len(text) <= HEADER_LIMIT:
            return text
    return "[]"
