"""The proxy's request log as its reader meets it (issue 40): a person at a terminal reads one plain
line per request; a pipe or a file (a log collector) gets one JSON object per line. The installed
`toolsift serve openai`, its stderr a real pseudo-terminal or a pipe, the real openai client."""
from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import threading

import openai

from tests.router.middleware.test_proxy_hardening import _SCRIPT, free_port, wait_health
from tests.support.scripted_upstream import ScriptedUpstream, completion, tool_call
from tests.support.toolsets import small_tools


def _serve_and_ask(upstream: str, stderr_tty: bool) -> str:
    """Start the proxy, send one request whose answer calls an unknown tool, stop it: its stderr."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    for name in ("TOOLSIFT_DB", "TOOLSIFT_FORCE_TERMINAL"):
        env.pop(name, None)
    master = slave = None
    if stderr_tty:
        master, slave = pty.openpty()
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", upstream, "--port", str(port),
                             "--method", "bm25", "-k", "3"], stdout=subprocess.DEVNULL,
                            stderr=slave if stderr_tty else subprocess.PIPE, text=not stderr_tty, env=env)
    chunks: list[bytes] = []
    if stderr_tty:
        os.close(slave)

        def drain() -> None:  # a terminal's reader: the pty's buffer must not fill up
            while True:
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO once the process has closed its end
                    return
                if not data:
                    return
                chunks.append(data)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
    try:
        url = f"http://127.0.0.1:{port}"
        wait_health(url, proc, deadline=120)
        c = openai.OpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "weather in Oslo"}],
                                  tools=small_tools())
    finally:
        proc.send_signal(signal.SIGINT)
        if stderr_tty:
            proc.wait(timeout=30)
            reader.join(timeout=10)
            os.close(master)
            err = b"".join(chunks).decode(errors="replace")
        else:
            err = proc.communicate(timeout=30)[1]
    return err.replace("\r\n", "\n")


def test_terminal_reads_a_plain_line_per_request():
    with ScriptedUpstream([completion(tool_calls=[tool_call("get_wether", {"city": "Oslo"})])]) as up:
        err = _serve_and_ask(up.base_url, stderr_tty=True)
    lines = [line for line in err.splitlines() if "/v1/chat/completions" in line]
    assert len(lines) == 1, err
    line = lines[0]
    assert not line.lstrip().startswith("{"), line
    for shown in ("200", "POST /v1/chat/completions", "model=m", "tools 12→3", "hallucinated_tool", " ms"):
        assert shown in line, (shown, line)


def test_pipe_gets_one_json_object_per_request():
    with ScriptedUpstream([completion(tool_calls=[tool_call("get_wether", {"city": "Oslo"})])]) as up:
        err = _serve_and_ask(up.base_url, stderr_tty=False)
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert len(records) == 1, err
    rec = records[0]
    assert rec["status"] == 200 and rec["path"] == "/v1/chat/completions" and rec["tools_in"] == 12
    assert rec["tools_out"] == 3 and rec["verdicts"] == ["hallucinated_tool"]
