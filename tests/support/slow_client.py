"""A slow or stalled HTTP client on a raw socket: what the header-read timeout of the proxy and of
the MCP gateway's HTTP server must cut (router/http_guard.py)."""
from __future__ import annotations

import socket
import time


def closed_after(s: socket.socket) -> tuple[bytes, float]:
    """What the server sent before closing, and when it closed (the caller's socket timeout bounds it)."""
    t0, data = time.monotonic(), b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data, time.monotonic() - t0
        data += chunk


def partial_then_wait(port: int, partial: bytes) -> tuple[bytes, float]:
    """Send ``partial`` (maybe nothing) and wait for the server to close; (what came back, seconds)."""
    with socket.create_connection(("127.0.0.1", port), timeout=8) as s:
        if partial:
            s.sendall(partial)
        return closed_after(s)


def trickle(port: int, line: bytes) -> tuple[bytes, float]:
    """Send ``line`` a byte every 0.1 s (never idle, never done); (what came back, seconds to close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=8) as s:
        t0 = time.monotonic()
        try:
            for byte in line:
                s.sendall(bytes([byte]))
                time.sleep(0.1)
        except OSError:
            pass  # the server closed the connection while we were still sending
        try:
            data, _ = closed_after(s)
        except OSError:
            data = b""
        return data, time.monotonic() - t0
