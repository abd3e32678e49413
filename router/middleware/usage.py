"""The proxy's side of the usage log (router.training.usage_log): after an exchange, one line per tool call
that the checker found valid and that routing offered, with the query routing ranked on.

Written only when the proxy runs with ``--usage-log FILE``; the query text only with
``--usage-log-content`` as well. Headers are never looked at here, so no key can reach the log.
"""
from __future__ import annotations

from typing import Any

from .request import tool_name


def record_exchange(log: Any, ex: Any, tenant: str | None = None) -> int:
    """Write the valid, offered calls of a finished `Exchange` to ``log``; how many lines."""
    routed = ex.routed
    if log is None or routed is None or not ex.checks or routed.status not in ("routed", "all"):
        return 0
    from router.ranking.query import normalize_query

    messages = routed.body.get("messages") if isinstance(routed.body, dict) else None
    try:
        query = normalize_query(messages)
    except Exception:  # noqa: BLE001 - no routable text: nothing to learn from this exchange
        return 0
    offered = [n for n in (tool_name(t) for t in routed.offered) if n]
    ok = {c.choice for c in ex.checks if c.verdict.ok}
    written = 0
    for choice, calls in ex.api.calls(ex.response):
        if choice not in ok:
            continue
        verdict = next(c.verdict.verdict for c in ex.checks if c.choice == choice)
        for call in calls:
            name = tool_name(call)
            if name and name in offered:
                log.record(source="proxy", query=query, offered=offered, called=name, verdict=verdict,
                           record_id=routed.ids.get(name), route=routed.status, tenant=tenant)
                written += 1
    return written
