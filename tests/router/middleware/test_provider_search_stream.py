"""Issue 37, item 2, streamed: a client of a provider's tool search that streams gets the same search
blocks as one that does not — Anthropic's ``server_tool_use`` + ``tool_search_tool_result`` blocks,
OpenAI's ``tool_search_call`` + ``tool_search_output`` items — put together by the real SDKs' own
stream helpers (``client.beta.messages.stream``, ``client.responses.stream``), through the installed
proxy in front of a scripted model that knows nothing of deferral and streams its answers."""
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
QUESTION = {"role": "user", "content": "How much is 5 euros in Norwegian kroner?"}


def model():
    return searching_model("convert_currency", ARGS, "convert money between currencies", "57 NOK", final="57 NOK.")


def test_anthropic_stream_carries_the_search_blocks(tmp_path):
    tools = [BM25, *(t if t["name"] == "get_weather" else dict(t, defer_loading=True) for t in anthropic_tools())]
    with ScriptedUpstream(model()) as up, serving("anthropic", up.url, tmp_path, "--on-hallucination", "reject") as url:
        a = anthropic.Anthropic(api_key="sk-ant-client", base_url=url, max_retries=0)
        ask = dict(model="m", max_tokens=64, tools=tools, messages=[QUESTION], betas=["advanced-tool-use-2025-11-20"])
        with a.beta.messages.stream(**ask) as stream:
            events = [e.type for e in stream]
            streamed = stream.get_final_message()
        whole = a.beta.messages.create(**ask)
        assert [b.type for b in streamed.content] == [b.type for b in whole.content] == [
            "server_tool_use", "tool_search_tool_result", "tool_use"]
        use, result, call = streamed.content
        assert use.name == "tool_search_tool_bm25" and use.input == {"query": "convert money between currencies"}
        assert result.tool_use_id == use.id
        assert "convert_currency" in [r.tool_name for r in result.content.tool_references]
        assert call.name == "convert_currency" and call.input == ARGS
        assert events.count("content_block_start") == 3 and events[-1] == "message_stop"
        assert all(r.get("stream") for r in up.api_requests("messages")[:2])  # the model streamed both rounds


def test_responses_stream_carries_the_search_items(tmp_path):
    tools = [{"type": "tool_search"}, *(t if t["name"] == "get_weather" else dict(t, defer_loading=True)
                                        for t in responses_tools())]
    with ScriptedUpstream(model()) as up, serving("openai", up.base_url, tmp_path, "--on-hallucination", "reject") as url:
        c = openai.OpenAI(api_key="sk-client", base_url=f"{url}/v1", max_retries=0)
        with c.responses.stream(model="m", input=[QUESTION], tools=tools) as stream:
            added = [e.output_index for e in stream if e.type == "response.output_item.added"]
            final = stream.get_final_response()
        assert [o.type for o in final.output] == ["tool_search_call", "tool_search_output", "function_call"]
        assert added == [0, 1, 2]  # the model's call moved up behind the two search items
        assert "convert_currency" in [t.name for t in final.output[1].tools]
        assert final.output[2].name == "convert_currency" and json.loads(final.output[2].arguments) == ARGS
        # a follow-up by previous_response_id keeps the tool the streamed search loaded
        up.set_script([response(calls=[("convert_currency", ARGS)])])
        raw = c.responses.with_raw_response.create(model="m", previous_response_id=final.id, tools=tools, input=[
            {"type": "function_call_output", "call_id": final.output[2].call_id, "output": "57 NOK"}])
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True


def test_responses_stream_gives_a_client_executed_search_call_as_its_item(tmp_path):
    finder = {"type": "tool_search", "execution": "client", "description": "Find more tools by what they do.",
              "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
    deferred = [dict(t, defer_loading=True) for t in responses_tools() if t["name"] != "get_weather"]
    tools = [finder, *(t for t in responses_tools() if t["name"] == "get_weather"), *deferred]
    with ScriptedUpstream(model()) as up, serving("openai", up.base_url, tmp_path, "--on-hallucination", "reject") as url:
        c = openai.OpenAI(api_key="sk-client", base_url=f"{url}/v1", max_retries=0)
        with c.responses.stream(model="m", input=[QUESTION], tools=tools) as stream:
            kinds = [e.type for e in stream]
            final = stream.get_final_response()
        whole = c.responses.create(model="m", input=[QUESTION], tools=tools)
        call = final.output[0]
        assert [o.type for o in final.output] == [o.type for o in whole.output] == ["tool_search_call"]
        assert call.execution == "client" and call.arguments == {"query": "convert money between currencies"}
        assert "response.function_call_arguments.delta" not in kinds  # the stand-in's arguments never show
        assert "toolsift_search_tools" in json.dumps(up.api_requests("responses")[0]["tools"])
