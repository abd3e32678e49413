"""Issue #17: MCP sources stay fresh. A real server changes its tool list at run time
(tests/support/mcp_servers/changing.py: adds, rewords, removes a tool, each time sending
notifications/tools/list_changed); the gateway re-lists that server only, syncs its
namespace incrementally and re-embeds only what changed.
"""
from __future__ import annotations

import json

import anyio

from router.gateway import Gateway, parse_config
from tests.support.mcp_servers import stdio_entry


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def _until(predicate, limit: float = 120.0) -> None:
    with anyio.fail_after(limit):  # a generous bound on a notification's round trip, not a timing claim
        while not predicate():
            await anyio.sleep(0.1)


def test_tools_list_changed_syncs_one_namespace_and_reembeds_only_the_change(tmp_path):
    from mcp import Client

    specs = parse_config({"mcpServers": {"changing": stdio_entry("changing"), "weather": stdio_entry("weather")}})
    db = tmp_path / "gateway.db"

    async def scenario():
        # a fresh embedding cache: every vector the gateway needs is computed in this test
        async with Gateway(specs, db_path=db, cache_dir=tmp_path / "embeddings") as gw, \
                Client(gw.build_server()) as client:
            await gw.wait_ready()
            assert gw.index.encoded == 5  # 3 changing + 2 weather tools, all new to the cache

            def tools_in_index() -> set[str]:
                return {r.name for r in gw.router.records if r.namespace == "changing"}

            def sync(server: str) -> dict:
                return next(s for s in gw.status()["servers"] if s["server"] == server)["last_sync"]

            weather_sync = sync("weather")
            assert weather_sync == {"added": 2, "updated": 0, "removed": 0, "unchanged": 0}

            async def search(query: str) -> list[dict]:
                res = await client.call_tool("search_tools", {"query": query, "k": 3})
                return json.loads(_text(res))["tools"]

            # added
            await client.call_tool("call_tool", {"name": "enable_translation", "arguments": {}})
            await _until(lambda: "translate_text" in tools_in_index())
            assert sync("changing") == {"added": 1, "updated": 0, "removed": 0, "unchanged": 3}
            assert gw.index.encoded == 1  # only the new tool was embedded
            assert (await search("translate text into another language"))[0]["name"] == "changing__translate_text"
            res = await client.call_tool("call_tool", {"name": "translate_text",
                                                       "arguments": {"text": "hello", "target_language": "fr"}})
            assert _text(res) == "[fr] hello"

            # edited in place
            await client.call_tool("call_tool", {"name": "reword_translation", "arguments": {}})
            await _until(lambda: any(r.name == "translate_text" and "foreign tongue" in r.description
                                     for r in gw.router.records))
            assert sync("changing") == {"added": 0, "updated": 1, "removed": 0, "unchanged": 3}
            assert gw.index.encoded == 1  # the edited tool only
            top = (await search("render a passage in a foreign tongue"))[0]
            assert top["name"] == "changing__translate_text" and "foreign tongue" in top["description"]

            # removed
            await client.call_tool("call_tool", {"name": "disable_translation", "arguments": {}})
            await _until(lambda: "translate_text" not in tools_in_index())
            assert sync("changing") == {"added": 0, "updated": 0, "removed": 1, "unchanged": 3}
            assert gw.index.encoded == 0  # nothing new to embed
            assert "changing__translate_text" not in [t["name"] for t in await search("translate text")]
            gone = await client.call_tool("call_tool", {"name": "translate_text",
                                                        "arguments": {"text": "x", "target_language": "de"}})
            assert gone.is_error and "hallucinated_tool" in _text(gone)

            assert sync("weather") == weather_sync  # the other namespace was never re-synced

        from apidb.catalog import Catalog

        with Catalog(db) as cat:  # the stored namespaces followed the changes
            assert cat.namespaces() == {"changing": 3, "weather": 2}

    anyio.run(scenario)


def test_gateway_process_follows_list_changed_and_tells_its_own_client(tmp_path):
    """`toolsift serve mcp` over stdio (hybrid ranking, a fresh embedding cache), the same changing
    server: the pinned tool that appears is announced to the gateway's client with its own
    tools/list_changed, searched, called; its log says one tool was embedded; removed, it is gone."""
    import os
    import sys

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.conftest import ROOT

    from pathlib import Path

    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"changing": stdio_entry("changing"),
                                              "weather": stdio_entry("weather")}}))
    # no embedding is cached yet, but the ONNX export of the model is reused (making it takes minutes)
    cache = tmp_path / "cache"
    cache.mkdir()
    exported = Path(os.environ.get("TOOLSIFT_CACHE", Path.home() / ".cache" / "toolsift")) / "onnx"
    if exported.is_dir():
        (cache / "onnx").symlink_to(exported, target_is_directory=True)
    params = StdioServerParameters(
        command=sys.executable, cwd=str(ROOT),
        args=["-m", "router.cli", "serve", "mcp", "--config", str(cfg), "--pin", "changing__translate_text", "-v"],
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOOLSIFT_CACHE": str(cache),
             "HOME": os.environ.get("HOME", str(tmp_path))})
    log_path = tmp_path / "gateway.log"
    heard: list[str] = []

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            heard.append(message.method)

    async def scenario():
        with log_path.open("w") as log:
            async with Client(stdio_client(params, errlog=log), mode="legacy", message_handler=on_message) as client:
                async def tools() -> list[str]:
                    return [t.name for t in (await client.list_tools()).tools]

                assert await tools() == ["search_tools", "call_tool"]  # the pin is not there yet
                await client.call_tool("call_tool", {"name": "enable_translation", "arguments": {}})
                await _until(lambda: bool(heard))
                assert await tools() == ["search_tools", "call_tool", "changing__translate_text"]
                found = json.loads(_text(await client.call_tool("search_tools", {"query": "translate a text"})))
                assert found["tools"][0]["name"] == "changing__translate_text"
                res = await client.call_tool("changing__translate_text", {"text": "hi", "target_language": "fr"})
                assert _text(res) == "[fr] hi"
                await _until(lambda: "changing re-indexed" in log_path.read_text(), 300)
                await client.call_tool("call_tool", {"name": "disable_translation", "arguments": {}})
                await _until(lambda: len(heard) >= 2)
                assert await tools() == ["search_tools", "call_tool"]
                gone = await client.call_tool("call_tool", {"name": "changing__translate_text",
                                                            "arguments": {"text": "x", "target_language": "de"}})
                assert gone.is_error
                await _until(lambda: log_path.read_text().count("changing re-indexed") >= 2, 300)

    anyio.run(scenario)
    reindexed = [line.split(": ", 1)[1] for line in log_path.read_text().splitlines() if "changing re-indexed" in line]
    # the added tool only, then nothing (a removal embeds nothing)
    assert reindexed == ["upstream changing re-indexed: 1 tool embedded", "upstream changing re-indexed: 0 tools embedded"]
