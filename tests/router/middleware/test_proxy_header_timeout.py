"""Issue 42: the proxy had no header read timeout. A client that opened a connection and sent half
a header line held its socket and memory as long as it liked (90-120 s in the probe); uvicorn has
no such limit. The installed `toolsift serve openai --header-timeout 1`, raw sockets."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.slow_client import partial_then_wait, trickle

from tests.router.middleware.test_proxy_hardening import free_port, wait_health

_SCRIPT = Path(sys.executable).parent / "toolsift"


@pytest.fixture(scope="module")
def proxy():
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", "http://127.0.0.1:9/v1",
                             "--method", "bm25", "--port", str(port), "--header-timeout", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_health(f"http://127.0.0.1:{port}", proc)
        yield port
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("partial", [
    b"POST /v1/chat/compl",                                                       # half a request line
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: applic",     # half a header
    b"",                                                                          # nothing at all
])
def test_a_connection_that_never_finishes_its_headers_is_closed(proxy, partial):
    data, waited = partial_then_wait(proxy, partial)
    assert data == b"" and 0.5 < waited < 4, (data, waited)


def test_a_trickled_header_is_closed_although_bytes_keep_coming(proxy):
    line = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 40
    data, waited = trickle(proxy, line)  # a byte every 0.1 s: never idle, never done
    assert b"HTTP/1.1 200" not in data and waited < 3.5, (data, waited)


def test_requests_on_a_kept_alive_connection_are_not_cut(proxy):
    """Each request gets its own header time: a client that sends requests one after another on one
    connection, pausing less than the limit between them, is served throughout."""
    with httpx.Client(base_url=f"http://127.0.0.1:{proxy}", timeout=5) as c:
        for _ in range(4):
            assert c.get("/healthz").status_code == 200
            time.sleep(0.7)  # 4 x 0.7 s: past 1 s in all, under it between two requests
