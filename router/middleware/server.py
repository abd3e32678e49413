"""Running the proxy: bind the port first, then serve while the router loads (issue 13).

A proxy that loads its catalog and model for 7–23 s and only then finds its port taken wastes
that time and says nothing meanwhile. So `bind` takes the port before anything heavy happens
(a busy port is one `MiddlewareError` line, the command exits 2), `serve` answers at once
(``/healthz``: ``starting``, then ``ok``), and the app's loader builds the router in a thread;
the ready line is printed when it is done.
"""
from __future__ import annotations

import errno
import gc
import json
import logging
import socket
from typing import Any

from ..http_guard import HEADER_TIMEOUT, header_guarded_protocol
from ..stopping import terminate_cleanly
from .errors import MiddlewareError

log = logging.getLogger("toolsift.proxy")


def warm_up_request_path() -> None:
    """Route and check one tiny request, so that what the first real one would load on first use
    (the checker, BM25, the stemmer and stop words: ~1-2 s on a busy machine) is loaded now."""
    from .checks import Exchange
    from .request import RequestRouter

    tools = [{"type": "function", "function": {"name": f"warm_{i}", "description": f"warm up tool {i}",
                                                "parameters": {"type": "object", "properties": {}}}}
             for i in range(2)]
    ex = Exchange(RequestRouter(k=1, method="bm25"), {"messages": [{"role": "user", "content": "warm up"}],
                                                       "tools": tools})
    ex.start()
    ex.feed({"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "warm_0", "arguments": "{}"}}]}}]})


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a MiddlewareError that says why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose protocol says TCP.
    # Without it every answer on a keep-alive connection waited ~40 ms for the client's delayed ACK
    # (headers and body are two writes): 52 ms per request where the proxy's own work took 7 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT of a previous run is fine
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise MiddlewareError(f"{host}:{port} is already in use (another proxy running? choose --port)") from None
        if exc.errno == errno.EACCES:
            raise MiddlewareError(f"no permission to listen on {host}:{port} (ports below 1024 need root)") from None
        raise MiddlewareError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


class ReadableLine(logging.Formatter):
    """A request's log line for a person at a terminal: ``HH:MM:SS status METHOD path  api  ms  tools
    in→out  verdicts``; the JSON line (``log_line``'s message) is for pipes and files, where a log
    collector parses it. Lines without a request record print as they are."""

    def format(self, record: logging.LogRecord) -> str:
        rec = getattr(record, "request", None)
        if not isinstance(rec, dict):
            return super().format(record)
        parts = [self.formatTime(record, "%H:%M:%S"), str(rec.get("status", "-")),
                 f"{rec.get('method', '-')} {rec.get('path', '-')}"]
        if rec.get("forwarded"):
            parts.append("forwarded")
        elif rec.get("api"):
            parts.append(rec["api"] + (" stream" if rec.get("stream") else ""))
        if rec.get("model"):
            parts.append(f"model={rec['model']}")
        if rec.get("tenant"):
            parts.append(f"tenant={rec['tenant']}")
        ms = f"{rec['ms']:.0f} ms" if isinstance(rec.get("ms"), (int, float)) else ""
        if ms and isinstance(rec.get("own_ms"), (int, float)):
            ms += f" (own {rec['own_ms']:.1f} ms)"
        parts.append(ms)
        if "tools_in" in rec:
            parts.append(f"tools {rec['tools_in']}→{rec.get('tools_out', '?')}"
                         + (" (catalog tools injected)" if rec.get("injected") else ""))
        if rec.get("dense"):
            parts.append(f"bm25 (embeddings {rec['dense']})")
        if rec.get("verdicts"):
            parts.append(",".join(rec["verdicts"]))
        if rec.get("repairs"):
            parts.append(f"repairs={rec['repairs']}")
        if rec.get("error"):
            parts.append(f"error: {rec['error']}")
        line = "  ".join(p for p in parts if p)
        for key in ("messages", "answer"):  # --log-content: what the person asked to see, as JSON
            if key in rec:
                line += f"\n    {key}: {json.dumps(rec[key], ensure_ascii=False, default=str)}"
        return line


def serve(app: Any, sock: socket.socket | None = None, host: str = "127.0.0.1", port: int = 8808,
          header_timeout: float = HEADER_TIMEOUT, readable: bool | None = None) -> None:
    """Serve ``app`` in the foreground until interrupted; one log line per request on stderr: JSON,
    or, with ``readable`` (default: stderr is a terminal), a line for a person (`ReadableLine`).
    A connection gets ``header_timeout`` seconds for each request's line and headers
    (`header_guarded_protocol`). Raises MiddlewareError when the app's router could not be loaded
    (after the server stopped)."""
    import uvicorn

    if sock is None:
        sock = bind(host, port)
    handler = logging.StreamHandler()
    if readable is None:
        readable = hasattr(handler.stream, "isatty") and handler.stream.isatty()
    handler.setFormatter(ReadableLine() if readable else logging.Formatter("%(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                           http=header_guarded_protocol(header_timeout)))
    proxy = app.state.proxy
    failed = proxy.on_failed

    def stop_on_failure(message: str) -> None:
        if failed:
            failed(message)
        server.should_exit = True

    proxy.on_failed = stop_on_failure
    ready = proxy.on_ready

    def freeze_when_ready() -> None:
        gc.freeze()  # the catalog and indexes live as long as the server: keep them out of every GC pass
        if ready:
            ready()

    proxy.on_ready = freeze_when_ready
    try:
        with terminate_cleanly(server):
            server.run(sockets=[sock])
    finally:
        sock.close()
    if proxy.load_error:
        raise MiddlewareError(f"the proxy could not start: {proxy.load_error}")
