"""Issue #19: how the gateway names upstream tools, and what a name can reach.

Real upstream servers (tests/support/mcp_servers/named.py lists tools under any names, even
``bank__transfer`` or ``_b``) behind an in-process gateway, driven by the `mcp` SDK's client.
The qualified-name scheme is `router.gateway.names` (docs/gateway.md, "Tool names").
"""
from __future__ import annotations

import json
import re

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from router.gateway import Gateway, GatewayError, parse_config
from router.gateway.names import qualify, server_name_problem, split
from tests.support.cli import toolsift
from tests.support.mcp_servers import named_entry, stdio_entry


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def _search(client, query: str, k: int = 10) -> dict:
    res = await client.call_tool("search_tools", {"query": query, "k": k})
    assert not res.is_error, _text(res)
    return json.loads(_text(res))


_SERVERS = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,8}[A-Za-z0-9.-])?", fullmatch=True).filter(
    lambda name: "__" not in name)
_TOOLS = st.text(alphabet="ab_.-", min_size=1, max_size=8)  # underscores everywhere, '__' often


@given(_SERVERS, _TOOLS)
def test_every_qualified_name_reads_back_to_its_one_server_and_tool(server, tool):
    """The scheme's guarantee (docs/security.md): a valid server name and any tool name give a
    qualified name that splits back into exactly them, so no two pairs share one."""
    assert server_name_problem(server) is None
    assert split(qualify(server, tool)) == (server, tool)


@pytest.mark.parametrize("name", ["a_", "a__b", "_a", "-a", "a b", "", "x-_"])
def test_server_names_outside_the_rule_are_refused(name):
    assert server_name_problem(name) is not None


def test_a_server_prefix_never_falls_through_to_another_servers_tool():
    """Reproduction: `bank` has no `transfer`; `payments` has a tool literally named
    `bank__transfer`. Calling `bank__transfer` ran the payments tool."""
    from mcp import Client

    specs = parse_config({"mcpServers": {"bank": named_entry("bank", "balance"),
                                         "payments": named_entry("payments", "bank__transfer")}})

    async def scenario():
        async with Gateway(specs, method="bm25", pinned=["bank__transfer"]) as gw, \
                Client(gw.build_server()) as client:
            res = await client.call_tool("call_tool", {"name": "bank__transfer", "arguments": {}})
            assert res.is_error, _text(res)
            assert "payments:bank__transfer" not in _text(res)  # never executed
            assert "server 'bank' has no tool 'transfer'" in _text(res)
            assert "payments__bank__transfer" in _text(res)  # the tool the caller may have meant
            # a pin is resolved the same way: `bank__transfer` pins nothing
            assert [t.name for t in (await client.list_tools()).tools] == ["search_tools", "call_tool"]
            assert any("bank__transfer" in w for w in gw.status()["warnings"])
            direct = await client.call_tool("bank__transfer", {})
            assert direct.is_error and "payments:" not in _text(direct)

            ok = await client.call_tool("call_tool", {"name": "payments__bank__transfer", "arguments": {}})
            assert not ok.is_error and _text(ok) == "payments:bank__transfer"
            ok = await client.call_tool("call_tool", {"name": "bank__balance", "arguments": {}})
            assert _text(ok) == "bank:balance"

    anyio.run(scenario)


@pytest.mark.parametrize("name", ["a_", "b2_", "srv._"])
def test_server_names_that_could_collide_are_refused(name, tmp_path):
    """Reproduction: servers `a` and `a_` with tools `_b` and `b` both became `a___b`.
    A server name may not end with '_', so the first '__' of a qualified name ends the
    server name; the config says so in one line, before anything starts."""
    with pytest.raises(GatewayError, match=re.escape(f"server {name!r}") + ".*end with '_'"):
        parse_config({"mcpServers": {"a": named_entry("a", "_b"), name: named_entry(name, "b")}})
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"a": named_entry("a", "_b"), "a_": named_entry("a_", "b")}}))
    proc = toolsift("serve", "mcp", "--config", cfg)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "'a_'" in lines[0], proc.stderr


def test_every_name_search_returns_reaches_exactly_that_tool():
    """Tool names that contain '__' or start with '_' still qualify and resolve to one tool:
    `a___b` is a's `_b`, `a__b` is a's `b`, and c's tool named `a___b` is `c__a___b`."""
    from mcp import Client

    specs = parse_config({"mcpServers": {"a": named_entry("a", "_b", "b"), "c": named_entry("c", "a___b", "d")}})

    async def scenario():
        async with Gateway(specs, method="bm25") as gw, Client(gw.build_server()) as client:
            found = (await _search(client, "operation of a c b d", 10))["tools"]
            assert sorted(t["name"] for t in found) == ["a___b", "a__b", "c__a___b", "c__d"]
            for tool in found:  # the name a client is given reaches the tool it describes
                res = await client.call_tool("call_tool", {"name": tool["name"], "arguments": {}})
                assert _text(res) == f"{tool['server']}:{tool['tool']}", tool
            # `a___b` as a bare name is a's `_b` (a is a server); c's tool needs its prefix
            res = await client.call_tool("call_tool", {"name": "a___b", "arguments": {}})
            assert _text(res) == "a:_b"
            res = await client.call_tool("call_tool", {"name": "d", "arguments": {}})
            assert _text(res) == "c:d"  # a unique bare name still works

    anyio.run(scenario)


def test_a_server_listing_a_tool_twice_costs_only_that_tool():
    """Reproduction: one server listing the same tool twice made the gateway serve no tools
    from any server. Now identical copies count once; copies that differ withhold that one
    name; either way the server's problem is reported for it alone."""
    from mcp import Client

    specs = parse_config({"mcpServers": {
        "weather": stdio_entry("weather"),
        "twice": named_entry("twice", "ping", "echo", "--list-twice", "ping"),
        "clash": named_entry("clash", "stamp", "other", "--list-twice-edited", "stamp"),
    }})

    async def scenario():
        async with Gateway(specs, method="bm25") as gw, Client(gw.build_server()) as client:
            found = await _search(client, "weather at a latitude and longitude", 3)
            assert found["tools"][0]["name"] == "weather__get_weather_by_coords"
            problems = found["server_problems"]
            assert set(problems) == {"twice", "clash"}
            assert "'ping'" in problems["twice"][0] and "twice" in problems["twice"][0]
            assert "'stamp'" in problems["clash"][0] and "not served" in problems["clash"][0]

            res = await client.call_tool("call_tool", {"name": "twice__ping", "arguments": {}})
            assert _text(res) == "twice:ping"
            res = await client.call_tool("call_tool", {"name": "clash__stamp", "arguments": {}})
            assert res.is_error and "more than once" in _text(res) and "clash:" not in _text(res)
            res = await client.call_tool("call_tool", {"name": "other", "arguments": {}})
            assert _text(res) == "clash:other"
            names = {t["name"] for t in (await _search(client, "operation of clash twice", 10))["tools"]}
            assert {"twice__ping", "twice__echo", "clash__other"} <= names and "clash__stamp" not in names
            servers = {s["server"]: s for s in gw.status()["servers"]}
            assert servers["weather"]["status"] == "ready" and "problems" not in servers["weather"]
            assert servers["clash"]["status"] == "ready" and servers["clash"]["problems"]

    anyio.run(scenario)
