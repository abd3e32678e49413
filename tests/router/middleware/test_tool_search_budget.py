"""Issue 37: the token budget (``--token-budget``) counts toolsift's own search tool. Its schema is
read by the model like any other, so the tools of the first upstream request, search tool
included, stay within the budget, and ``x-toolsift-route`` says ``budget=USED/LIMIT``. Through the
real proxy and the real openai client, with a scripted model."""
from __future__ import annotations

import pytest

from router.tokens import tool_tokens
from tests.router.middleware.test_proxy import client, running, stb_router, user  # noqa: F401 (fixture)
from tests.support.scripted_apis import offered_tools
from tests.support.scripted_upstream import ScriptedUpstream, completion
from tests.support.toolsets import small_tools

SEARCH = "toolsift_search_tools"
QUESTION = "What's the weather in Oslo?"


def search_cost() -> int:
    from router.middleware.search import chat_search_tool

    return tool_tokens(chat_search_tool())


def first_request(up_url: str, budget: int, **kw) -> tuple[list[dict], str]:
    """The tools of the first upstream request, and the route header, under ``budget``."""
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, k=5, tool_search=True,
                                                             token_budget=budget, **kw) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user(QUESTION),
                                                                    tools=small_tools())
        return up.chat_requests[0]["tools"], raw.headers["x-toolsift-route"]


@pytest.mark.parametrize("room", ["search fits", "search alone over"])
def test_search_tool_counts_against_the_token_budget(room):
    # a budget the five best tools would fill on their own: the search tool must take its share
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, k=5, tool_search=True) as srv:
        client(srv).chat.completions.create(model="m", messages=user(QUESTION), tools=small_tools())
        routed = [t for t in up.chat_requests[0]["tools"] if t["function"]["name"] != SEARCH]
    cost = search_cost()
    budget = sum(tool_tokens(t) for t in routed) if room == "search fits" else cost - 1
    tools, route = first_request("", budget)
    used = sum(tool_tokens(t) for t in tools)
    assert used <= budget and f"budget={used}/{budget}" in route, (used, budget, route)
    names = [t["function"]["name"] for t in tools]
    if room == "search fits":
        assert names[-1] == SEARCH and len(names) - 1 < len(routed)  # a routed tool made room for it
    else:
        assert SEARCH not in names and names  # no room for it: not offered, the routed tools kept


def test_injected_tools_and_search_tool_share_the_budget(stb_router):  # noqa: F811
    budget = 400
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, stb_router, k=5, inject=True,
                                                             tool_search=True, token_budget=budget) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("Tell me a joke"))
        tools = up.chat_requests[0]["tools"]
    used = sum(tool_tokens(t) for t in tools)
    assert list(offered_tools(up.chat_requests[0], "chat"))[-1] == SEARCH and len(tools) > 1
    assert used <= budget and f"budget={used}/{budget}" in raw.headers["x-toolsift-route"]


def test_pinned_catalog_tool_keeps_its_room_from_the_search_tool(stb_router):  # noqa: F811
    """A pin that fits the budget, but not beside the search tool: the pin is kept, the search tool left out."""
    pin = "get_random_joke_for_world_of_jokes"
    cost = tool_tokens(next(r for r in stb_router.records if r.name == pin).to_openai_tool())
    budget = max(cost, search_cost()) + 2  # each fits on its own, not both
    assert cost + search_cost() > budget
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, stb_router, k=5, inject=True, pinned=(pin,),
                                                             tool_search=True, token_budget=budget) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("Tell me a joke"))
        names = list(offered_tools(up.chat_requests[0], "chat"))
    assert raw.status_code == 200 and pin in names and SEARCH not in names, names
