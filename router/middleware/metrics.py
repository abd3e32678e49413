"""The proxy's counters since start; ``/metrics`` renders them (Prometheus text, or JSON)."""
from __future__ import annotations

import threading
from collections import Counter, deque


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
        """Prometheus text; ``caches``: {cache name: {"hits", "misses", "entries", ...}} (bounded caches)."""
        s = self.snapshot()
        lines = [f'toolsift_requests_total{{status="{k}"}} {v}' for k, v in sorted(s["by_status"].items())]
        lines += [f'toolsift_requests_by_api_total{{api="{k}"}} {v}' for k, v in sorted(s["by_api"].items())]
        for name, stats in sorted((caches or {}).items()):
            for key, value in sorted(stats.items()):
                metric = f"toolsift_cache_{key}_total" if key in ("hits", "misses", "evictions") else f"toolsift_cache_{key}"
                lines.append(f'{metric}{{cache="{name}"}} {value}')
        lines += [f"toolsift_tools_in_total {s['tools_in']}", f"toolsift_tools_out_total {s['tools_out']}",
                  f"toolsift_repairs_total {s['repairs']}"]
        lines += [f'toolsift_verdicts_total{{verdict="{k}"}} {v}' for k, v in sorted(s["verdicts"].items())]
        for p in ("p50", "p95"):
            if s["latency_ms"][p] is not None:
                lines.append(f'toolsift_request_latency_ms{{quantile="0.{p[1:]}"}} {s["latency_ms"][p]}')
            if s["proxy_ms"][p] is not None:
                lines.append(f'toolsift_proxy_own_ms{{quantile="0.{p[1:]}"}} {s["proxy_ms"][p]}')
        lines += [f"toolsift_request_latency_ms_sum {s['latency_ms']['sum']}",
                  f"toolsift_request_latency_ms_count {s['latency_ms']['count']}"]
        return "\n".join(lines) + "\n"
