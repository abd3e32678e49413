"""router.stopping: a server asked to stop with SIGTERM (a service manager, `docker stop`) stops
cleanly and exits 0, as docs/cli.md says; it had died of the signal after uvicorn's graceful
shutdown (exit -15). The installed `toolsift serve openai` and `serve mcp --transport http`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.router.gateway.test_gateway import _wait_port
from tests.router.middleware.test_proxy_hardening import free_port, wait_health
from tests.support.mcp_servers import stdio_entry

_SCRIPT = Path(sys.executable).parent / "toolsift"


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    return env


@pytest.fixture(autouse=True)
def _installed():
    if not _SCRIPT.exists():
        pytest.skip(f"{_SCRIPT} is missing: install the package (make install)")


def _terminate(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode


def test_the_proxy_stops_on_sigterm_with_exit_0():
    port = free_port()
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", "http://127.0.0.1:9/v1",
                             "--method", "bm25", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    try:
        wait_health(f"http://127.0.0.1:{port}", proc)
    finally:
        code = _terminate(proc)
    assert code == 0


def test_the_gateway_stops_on_sigterm_with_exit_0_and_its_upstream_with_it(tmp_path):
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"weather": stdio_entry("weather")}}))
    port = free_port()
    proc = subprocess.Popen([str(_SCRIPT), "serve", "mcp", "--config", str(cfg), "--transport", "http",
                             "--port", str(port), "--method", "bm25"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
    try:
        _wait_port(port, proc, timeout=120)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    finally:
        code = _terminate(proc)
    assert code == 0
    assert children  # the weather server ran as the gateway's child ...
    for pid in children:  # ... and is gone with it
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
