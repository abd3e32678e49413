"""Issue 37, item 1: a tool search the model can call, for any upstream model. Through the real
proxy with the real openai / anthropic clients and a scripted model whose needed tool routing
left out: the model searches, toolsift answers with its router and continues upstream with the
found tool appended, within the one client request; the client never sees the search tool."""
from __future__ import annotations

import json

import anthropic
import openai
import pytest

from tests.router.middleware.test_proxy import client, running, user
from tests.router.middleware.test_proxy_apis import anthropic_tools, responses_tools
from tests.support.scripted_apis import offered_tools, searching_model
from tests.support.scripted_upstream import ScriptedUpstream
from tests.support.toolsets import small_tools

SEARCH = "toolsift_search_tools"
QUESTION = "What's the weather in Oslo?"   # routing keeps the weather tools, not the currency one
ARGS = {"amount": 5, "from_currency": "EUR", "to_currency": "NOK"}


def model() -> object:
    return searching_model("convert_currency", ARGS, "convert an amount of money between currencies", "57 NOK")


def names(request: dict, api: str) -> list[str]:
    return list(offered_tools(request, api))


def appended(first: dict, second: dict, api: str) -> bool:
    """The found tool comes after every tool sent before (so the prompt cache survives)."""
    before, after = names(first, api), names(second, api)
    return after[:len(before)] == before and "convert_currency" in after[len(before):]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_model_searches_and_calls_the_tool_routing_left_out(stream):
    with ScriptedUpstream(model()) as up, running(up.base_url, k=2, tool_search=True,
                                                  on_hallucination="reject") as srv:
        c = client(srv)
        if stream:
            with c.chat.completions.with_streaming_response.create(model="m", messages=user(QUESTION),
                                                                   tools=small_tools(), stream=True) as raw:
                headers, body = raw.headers, raw.text()
            assert SEARCH not in body and "convert_currency" in body
            comment = next(line for line in body.splitlines() if line.startswith(": toolsift-verdicts"))
            assert json.loads(comment.split(" ", 2)[2])[0]["ok"] is True  # checked against the found tool
        else:
            raw = c.chat.completions.with_raw_response.create(model="m", messages=user(QUESTION), tools=small_tools())
            headers, call = raw.headers, raw.parse().choices[0].message.tool_calls[0]
            assert call.function.name == "convert_currency" and json.loads(call.function.arguments) == ARGS
            assert json.loads(headers["x-toolsift-verdicts"])[0]["ok"] is True
            assert {"name": "convert_currency", "reason": "searched"} in json.loads(headers["x-toolsift-selected"])
        first, second = up.chat_requests
        assert names(first, "chat")[-1] == SEARCH and len(names(first, "chat")) == 2 + 1
        # the found tool is appended after everything sent before: the prompt cache survives
        assert appended(first, second, "chat")
        assert "convert_currency" in second["messages"][-1]["content"]  # the search's answer names it
        # headers go out before a stream's rounds: they say the search was offered, the rounds later
        assert f"search={0 if stream else 1}" in headers["x-toolsift-route"]


def test_search_is_off_by_switch_and_rounds_are_bounded():
    with ScriptedUpstream(model()) as up, running(up.base_url, k=2) as srv:
        answer = client(srv).chat.completions.create(model="m", messages=user(QUESTION), tools=small_tools())
        assert "not offered" in answer.choices[0].message.content and SEARCH not in names(up.chat_requests[0], "chat")
    never = searching_model("no_such_tool", {}, "a tool nobody has", "never")
    with ScriptedUpstream(never) as up, running(up.base_url, k=2, tool_search=True) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user(QUESTION),
                                                                    tools=small_tools())
        assert len(up.chat_requests) == 3 and SEARCH not in names(up.chat_requests[-1], "chat")  # 2 rounds, then act
        assert "search=2" in raw.headers["x-toolsift-route"] and "cannot" in raw.parse().choices[0].message.content


@pytest.mark.parametrize("stream", [False, True])
def test_responses_and_messages_model_searches_too(stream):
    with ScriptedUpstream(model()) as up, running(up.url, k=2, tool_search=True) as srv:
        c = client(srv)
        if stream:
            events = list(c.responses.create(model="m", input=QUESTION, tools=responses_tools(), stream=True))
            assert not any(SEARCH in e.model_dump_json() for e in events)
            resp = events[-1].response
        else:
            resp = c.responses.create(model="m", input=QUESTION, tools=responses_tools())
        assert resp.output[0].name == "convert_currency"
        first, second = up.api_requests("responses")
        assert names(first, "responses")[-1] == SEARCH and appended(first, second, "responses")
        assert second["input"][-1]["type"] == "function_call_output"
        a = anthropic.Anthropic(api_key="k", base_url=srv.url, max_retries=0)
        ask = dict(model="m", max_tokens=64, tools=anthropic_tools(), messages=[{"role": "user", "content": QUESTION}])
        if stream:
            with a.messages.stream(**ask) as events:
                msg = events.get_final_message()
        else:
            msg = a.messages.create(**ask)
        assert [b.name for b in msg.content] == ["convert_currency"] and msg.content[0].input == ARGS
        first, second = up.api_requests("messages")
        assert names(first, "messages")[-1] == SEARCH and appended(first, second, "messages")


def test_wrapped_client_searches_when_not_streaming():
    from router.middleware import wrap

    with ScriptedUpstream(model()) as up:
        c = wrap(openai.OpenAI(api_key="k", base_url=up.base_url, max_retries=0), k=2, method="bm25",
                 tool_search=True)
        resp = c.chat.completions.create(model="m", messages=user(QUESTION), tools=small_tools())
        assert resp.choices[0].message.tool_calls[0].function.name == "convert_currency" and resp.toolsift.ok
        assert "search=1" in resp.toolsift.route and len(up.chat_requests) == 2
        # a stream through wrap() cannot take a search round back: no search tool is offered
        list(c.chat.completions.create(model="m", messages=user(QUESTION), tools=small_tools(), stream=True))
        assert SEARCH not in names(up.chat_requests[-1], "chat")


def test_installed_proxy_switch(tmp_path):
    from tests.router.middleware.test_conversations import serving

    with ScriptedUpstream(model()) as up, serving("openai", up.base_url, tmp_path, "--tool-search", "on") as url:
        c = openai.OpenAI(api_key="k", base_url=f"{url}/v1", max_retries=0)
        resp = c.chat.completions.create(model="m", messages=user(QUESTION), tools=small_tools())
        assert resp.choices[0].message.tool_calls[0].function.name == "convert_currency"
        assert len(up.chat_requests) == 2 and names(up.chat_requests[0], "chat")[-1] == SEARCH
