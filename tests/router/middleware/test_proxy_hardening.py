"""Issue 19 (proxy part) and issue 13's start-up, each reproduction as a regression test against
a real server on 127.0.0.1: the proxy in this process (uvicorn thread) or the installed
`toolsift` command in a subprocess."""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.router.middleware.test_proxy import _closed_port, client, running, user
from tests.support.scripted_apis import response
from tests.support.scripted_upstream import ScriptedUpstream, completion
from tests.support.toolsets import small_tools

_SCRIPT = Path(sys.executable).parent / "toolsift"
PASSWORD = "hunter2-PASSWORD-xyz"


def tiny_tools(n: int, dup_last: bool = False) -> list[dict]:
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(n)]
    if dup_last:
        tools[-1] = {"type": "function", "function": {"name": "t0"}}
    return tools


def start_cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    return subprocess.Popen([str(_SCRIPT), "serve", "openai", *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_health(url: str, proc: subprocess.Popen, deadline: float = 120) -> list[str]:
    """The /healthz statuses seen until "ok" (starting while the router loads)."""
    seen, end = [], time.monotonic() + deadline
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read()
        try:
            r = httpx.get(f"{url}/healthz", timeout=5)
            seen.append(r.json()["status"])
            if seen[-1] == "ok":
                assert r.status_code == 200
                return seen
            assert r.status_code == 503
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"not healthy in {deadline} s: {seen}")


def test_upstream_credentials_are_never_printed_logged_or_served(caplog):
    """#19.2: a password in --upstream was printed at start-up and returned by /healthz."""
    caplog.set_level(logging.INFO, logger="toolsift.proxy")
    port, dead = free_port(), _closed_port()
    proc = start_cli("--upstream", f"http://user:{PASSWORD}@127.0.0.1:{dead}/v1?key={PASSWORD}", "--port", str(port),
                     "--method", "bm25")
    try:
        wait_health(f"http://127.0.0.1:{port}", proc)
        health = httpx.get(f"http://127.0.0.1:{port}/healthz").text
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"model": "m", "messages": user("x")})
        assert r.status_code == 502
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "127.0.0.1" in health and PASSWORD not in health and "***@" in health
    assert PASSWORD not in r.text and PASSWORD not in err
    assert f"toolsift proxy on http://127.0.0.1:{port}/v1 -> http://***@127.0.0.1:{dead}/v1" in err
    # with a proxy key, an unauthenticated /healthz says only whether it is up
    with running(f"http://u:{PASSWORD}@127.0.0.1:{dead}", api_key="pk") as srv:
        assert httpx.get(f"{srv.url}/healthz").json() == {"status": "ok"}
        full = httpx.get(f"{srv.url}/healthz", headers={"x-toolsift-key": "pk"}).json()
        assert full["upstream"] == f"http://***@127.0.0.1:{dead}/v1"
        assert httpx.post(f"{srv.url}/v1/chat/completions", headers={"x-toolsift-key": "pk"},
                          json={"model": "m", "messages": user("x")}).status_code == 502
    assert PASSWORD not in caplog.text


def test_many_tools_and_a_late_duplicate_are_refused_before_any_per_tool_work():
    """#19.3: 60,000 tools with a duplicate name at the end burned a minute of CPU before its 400."""
    body = {"model": "m", "messages": user("weather"), "tools": tiny_tools(60_000, dup_last=True)}
    with ScriptedUpstream([completion("never")]) as up, running(up.base_url, k=3) as srv:
        r = httpx.post(f"{srv.url}/v1/chat/completions", json=body, timeout=60)
        assert r.status_code == 400 and "60,000 tools; at most 20,000" in r.json()["error"]["message"]
        for path, tools in (("/v1/responses", [{"type": "function", "name": f"t{i}"} for i in range(60_000)]),
                            ("/v1/messages", [{"name": f"t{i}", "input_schema": {}} for i in range(60_000)])):
            r = httpx.post(f"{srv.url}{path}", json={"model": "m", "input": "x", "max_tokens": 1, "tools": tools,
                                                     "messages": user("x")}, timeout=60)
            assert r.status_code == 400 and "at most 20,000" in r.text
        caches = httpx.get(f"{srv.url}/metrics?format=json").json()["caches"]
        assert caches["routers"]["misses"] == 0 and up.count == 0  # no router was built, nothing went upstream
    with ScriptedUpstream([completion("never")]) as up, running(up.base_url, k=3, max_request_tools=100_000) as srv:
        r = httpx.post(f"{srv.url}/v1/chat/completions", json=body, timeout=120)  # was quadratic: a minute
        assert r.status_code == 400 and "two tools are named 't0'" in r.json()["error"]["message"]


