"""The proxy's request log: one JSON line per request on the ``toolsift.proxy`` logger, the
request counted in /metrics (router/middleware/metrics.py) and, opt-in, its valid calls in the
usage log (router/middleware/usage.py).

A line carries no message contents unless ``log_content``, and never a header, so never a key.
"""
# no `from __future__ import annotations`: kept like proxy.py, whose FastAPI handlers need real types

import json
import logging
import time
from typing import Any, Optional

from .checks import Exchange
from .usage import record_exchange

log = logging.getLogger("toolsift.proxy")


class RequestLog:
    """The logging half of `proxy.Proxy` (which provides usage_log, log_content and metrics)."""

    def log_line(self, rec: dict) -> None:
        # the record rides along for a terminal's readable line (router/middleware/server.py)
        log.info(json.dumps(rec, ensure_ascii=False, default=str), extra={"request": rec})

    def finish(self, rec: dict, t0: float, status: int, ex: Optional[Exchange]) -> None:
        routed = ex.routed if ex else None
        verdicts = [c.verdict.verdict for c in ex.checks] if ex else []
        ms = (time.perf_counter() - t0) * 1000
        rec.update(status=status, ms=round(ms, 2), verdicts=verdicts, repairs=ex.repairs if ex else 0)
        if ex is not None and ex.searches:
            rec["searches"] = ex.searches  # tool-search rounds answered (router/middleware/search.py)
        own = None
        if ex is not None and ex.upstream_ms and not rec.get("stream"):
            own = ms - ex.upstream_ms - rec.get("body_ms", 0.0)
            rec.update(upstream_ms=round(ex.upstream_ms, 2), own_ms=round(own, 2))
        if routed:
            rec.update(tools_in=routed.tools_in, tools_out=routed.tools_out, injected=routed.injected,
                       route=routed.status, selected=[_short(s["name"]) for s in routed.selected][:32])
            if routed.extra.get("dense"):  # ranked by BM25 while the list's embeddings are built
                rec["dense"] = routed.extra["dense"]
        if self.usage_log is not None and ex is not None and status == 200:
            try:
                record_exchange(self.usage_log, ex, rec.get("tenant"))
            except OSError as exc:  # a full disk must not fail the client's request
                log.warning("usage log: %s", exc)
        if self.log_content and ex is not None:
            rec.update(messages=ex.request.get("messages", ex.request.get("input"))
                       if isinstance(ex.request, dict) else None,
                       answer=_answer_of(ex.response))
        self.metrics.record(status, ms, rec.get("tools_in", 0), rec.get("tools_out", 0), verdicts, rec["repairs"],
                            own if status == 200 else None, api=rec.get("api", "chat"))
        self.log_line(rec)


def _short(value: Any, limit: int = 256) -> Any:
    """A client-chosen string as the request log shows it: a tool name or model of hundreds of KB
    would grow the log (and block a reader-less pipe) by that much per request."""
    return value[:limit] + f"...[{len(value) - limit} more chars]" if isinstance(value, str) and len(value) > limit \
        else value


def _answer_of(response: Any) -> Any:
    if not isinstance(response, dict):
        return None
    if "choices" in response:
        return [c.get("message") for c in response.get("choices") or []]
    return response.get("output", response.get("content"))
