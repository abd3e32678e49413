"""The MCP gateway's search_tools abstention and usage log, with the mcp SDK's own client over real
stdio upstream servers (tests/support/mcp_servers)."""
from __future__ import annotations

import json

import anyio

from router.gateway import Gateway
from router.gateway.upstreams import parse_config
from router.training.usage_log import UsageLog
from tests.support.mcp_servers import stdio_entry


def _payload(result) -> dict:
    return json.loads("\n".join(c.text for c in result.content if getattr(c, "text", None)))


def test_search_abstains_on_an_unrelated_query_and_logs_valid_calls(tmp_path):
    from mcp import Client

    specs = parse_config({"mcpServers": {"weather": stdio_entry("weather"), "calculator": stdio_entry("calculator")}})
    log = UsageLog(tmp_path / "usage.jsonl", content=True)

    async def scenario():
        async with Gateway(specs, cache_dir=tmp_path / "emb", usage_log=log) as gw, Client(gw.build_server()) as client:
            hit = _payload(await client.call_tool("search_tools", {"query": "current weather at a latitude and "
                                                                            "longitude", "k": 3}))
            assert hit["abstain"]["abstained"] is False and hit["tools"][0]["name"] == "weather__get_weather_by_coords"
            miss = _payload(await client.call_tool("search_tools", {"query": "write a sonnet about my grandmother's "
                                                                             "wedding dress"}))
            assert miss["abstain"]["abstained"] is True and miss["tools"] == [] and "no tool fits" in miss["note"]
            res = await client.call_tool("call_tool", {"name": "weather__get_weather_by_coords",
                                                       "arguments": {"lat": 48.8, "lon": 2.3}})
            assert not res.is_error
            bad = await client.call_tool("call_tool", {"name": "weather__get_weather_by_coords",
                                                       "arguments": {"lat": "north"}})
            assert bad.is_error  # invalid: refused, and not logged

    anyio.run(scenario)
    lines = [json.loads(x) for x in log.path.read_text().splitlines()]
    assert len(lines) == 1
    assert lines[0]["called"] == "weather__get_weather_by_coords" and lines[0]["source"] == "gateway"
    assert lines[0]["query"].startswith("current weather") and lines[0]["id"] == "weather/get_weather_by_coords"


def test_flag_mode_keeps_the_ranked_tools(tmp_path):
    gw = Gateway(on_abstain="flag", cache_dir=tmp_path / "emb")
    gw.ingest("weather", [{"name": "get_weather_by_coords", "description": "Current weather at a latitude and "
                           "longitude.", "inputSchema": {"type": "object", "properties": {"lat": {"type": "number"}}}}])
    gw.reindex()
    found = gw.search("write a sonnet about my grandmother's wedding dress", 3)
    assert found["abstain"]["abstained"] is True and [t["tool"] for t in found["tools"]] == ["get_weather_by_coords"]
    gw.catalog.close()
