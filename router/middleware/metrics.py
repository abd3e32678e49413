"""The proxy's counters since start; ``/metrics`` renders them (Prometheus text, or JSON)."""
from __future__ import annotations

import threading
from collections import Counter, deque


# the content type of Prometheus's text exposition format: a scraper picks its parser by it
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Counters since start; ``/metrics`` renders them (Prometheus text, or JSON with ?format=json)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.status: Counter[str] = Counter()
        self.verdicts: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.apis: Counter[str] = Counter()
        self.latency: deque[float] = deque(maxlen=4096)
        self.own: deque[float] = deque(maxlen=4096)  # latency minus the upstream's and the upload's time
        self.latency_sum = 0.0

    def record(self, status: int, ms: float, tools_in: int, tools_out: int, verdicts: list[str], repairs: int,
               own_ms: float | None = None, api: str = "chat") -> None:
        with self.lock:
            self.status[str(status)] += 1
            self.apis[api] += 1
            self.counts.update(requests=1, tools_in=tools_in, tools_out=tools_out, repairs=repairs)
            self.verdicts.update(verdicts)
            self.latency.append(ms)
            self.latency_sum += ms
            if own_ms is not None:
                self.own.append(own_ms)

    def snapshot(self) -> dict:
        with self.lock:
            lat, own = sorted(self.latency), sorted(self.own)
            q = (lambda p, v=lat: round(v[min(len(v) - 1, int(p * len(v)))], 3) if v else None)
            return {"requests": self.counts["requests"], "by_status": dict(self.status), "by_api": dict(self.apis),
                    "tools_in": self.counts["tools_in"], "tools_out": self.counts["tools_out"],
                    "repairs": self.counts["repairs"], "verdicts": dict(self.verdicts),
                    "latency_ms": {"p50": q(0.5), "p95": q(0.95), "sum": round(self.latency_sum, 3),
                                   "count": self.counts["requests"]},
                    # what the proxy adds: its own time per answered, non-streamed request
                    "proxy_ms": {"p50": q(0.5, own), "p95": q(0.95, own), "count": len(own)}}

    def prometheus(self, caches: dict[str, dict] | None = None) -> str:
        """Prometheus text (exposition format 0.0.4): each family under its ``# HELP`` and ``# TYPE`` lines,
        its samples together; ``caches``: {cache name: {"hits", "misses", "entries", ...}} (bounded caches)."""
        s = self.snapshot()
        out: list[str] = []

        def family(name: str, kind: str, text: str, samples: list[str]) -> None:
            if samples:  # a family with no sample yet is left out, not announced empty
                out.extend([f"# HELP {name} {text}", f"# TYPE {name} {kind}", *samples])

        family("toolsift_requests_total", "counter", "Requests to the routing endpoints, by HTTP status.",
               [f'toolsift_requests_total{{status="{k}"}} {v}' for k, v in sorted(s["by_status"].items())])
        family("toolsift_requests_by_api_total", "counter", "Routed requests, by wire format (chat, responses, "
               "messages).", [f'toolsift_requests_by_api_total{{api="{k}"}} {v}' for k, v in sorted(s["by_api"].items())])
        by_key: dict[str, list[str]] = {}
        for name, stats in sorted((caches or {}).items()):
            for key, value in sorted(stats.items()):
                by_key.setdefault(key, []).append(f'{_cache_metric(key)}{{cache="{name}"}} {value}')
        for key, samples in sorted(by_key.items()):
            counted = key in _CACHE_COUNTERS
            family(_cache_metric(key), "counter" if counted else "gauge",
                   f"Bounded cache {key} ({'since start' if counted else 'now'}), by cache.", samples)
        family("toolsift_tools_in_total", "counter", "Tools the clients sent.", [f"toolsift_tools_in_total {s['tools_in']}"])
        family("toolsift_tools_out_total", "counter", "Tools forwarded to the model after routing.",
               [f"toolsift_tools_out_total {s['tools_out']}"])
        family("toolsift_repairs_total", "counter", "Repair turns sent to the model after a rejected tool call.",
               [f"toolsift_repairs_total {s['repairs']}"])
        family("toolsift_verdicts_total", "counter", "Checked tool calls, by verdict.",
               [f'toolsift_verdicts_total{{verdict="{k}"}} {v}' for k, v in sorted(s["verdicts"].items())])
        quantiles = [f'toolsift_request_latency_ms{{quantile="0.{p[1:]}"}} {s["latency_ms"][p]}'
                     for p in ("p50", "p95") if s["latency_ms"][p] is not None]
        family("toolsift_request_latency_ms", "summary", "Request latency in milliseconds (quantiles over the "
               "last 4096 requests).", quantiles + [f"toolsift_request_latency_ms_sum {s['latency_ms']['sum']}",
                                                    f"toolsift_request_latency_ms_count {s['latency_ms']['count']}"])
        family("toolsift_proxy_own_ms", "summary", "The proxy's own time per answered, non-streamed request in "
               "milliseconds: latency minus the upstream's and the upload's (last 4096).",
               [f'toolsift_proxy_own_ms{{quantile="0.{p[1:]}"}} {s["proxy_ms"][p]}'
                for p in ("p50", "p95") if s["proxy_ms"][p] is not None])
        return "\n".join(out) + "\n"


_CACHE_COUNTERS = ("hits", "misses", "evictions")


def _cache_metric(key: str) -> str:
    return f"toolsift_cache_{key}_total" if key in _CACHE_COUNTERS else f"toolsift_cache_{key}"
