"""Issue 37, item 2: clients written for the providers' tool searches run unchanged through the
installed proxy in front of a scripted model that knows nothing of deferral — Anthropic's
(``defer_loading`` tools and a ``tool_search_tool_bm25`` server tool; ``server_tool_use`` +
``tool_search_tool_result`` blocks back) and OpenAI's hosted Responses ``tool_search``
(``tool_search_call`` + ``tool_search_output`` items back): toolsift answers the search with its router."""
from __future__ import annotations

import json

import anthropic
import openai

from tests.router.middleware.test_conversations import serving
from tests.router.middleware.test_proxy_apis import anthropic_tools, responses_tools
from tests.support.scripted_apis import response, searching_model
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


def test_openai_hosted_tool_search_client_against_a_model_that_never_heard_of_it(tmp_path):
    tools = [{"type": "tool_search"}, *(t if t["name"] == "get_weather" else dict(t, defer_loading=True)
                                        for t in responses_tools())]
    model = searching_model("convert_currency", ARGS, "convert money between currencies", "57 NOK", final="57 NOK.")
    with ScriptedUpstream(model) as up, serving("openai", up.base_url, tmp_path, "--on-hallucination", "reject") as url:
        c = openai.OpenAI(api_key="sk-client", base_url=f"{url}/v1", max_retries=0)
        question = {"role": "user", "content": "How much is 5 euros in Norwegian kroner?"}
        raw = c.responses.with_raw_response.create(model="m", input=[question], tools=tools)
        resp = raw.parse()
        assert [o.type for o in resp.output] == ["tool_search_call", "tool_search_output", "function_call"]
        assert "convert_currency" in [t.name for t in resp.output[1].tools]
        assert resp.output[2].name == "convert_currency" and json.loads(resp.output[2].arguments) == ARGS
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        first = up.api_requests("responses")[0]
        assert "defer_loading" not in json.dumps(first) and '"tool_search"' not in json.dumps(first)
        # the next turn sends the search items back: the found tool stays loaded, the items stay home
        items = [question, *(o.model_dump(exclude_none=True) for o in resp.output),
                 {"type": "function_call_output", "call_id": resp.output[2].call_id, "output": "57 NOK"}]
        done = c.responses.create(model="m", input=items, tools=tools)
        assert done.output_text == "57 NOK."
        last = up.api_requests("responses")[-1]
        assert "convert_currency" in [t["name"] for t in last["tools"]]
        assert "tool_search_call" not in json.dumps(last["input"])


def test_openai_client_executed_tool_search_against_a_model_that_never_heard_of_it(tmp_path):
    finder = {"type": "tool_search", "execution": "client", "description": "Find more tools by what they do.",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    deferred = [dict(t, defer_loading=True) for t in responses_tools() if t["name"] != "get_weather"]
    tools = [finder, *(t for t in responses_tools() if t["name"] == "get_weather"), *deferred]
    model = searching_model("convert_currency", ARGS, "convert money between currencies", "57 NOK")
    with ScriptedUpstream(model) as up, serving("openai", up.base_url, tmp_path, "--on-hallucination", "reject") as url:
        c = openai.OpenAI(api_key="sk-client", base_url=f"{url}/v1", max_retries=0)
        question = {"role": "user", "content": "How much is 5 euros in Norwegian kroner?"}
        resp = c.responses.create(model="m", input=[question], tools=tools)
        call = resp.output[0]
        assert call.type == "tool_search_call" and call.execution == "client"
        assert call.arguments == {"query": "convert money between currencies"}
        first = up.api_requests("responses")[0]
        assert "defer_loading" not in json.dumps(first) and '"tool_search"' not in json.dumps(first)
        # the client runs its own search and answers with the tools it found
        found = {"type": "tool_search_output", "call_id": call.call_id, "execution": "client", "status": "completed",
                 "tools": [next(t for t in responses_tools() if t["name"] == "convert_currency")]}
        raw = c.responses.with_raw_response.create(model="m", tools=tools, input=[
            question, call.model_dump(exclude_none=True), found])
        resp = raw.parse()
        assert resp.output[0].type == "function_call" and resp.output[0].name == "convert_currency"
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        second = up.api_requests("responses")[1]
        assert [i["type"] for i in second["input"][1:]] == ["function_call", "function_call_output"]
        assert "convert_currency" in [t["name"] for t in second["tools"]]


def test_openai_hosted_tool_search_follow_up_by_previous_response_id_keeps_the_found_tool(tmp_path):
    """previous_response_id does not send the search items again: the proxy remembers what they loaded."""
    tools = [{"type": "tool_search"}, *(t if t["name"] == "get_weather" else dict(t, defer_loading=True)
                                        for t in responses_tools())]
    model = searching_model("convert_currency", ARGS, "convert money between currencies", "57 NOK", final="57 NOK.")
    with ScriptedUpstream(model) as up, serving("openai", up.base_url, tmp_path, "--on-hallucination", "reject") as url:
        c = openai.OpenAI(api_key="sk-client", base_url=f"{url}/v1", max_retries=0)
        first = c.responses.create(model="m", input="How much is 5 euros in Norwegian kroner?", tools=tools)
        call = first.output[-1]
        up.set_script([response(calls=[("convert_currency", ARGS)])])  # the model calls it again
        raw = c.responses.with_raw_response.create(model="m", previous_response_id=first.id, tools=tools, input=[
            {"type": "function_call_output", "call_id": call.call_id, "output": "57 NOK"}])
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True  # not a 422
        assert "convert_currency" in [t["name"] for t in up.api_requests("responses")[-1]["tools"]]
