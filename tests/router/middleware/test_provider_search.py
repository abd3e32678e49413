"""Issue 37, item 2: a client written for Anthropic's tool search (``defer_loading`` tools and a
``tool_search_tool_bm25`` server tool) runs unchanged through the installed `toolsift serve
anthropic` in front of a scripted model that knows nothing of deferral: toolsift answers the
search with its router and returns Anthropic's blocks (``server_tool_use``,
``tool_search_tool_result`` with ``tool_reference``s)."""
from __future__ import annotations

import json

import anthropic

from tests.router.middleware.test_conversations import serving
from tests.router.middleware.test_proxy_apis import anthropic_tools
from tests.support.scripted_apis import searching_model
from tests.support.scripted_upstream import ScriptedUpstream

ARGS = {"amount": 5, "from_currency": "EUR", "to_currency": "NOK"}
BM25 = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}


def test_anthropic_defer_loading_client_against_a_model_that_never_heard_of_it(tmp_path):
    tools = [BM25, *(t if t["name"] == "get_weather" else dict(t, defer_loading=True) for t in anthropic_tools())]
    model = searching_model("convert_currency", ARGS, "convert money between currencies", "57 NOK", final="5 EUR is 57 NOK.")
    with ScriptedUpstream(model) as up, serving("anthropic", up.url, tmp_path, "--on-hallucination", "reject") as url:
        a = anthropic.Anthropic(api_key="sk-ant-client", base_url=url, max_retries=0)
        question = {"role": "user", "content": "How much is 5 euros in Norwegian kroner?"}
        raw = a.beta.messages.with_raw_response.create(model="m", max_tokens=64, tools=tools, messages=[question],
                                                       betas=["advanced-tool-use-2025-11-20"])
        msg = raw.parse()
        kinds = [b.type for b in msg.content]
        assert kinds == ["server_tool_use", "tool_search_tool_result", "tool_use"], kinds
        assert msg.content[0].name == "tool_search_tool_bm25"
        assert "convert_currency" in [r.tool_name for r in msg.content[1].content.tool_references]
        assert msg.content[2].name == "convert_currency" and msg.content[2].input == ARGS
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        first, second = up.api_requests("messages")
        sent = json.dumps(first)
        assert "defer_loading" not in sent and "tool_search_tool_bm25" not in sent  # the model never hears of it
        assert [t["name"] for t in first["tools"]] == ["get_weather", "toolsift_search_tools"]
        assert "convert_currency" in [t["name"] for t in second["tools"]]
        # the next turn, as the SDK sends it: the search blocks come back; the found tool stays loaded
        done = a.beta.messages.create(model="m", max_tokens=64, tools=tools, betas=["advanced-tool-use-2025-11-20"],
                                      messages=[question, {"role": "assistant", "content": msg.content},
                                                {"role": "user", "content": [{"type": "tool_result", "tool_use_id":
                                                                              msg.content[2].id, "content": "57 NOK"}]}])
        assert done.content[0].text == "5 EUR is 57 NOK."
        third = up.api_requests("messages")[2]
        assert "convert_currency" in [t["name"] for t in third["tools"]]
        assert "server_tool_use" not in json.dumps(third) and "tool_search_tool_result" not in json.dumps(third)
