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