def test_caches_are_bounded_and_counted():
    """#19.3: an unbounded per-tool-list cache grew by 193 MB over 2,000 distinct tool lists (the
    RSS / latency soak is `toolsift bench proxy --soak`; this checks the bounds and counters)."""
    from router.middleware.request import RequestRouter

    rr = RequestRouter(k=2, method="bm25", cache_size=4, cache_tools=40)
    with ScriptedUpstream([completion("ok")], repeat_last=True) as up, \
            running(up.base_url, request_router=rr) as srv:
        c = client(srv)
        for i in range(12):  # twelve distinct 12-tool lists, then the last one again
            tools = [dict(t, function=dict(t["function"], description=f"{t['function']['description']} v{i}"))
                     for t in small_tools()]
            c.chat.completions.create(model="m", messages=user("weather"), tools=tools)
        c.chat.completions.create(model="m", messages=user("weather"), tools=tools)
        m = httpx.get(f"{srv.url}/metrics?format=json").json()["caches"]
        text = httpx.get(f"{srv.url}/metrics").text
    assert m["routers"]["misses"] == 12 and m["routers"]["hits"] == 1
    assert m["routers"]["entries"] <= 3 and m["routers"]["tools"] <= 40 and m["routers"]["evictions"] >= 9
    assert 'toolsift_cache_hits_total{cache="routers"} 1' in text
    assert 'toolsift_cache_entries{cache="responses"}' in text


def test_unrankable_conversations_are_400_not_500():
    """#19.10: an image-only user message, content null and an unknown role answered 500."""
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]
    cases = ((image, "no words to match tools with"),
             ([{"role": "user", "content": None}], "needs 'content'"),
             ([{"role": "wizard", "content": "weather"}], "unknown role 'wizard'"))
    with ScriptedUpstream([completion("ok")], repeat_last=True) as up, running(up.base_url, k=3) as srv:
        for messages, needle in cases:
            r = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": messages,
                                                                   "tools": small_tools()})
            assert r.status_code == 400 and needle in r.json()["error"]["message"], r.text
        # the same conversations with at most k tools need no ranking: they go through
        r = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": image,
                                                               "tools": small_tools()[:2]})
        assert r.status_code == 200
        # a Responses conversation this proxy never saw is passed through unrouted, and says so
        up.set_script([response("ok")])
        r = httpx.post(f"{srv.url}/v1/responses", json={"model": "m", "previous_response_id": "resp_elsewhere",
                                                        "input": [{"type": "function_call_output", "call_id": "c",
                                                                   "output": "42"}],
                                                        "tools": [{"type": "function", **t["function"]}
                                                                  for t in small_tools()]})
        assert r.status_code == 200 and r.headers["x-toolsift-route"].startswith("unrouted;")
        assert len(up.api_requests("responses")[-1]["tools"]) == 12


def test_chunked_body_over_the_limit_is_413_and_a_hang_up_is_no_traceback(caplog):
    """#19.10: a chunked 70 MB body answered 500; a client hanging up was logged as a 500 with a traceback."""
    caplog.set_level(logging.INFO, logger="toolsift.proxy")

    def chunks():
        yield b'{"model": "m", "messages": [{"role": "user", "content": "'
        for _ in range(70):
            yield b"x" * 2**20
        yield b'"}]}'

    with ScriptedUpstream([completion("never")]) as up, running(up.base_url, max_body_mb=64) as srv:
        r = httpx.post(f"{srv.url}/v1/chat/completions", content=chunks(), timeout=60)
        assert r.status_code == 413 and "64 MB" in r.json()["error"]["message"]
        with socket.create_connection(("127.0.0.1", srv.port)) as s:  # says 1 MB is coming, sends 10 bytes, leaves
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                      b"content-length: 1048576\r\n\r\n{\"model\":")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and '"status": 499' not in caplog.text:
            time.sleep(0.05)
        assert httpx.get(f"{srv.url}/healthz").status_code == 200 and up.count == 0
    assert '"status": 499' in caplog.text and "client closed the connection" in caplog.text
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text


