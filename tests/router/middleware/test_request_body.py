"""Reading requests from the wire: the lazy tool list must route exactly like a parsed body."""
from __future__ import annotations

import json

import pytest

from apidb.names import unique_names
from router.middleware.request import RequestError, RequestRouter
from router.middleware.request_body import ToolList, WireError, read_request


@pytest.fixture(scope="module")
def gorilla_tools(gorilla_records):
    """All 1,069 bundled Gorilla APIs as OpenAI tools, as an agent would send them."""
    return [r.to_openai_tool(name=n) for r, n in zip(gorilla_records, unique_names(gorilla_records))]


def _raw(tools, text="I want to classify bird species from photos taken in my garden", **extra) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": text}], "tools": tools, **extra}).encode()


def test_tool_list_holds_the_exact_tools(gorilla_tools):
    body = read_request(_raw(gorilla_tools, temperature=0.2, tool_choice="auto"))
    tools = body["tools"]
    assert isinstance(tools, ToolList) and len(tools) == len(gorilla_tools) == 1069
    assert tools.names == [t["function"]["name"] for t in gorilla_tools]
    assert tools.descriptions[5] == gorilla_tools[5]["function"]["description"].strip()
    assert tools[7] == gorilla_tools[7] and tools[-1] == gorilla_tools[-1] and list(tools[2:4]) == gorilla_tools[2:4]
    assert list(tools) == gorilla_tools
    assert body["temperature"] == 0.2 and body["tool_choice"] == "auto" and body["model"] == "m"


def test_key_follows_the_content(gorilla_tools):
    a = read_request(_raw(gorilla_tools))["tools"].key
    assert a == read_request(_raw(gorilla_tools, text="another question"))["tools"].key
    edited = [dict(t) for t in gorilla_tools]
    edited[100] = {"type": "function", "function": {**edited[100]["function"], "description": "changed"}}
    assert read_request(_raw(edited))["tools"].key != a


@pytest.mark.parametrize("question", [
    "I want to classify bird species from photos taken in my garden",
    "Translate this English customer email into French",
    "Detect the objects in a street camera video frame",
])
def test_routes_like_a_parsed_body(gorilla_tools, question):
    raw = _raw(gorilla_tools, text=question)
    rr = RequestRouter(k=5, method="bm25")
    from_wire, parsed = rr.route(read_request(raw)), rr.route(json.loads(raw))
    assert from_wire.offered == parsed.offered and len(from_wire.offered) == 5
    assert from_wire.selected == parsed.selected
    assert json.loads(json.dumps(from_wire.body)) == json.loads(json.dumps(parsed.body))


def test_bad_bodies_say_what_is_wrong():
    msg = [{"role": "user", "content": "x"}]
    with pytest.raises(ValueError, match="byte"):
        read_request(b'{"messages": [], "tools": [{"function": {"name": "a", "parameters": {"x": [1,,2]}}}]}')
    with pytest.raises(WireError, match=r"tools\[2\]"):
        read_request(_raw([{"type": "function", "function": {"name": n}} for n in "ab"] + [{"function": {"name": ""}}]))
    with pytest.raises(WireError, match=r"tools\[0\]"):
        read_request(_raw([{"type": "function", "function": {"name": 3}}]))
    # shapes the router's own validation reports stay as they are
    assert read_request(b"[1]") == [1]
    assert read_request(json.dumps({"messages": msg, "tools": {"a": 1}}).encode())["tools"] == {"a": 1}
    assert read_request(json.dumps({"messages": msg, "tools": []}).encode())["tools"] == []
    with pytest.raises(RequestError, match="must be a list"):
        RequestRouter(k=1).route(read_request(json.dumps({"messages": msg, "tools": {"a": 1}}).encode()))


def test_a_tool_list_read_again_is_the_same_list_and_a_bad_one_is_refused_every_time(gorilla_tools):
    """The same tools come with every turn of an agent: the second read reuses the first one's
    split (request_body._SEEN). It must read exactly what a first read reads, still enforce the
    per-request cap, and never remember a list that failed its checks."""
    from router.middleware import request_body

    first = read_request(_raw(gorilla_tools))["tools"]
    again = read_request(_raw(gorilla_tools, text="another turn of the same agent"))["tools"]
    assert request_body._SEEN.get(first.key) is not None and again.key == first.key
    assert again.names == first.names and again.descriptions == first.descriptions
    assert list(again) == gorilla_tools
    with pytest.raises(WireError, match="1,069 tools; at most 1,000"):
        read_request(_raw(gorilla_tools), max_tools=1000)
    bad = _raw(gorilla_tools[:3] + [{"function": {"name": ""}}])
    for _ in range(2):
        with pytest.raises(WireError, match=r"tools\[3\]"):
            read_request(bad)
    assert len(request_body._SEEN) <= request_body._SEEN_LISTS


def test_catalog_ids_follow_a_live_catalog_change(tmp_path, gorilla_records):
    """The catalog ids of a request's tools are remembered per tool list (RequestRouter._ids),
    but only for the catalog state they were read from: after a live change removes one of the
    request's tools from the catalog, the same bytes are no longer routed as catalog tools."""
    import time

    from apidb import Catalog
    from router import Router

    records = gorilla_records[:40]
    db = tmp_path / "catalog.db"
    with Catalog(db) as cat:
        cat.sync(records)
    tools = [r.to_openai_tool(name=n) for r, n in zip(records, unique_names(records))]
    raw = _raw(tools, text="classify images of birds")
    live = Router.open(db, watch=True, dense=False)
    try:
        rr = RequestRouter(live, k=5, method="bm25")
        assert not rr.warm(read_request(raw))  # never seen: the proxy routes it in a worker thread
        assert rr._catalog_ids(read_request(raw)["tools"], [t["function"]["name"] for t in tools]) == \
            [r.id for r in records]
        assert rr._catalog_ids(read_request(raw)["tools"], [t["function"]["name"] for t in tools]) == \
            [r.id for r in records]  # remembered
        assert rr.warm(read_request(raw))  # ... so the proxy may rank it on its event loop
        before = live.records
        with Catalog(db) as cat:
            cat.sync(records[1:], [records[0].namespace])  # what `catalog remove` of records[0] commits
        deadline = time.monotonic() + 20
        while live.records is before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live.records is not before, "the live router did not follow the catalog"
        assert not rr.warm(read_request(raw))  # remembered for the old catalog only
        assert rr._catalog_ids(read_request(raw)["tools"], [t["function"]["name"] for t in tools]) is None
        routed = rr.route(read_request(raw))
        assert len(routed.offered) == 5
    finally:
        live.close()


def test_a_tool_list_is_warm_once_its_router_is_built(gorilla_tools):
    """Without a catalog a request's tools get an in-memory router (embedding them, for hybrid):
    `RequestRouter.warm` says a list needs none of that only once that router is cached, and
    says so for lists the proxy never ranks (k tools or fewer, no tools at all)."""
    rr = RequestRouter(None, k=5, method="bm25")
    raw = _raw(gorilla_tools[:200])
    assert not rr.warm(read_request(raw))
    first = rr.route(read_request(raw))
    assert rr.warm(read_request(raw))
    assert rr.route(read_request(raw)).selected == first.selected
    assert not rr.warm(read_request(_raw(gorilla_tools[:201])))  # one tool more: another list
    assert rr.warm(read_request(_raw(gorilla_tools[:5])))
    assert rr.warm(read_request(_raw([])))
