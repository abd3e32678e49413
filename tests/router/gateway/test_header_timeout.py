"""Issue 42: the MCP gateway's HTTP server had no header read timeout (the proxy got one first). A
client that opened a connection and sent half a header line held its socket and memory as long as
it liked. The installed `toolsift serve mcp --transport http --header-timeout 1`, a real upstream
MCP server process, raw sockets."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.router.gateway.test_gateway import _free_port, _wait_port
from tests.support.slow_client import partial_then_wait, trickle
from tests.support.cli import toolsift
from tests.support.mcp_servers import stdio_entry

_SCRIPT = Path(sys.executable).parent / "toolsift"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    if not _SCRIPT.exists():
        pytest.skip(f"{_SCRIPT} is missing: install the package (make install)")
    cfg = tmp_path_factory.mktemp("gateway-header-timeout") / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"weather": stdio_entry("weather")}}))
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", "mcp", "--config", str(cfg), "--transport", "http",
                             "--port", str(port), "--method", "bm25", "--header-timeout", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        _wait_port(port, proc, timeout=120)
        yield port
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("partial", [
    b"POST /mc",                                                                  # half a request line
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic",             # half a header
    b"",                                                                          # nothing at all
])
def test_a_connection_that_never_finishes_its_headers_is_closed(gateway, partial):
    data, waited = partial_then_wait(gateway, partial)
    assert data == b"" and 0.5 < waited < 4, (data, waited)


def test_a_trickled_header_is_closed_although_bytes_keep_coming(gateway):
    line = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 40
    data, waited = trickle(gateway, line)  # a byte every 0.1 s: never idle, never done
    assert b"HTTP/1.1" not in data and waited < 3.5, (data, waited)


def test_requests_on_a_kept_alive_connection_are_not_cut(gateway):
    """Each request gets its own header time: requests one after another on one connection, pausing
    less than the limit between them, are all answered (an MCP initialize each time)."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "header-timeout-test", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(base_url=f"http://127.0.0.1:{gateway}", timeout=10) as c:
        for _ in range(4):
            r = c.post("/mcp", json=init, headers=headers)
            assert r.status_code == 200, r.text
            assert "toolsift-gateway" in r.text
            time.sleep(0.7)  # 4 x 0.7 s: past 1 s in all, under it between two requests


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_header_timeout_that_is_not_a_positive_number_is_one_line(tmp_path, value):
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"weather": stdio_entry("weather")}}))
    proc = toolsift("serve", "mcp", "--config", cfg, "--transport", "http", "--port", _free_port(),
                    "--header-timeout", value)
    assert proc.returncode == 2, proc.stderr
    assert "--header-timeout must be a positive number of seconds" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