def test_busy_port_is_one_line_before_any_load_and_healthz_says_starting_then_ok(tmp_path):
    """#13: a busy port was found only after 7-23 s of loading; the proxy said nothing while it loaded."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = start_cli("--upstream", "http://127.0.0.1:9/v1", "--port", str(port))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and err.strip().splitlines() == [
        f"error: 127.0.0.1:{port} is already in use (another proxy running? choose --port)"]
    port = free_port()
    with ScriptedUpstream([completion("ok")], repeat_last=True) as up:
        proc = start_cli("--upstream", up.url, "--port", str(port))  # hybrid: loads the embedding model
        try:
            first = proc.stderr.readline()
            assert first.startswith(f"toolsift proxy listening on http://127.0.0.1:{port}")
            seen = wait_health(f"http://127.0.0.1:{port}", proc)
            ready = proc.stderr.readline()
            assert ready.startswith(f"toolsift proxy on http://127.0.0.1:{port}/v1 -> {up.base_url}")
            assert "ready: OPENAI_BASE_URL=" in ready
            r = openai.OpenAI(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
            assert r.chat.completions.create(model="m", messages=user("hi")).choices[0].message.content == "ok"
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    assert seen[-1] == "ok" and set(seen) <= {"starting", "ok"}
    assert seen[0] == "starting", f"the port answered only once the model was loaded: {seen}"


@pytest.mark.parametrize("flag", ["--inject-catalog", "--max-request-tools"])
def test_new_flags_are_documented_in_help(flag):
    r = subprocess.run([str(_SCRIPT), "serve", "openai", "--help"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "COLUMNS": "200"})
    assert flag in r.stdout


def test_accepted_connections_answer_without_waiting_for_an_ack():
    """`toolsift bench proxy` measured 52 ms per request on a keep-alive connection where the
    proxy's own work took 7 ms: its listening socket said protocol 0, so asyncio (uvicorn's loop)
    never set TCP_NODELAY on accepted connections, and every answer (headers, then body) waited
    for the client's delayed ACK. Accepted connections must send at once."""
    import asyncio

    from router.middleware.server import bind

    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    seen: list[int] = []

    async def main() -> None:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            for _ in range(200):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    assert seen and seen[0] != 0


def test_a_tool_list_that_needs_embedding_does_not_stall_other_requests():
    """The proxy ranks a tool list it has seen on its event loop (issue 15: handing that work to a
    thread cost more than the work under 20 clients). A list it has never seen needs an in-memory
    router and its passages embedded, seconds of work: that must stay off the loop, or every other
    request (and /healthz) waits for it. Here 600 real StableToolBench tools are embedded by the
    installed `toolsift serve openai` (hybrid, no catalog) while /healthz and small requests keep
    being answered. Since issue 42 the big list is answered by BM25 while its embeddings are built in
    the background: the cold client keeps sending it until it is ranked hybrid."""
    import threading

    from tests.support.toolsets import stb_tools

    tools = stb_tools()[:600]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    body = {"model": "m", "messages": user("find the stock price of a company"), "tools": tools}
    with ScriptedUpstream([completion("ok")], repeat_last=True) as up:
        proc = start_cli("--upstream", up.url, "--port", str(port))
        try:
            assert wait_health(url, proc)[-1] == "ok"
            cold: dict = {}

            def send_cold() -> None:  # until the list is ranked hybrid (its embeddings built)
                t0, cold["routes"] = time.perf_counter(), []
                while time.perf_counter() - t0 < 600:
                    r = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=300)
                    cold["status"] = r.status_code
                    cold["routes"].append(r.headers.get("x-toolsift-route", ""))
                    if r.status_code != 200 or "dense=" not in cold["routes"][-1]:
                        break
                    time.sleep(0.2)
                cold["s"] = time.perf_counter() - t0

            worker = threading.Thread(target=send_cold)
            worker.start()
            waits: list[float] = []
            with httpx.Client(timeout=300) as c:
                while worker.is_alive():
                    t0 = time.perf_counter()
                    assert c.get(f"{url}/healthz").status_code == 200
                    small = c.post(f"{url}/v1/chat/completions",
                                   json={"model": "m", "messages": user("hi"), "tools": small_tools()[:3]})
                    assert small.status_code == 200
                    waits.append(time.perf_counter() - t0)
                    time.sleep(0.05)
            worker.join()
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    assert cold["status"] == 200
    assert "dense=building" in cold["routes"][0] and "dense=" not in cold["routes"][-1], cold["routes"]
    assert len(waits) >= 5, f"only {len(waits)} probes while the cold list took {cold['s']:.2f} s"
    assert max(waits) < cold["s"] / 3, (f"a probe waited {max(waits):.2f} s while a {len(tools)}-tool list "
                                        f"was embedded in {cold['s']:.2f} s: the event loop was blocked")


@pytest.mark.parametrize("args, words", [
    (["--timeout", "nan"], "--timeout must be a positive number"), (["--timeout", "-1"], "--timeout"),
    (["--timeout", "inf"], "--timeout"), (["--max-body-mb", "nan"], "--max-body-mb must be positive"),
    (["--max-body-mb", "inf"], "--max-body-mb"), (["-k", str(10**23)], "-k must be from 1 to 128"),
    (["--token-budget", "-1"], "--token-budget must be at least 1"), (["--max-repairs", "-1"], "--max-repairs"),
])
def test_numeric_options_are_one_line_before_the_port_is_taken(args, words):
    """Issue 42: NaN and inf were a traceback (--max-body-mb) or accepted (--timeout nan: every
    upstream call timed out at once), a 23-digit -k was accepted."""
    r = subprocess.run([str(_SCRIPT), "serve", "openai", "--upstream", "http://127.0.0.1:9/v1", "--port",
                        str(free_port()), *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert words in r.stderr
