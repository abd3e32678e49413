"""A request's token budget (``token_budget``: tokens of tool schemas per request).

Which of the kept and ranked tools fit, and what the tools sent upstream cost. Toolsift's own
search tool (router/middleware/search.py) is a tool schema the model reads like any other, so it
counts too: when a search may be offered, its tokens are set aside before the ranked tools are
admitted, and it is offered only if it fits. ``x-toolsift-route`` says ``budget=USED/LIMIT``
(the first round's tools, the search tool included). Tools a search finds come on top, at most
``SEARCH_RESULTS`` per round: the model asked for them.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from .errors import RequestError
from .policy import MUST_KEEP

__all__ = ["fit", "search_reserve", "search_tokens", "charge_search"]


@lru_cache(maxsize=1)
def search_tokens() -> int:
    """What the search tool's schema costs (counted in the Chat Completions shape, as every tool is)."""
    from router.tokens import tool_tokens

    from .search import chat_search_tool

    return tool_tokens(chat_search_tool())


def search_reserve(rr: Any) -> int:
    """Tokens to set aside for the search tool before routing (0: no budget, no search, or a
    budget the search tool alone would not fit)."""
    if rr.token_budget is None or not getattr(rr, "tool_search", False) or rr.max_searches < 1:
        return 0
    cost = search_tokens()
    return cost if cost <= rr.token_budget else 0


def fit(keep: dict[int, dict], tools: Sequence[dict], max_tools: int, hard_max: int, budget: int | None,
        reserve: int = 0) -> tuple[list[int], bool, int]:
    """(positions admitted, over the budget, tokens used): must-keep tools first (always), then tools
    already called, then ranked ones while under ``max_tools`` and ``budget - reserve`` tokens."""
    from router.tokens import tool_tokens

    order = sorted(keep, key=lambda i: 0 if keep[i]["reason"] in MUST_KEEP else
                   1 if keep[i]["reason"] == "history" else 2)
    chosen, used = [], 0
    room = None if budget is None else budget - reserve
    for i in order:
        forced = keep[i]["reason"] in MUST_KEEP
        cost = tool_tokens(tools[i]) if budget is not None else 0
        if forced:
            if len(chosen) >= hard_max:
                raise RequestError(f"more than {hard_max} tools must be kept (pinned, named by tool_choice, "
                                   "marked by the request or a framework's control tools)")
        elif len(chosen) >= max_tools or (room is not None and used + cost > room):
            continue
        chosen.append(i)
        used += cost
    return chosen, budget is not None and used > budget, used  # only forced tools can push past it


def charge_search(routed: Any, own: bool) -> bool:
    """Count the search tool against ``routed``'s budget; False when toolsift's own search tool
    (``own``) does not fit what is left (then it is not offered). A client's own tool search
    (deferred.py) is always offered: the client asked for it."""
    if routed.budget is None:
        return True
    cost = search_tokens()
    if own and routed.budget_used + cost > routed.budget:
        return False
    routed.budget_used += cost
    routed.budget_exceeded = routed.budget_used > routed.budget
    return True
