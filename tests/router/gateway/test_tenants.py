"""Issue #17, tenants at the MCP gateway and its own tools/list_changed: `toolsift serve mcp
--transport http --tenants` as a real process, real upstream MCP server processes
(tests/support/mcp_servers), and the mcp SDK's own client with a key header.

Tenant "forecast" sees the weather server; tenant "maths" sees calculator and changing. The
forecast client tries to reach the maths tools: through search_tools, call_tool by qualified and
bare name, a pinned tool called directly, a forged namespace header, and the change events of a
server it cannot see.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import anyio
import pytest

from router.tenancy.tenants import hash_key
from tests.conftest import ROOT
from tests.router.gateway.test_gateway import _free_port, _text, _wait_port
from tests.support.mcp_servers import stdio_entry

FORECAST_KEY, MATHS_KEY = "tsk_forecast-key-0123456789", "tsk_maths-key-9876543210"
# the maths tenant's server names and its tools' distinctive names ("add" is also an English word)
MATHS_TOOLS = ("calculator", "changing", "multiply", "square_root", "translation", "translate_text")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gateway-tenants")
    cfg = tmp / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"weather": stdio_entry("weather"),
                                              "calculator": stdio_entry("calculator"),
                                              "changing": stdio_entry("changing")}}))
    tenants = tmp / "tenants.toml"
    tenants.write_text(f'[tenants.forecast]\nkey_sha256 = "{hash_key(FORECAST_KEY)}"\nnamespaces = ["weather"]\n'
                       f'[tenants.maths]\nkey_sha256 = "{hash_key(MATHS_KEY)}"\n'
                       'namespaces = ["calculator", "changing"]\n')
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "router.cli", "serve", "mcp", "--config", str(cfg),
                             "--transport", "http", "--port", str(port), "--method", "bm25", "--tenants",
                             str(tenants), "--pin", "calculator__add", "--pin", "weather__geocode_city",
                             "--pin", "changing__translate_text", "-v"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        assert FORECAST_KEY not in err and MATHS_KEY not in err


@contextlib.asynccontextmanager
async def connect(url: str, headers: dict[str, str], **kw):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as http, \
            Client(streamable_http_client(url, http_client=http), **kw) as client:
        yield client


def _leaks(text: str) -> list[str]:
    return [name for name in MATHS_TOOLS if name in text]


def test_a_wrong_or_missing_key_is_401(gateway):
    import httpx

    for headers in ({}, {"x-toolsift-key": "tsk_nobody-0000000000000"}, {"authorization": "Bearer nope"}):
        r = httpx.post(gateway, headers={**headers, "accept": "application/json, text/event-stream"},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        assert r.status_code == 401 and "missing or wrong toolsift key" in r.json()["error"]["message"]

    async def scenario():
        with pytest.raises(Exception):  # the SDK client cannot even connect
            async with connect(gateway, {"x-toolsift-key": "wrong-key-0000000000"}) as client:
                await client.list_tools()

    anyio.run(scenario)


def test_a_tenant_sees_searches_and_calls_only_its_servers(gateway):
    async def scenario():
        # a forged namespace header changes nothing: the key alone decides
        async with connect(gateway, {"x-toolsift-key": FORECAST_KEY, "x-toolsift-namespaces": "calculator"}) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            assert names == ["search_tools", "call_tool", "weather__geocode_city"]
            found = await c.call_tool("search_tools", {"query": "add two numbers and return the sum", "k": 5})
            assert not _leaks(_text(found)) and json.loads(_text(found))["query"].startswith("add two")
            for name in ("calculator__add", "add", "changing__enable_translation"):
                res = await c.call_tool("call_tool", {"name": name, "arguments": {"a": 1, "b": 2}})
                assert res.is_error and "not forwarded" in _text(res)
                assert not [leak for leak in _leaks(_text(res)) if leak not in name]  # only what was sent
            direct = await c.call_tool("calculator__add", {"a": 1, "b": 2})
            assert direct.is_error and not _leaks(_text(direct).replace("'calculator__add'", ""))
            geo = json.loads(_text(await c.call_tool("call_tool", {"name": "geocode_city",
                                                                    "arguments": {"city": "Ningde City"}})))
            assert "lat" in geo
        # the other tenant, with a bearer key: its own tools work
        async with connect(gateway, {"authorization": f"Bearer {MATHS_KEY}"}) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            assert names == ["search_tools", "call_tool", "calculator__add"]
            assert "5" in _text(await c.call_tool("calculator__add", {"a": 2, "b": 3}))
            found = json.loads(_text(await c.call_tool("search_tools", {"query": "weather at a city", "k": 5})))
            assert {t["server"] for t in found["tools"]} <= {"calculator", "changing"}
            res = await c.call_tool("call_tool", {"name": "weather__geocode_city", "arguments": {"city": "Oslo"}})
            assert res.is_error and "get_weather_by_coords" not in _text(res)

    anyio.run(scenario)


def test_list_changed_reaches_only_the_tenant_that_sees_the_changed_server(gateway):
    """changing's tool appears (a pin of the maths tenant): maths clients of both protocol eras are
    told, search and call it; the forecast client hears nothing and never sees it."""
    async def scenario():
        legacy_events: list[str] = []

        async def on_message(message):
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                legacy_events.append(message.method)

        async with connect(gateway, {"x-toolsift-key": MATHS_KEY}) as maths, \
                connect(gateway, {"x-toolsift-key": MATHS_KEY}, mode="legacy", message_handler=on_message) as old, \
                connect(gateway, {"x-toolsift-key": FORECAST_KEY}) as forecast:
            assert old.server_capabilities.tools.list_changed
            assert [t.name for t in (await old.list_tools()).tools] == ["search_tools", "call_tool",
                                                                         "calculator__add"]
            async with maths.listen(tools_list_changed=True) as sub, \
                    forecast.listen(tools_list_changed=True) as other:
                await maths.call_tool("call_tool", {"name": "enable_translation", "arguments": {}})
                with anyio.fail_after(60):  # a bound on the notification's round trip, not a timing claim
                    await sub.__anext__()
                    while not legacy_events:
                        await anyio.sleep(0.05)
                names = [t.name for t in (await maths.list_tools()).tools]
                assert names == ["search_tools", "call_tool", "calculator__add", "changing__translate_text"]
                assert "changing__translate_text" in [t.name for t in (await old.list_tools()).tools]
                res = await maths.call_tool("changing__translate_text", {"text": "hi", "target_language": "fr"})
                assert _text(res) == "[fr] hi"
                found = json.loads(_text(await maths.call_tool("search_tools", {"query": "translate a text"})))
                assert found["tools"][0]["name"] == "changing__translate_text"

                with anyio.move_on_after(0.5):  # the event went to maths' bus only
                    await other.__anext__()
                    pytest.fail("the forecast tenant heard of a change on a server it cannot see")
                assert [t.name for t in (await forecast.list_tools()).tools] == ["search_tools", "call_tool",
                                                                                  "weather__geocode_city"]
                # removed: no longer offered, searched or callable
                await maths.call_tool("call_tool", {"name": "disable_translation", "arguments": {}})
                with anyio.fail_after(60):
                    await sub.__anext__()
                assert "changing__translate_text" not in [t.name for t in (await maths.list_tools()).tools]
                gone = await maths.call_tool("changing__translate_text", {"text": "x", "target_language": "de"})
                assert gone.is_error and "unknown tool" in _text(gone)
                gone = await maths.call_tool("call_tool", {"name": "translate_text",
                                                           "arguments": {"text": "x", "target_language": "de"}})
                assert gone.is_error and "hallucinated_tool" in _text(gone)

    anyio.run(scenario)


def test_stdio_gateway_refuses_tenants(tmp_path):
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"weather": stdio_entry("weather")}}))
    tenants = tmp_path / "t.toml"
    tenants.write_text(f'[tenants.a]\nkey_sha256 = "{hash_key(FORECAST_KEY)}"\nnamespaces = ["weather"]\n')
    r = subprocess.run([sys.executable, "-m", "router.cli", "serve", "mcp", "--config", str(cfg), "--tenants",
                        str(tenants)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and "--tenants needs --transport http" in r.stderr
    tenants.write_text('[tenants.a]\nkey_sha256 = "x"\nnamespaces = ["weather"]\n')
    r = subprocess.run([sys.executable, "-m", "router.cli", "serve", "mcp", "--config", str(cfg), "--transport",
                        "http", "--port", str(_free_port()), "--tenants", str(tenants)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"{tenants}: tenant 'a': field 'key_sha256'" in r.stderr


def test_a_tenant_can_neither_use_nor_end_another_tenants_session(gateway):
    """Issue 42: a session belongs to the tenant that opened it. Another tenant who knows its id
    (a log, a proxy in between) gets the answer an unknown session gets, and the session lives on."""
    import httpx

    accept = {"accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    with httpx.Client(timeout=30) as http:
        opened = http.post(gateway, json=init, headers={**accept, "x-toolsift-key": MATHS_KEY})
        assert opened.status_code == 200
        sid = opened.headers["mcp-session-id"]
        session = {**accept, "mcp-session-id": sid, "mcp-protocol-version": "2025-03-26"}
        http.post(gateway, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                  headers={**session, "x-toolsift-key": MATHS_KEY})
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        for other in ({"x-toolsift-key": FORECAST_KEY}, {"authorization": f"Bearer {FORECAST_KEY}"}):
            stolen = http.post(gateway, json=listing, headers={**session, **other})
            assert stolen.status_code == 404 and not _leaks(stolen.text)
            ended = http.delete(gateway, headers={**session, **other})
            assert ended.status_code == 404
        own = http.post(gateway, json=listing, headers={**session, "x-toolsift-key": MATHS_KEY})
        assert own.status_code == 200 and "calculator__add" in own.text  # the session lives on
        assert http.delete(gateway, headers={**session, "x-toolsift-key": MATHS_KEY}).status_code == 200
