"""Issue 13 on the real proxy: safe defaults (nothing added, what an agent needs always kept,
what was kept said in headers), upstream fidelity, and the Responses and Messages APIs — with
the real openai and anthropic clients against the scripted upstream speaking each wire format."""
from __future__ import annotations

import json
import logging

import anthropic
import httpx
import openai
import pytest

from tests.router.middleware.test_proxy import KEY, client, running, stb_router, user  # noqa: F401
from tests.support.scripted_apis import agent_model, message, response
from tests.support.scripted_upstream import ScriptedUpstream, completion, error, offered_names
from tests.support.toolsets import small_tools

WEB_SEARCH = {"type": "web_search"}
ANTHROPIC_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 1}


def responses_tools() -> list[dict]:
    return [{"type": "function", **t["function"]} for t in small_tools()]


def anthropic_tools() -> list[dict]:
    return [{"name": f["name"], "description": f["description"], "input_schema": f["parameters"]}
            for f in (t["function"] for t in small_tools())]


def test_no_catalog_tools_added_unless_asked(stb_router):
    with ScriptedUpstream([completion("plain"), completion("plain")]) as up:
        with running(up.base_url, stb_router, k=4) as srv:
            raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("weather in Oslo"))
        assert "tools" not in up.chat_requests[0]  # the request brought none: none were added
        assert raw.headers["x-toolsift-route"].startswith("none; in=0; out=0")
        with running(up.base_url, stb_router, k=4, inject=True) as srv:
            raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("weather in Oslo"))
        assert len(up.chat_requests[1]["tools"]) == 4 and raw.headers["x-toolsift-route"].startswith("injected")


def test_control_tools_marked_tools_and_small_lists_are_always_kept():
    tools = small_tools() + [
        {"type": "function", "function": {"name": "final_answer", "description": "Provides a final answer.",
                                          "parameters": {"type": "object", "properties": {"answer": {}}}}},
        {"type": "function", "function": {"name": "final_result_Forecast", "description": "The final response.",
                                          "parameters": {"type": "object", "properties": {}}}}]
    with ScriptedUpstream([completion("a"), completion("b")]) as up, running(up.base_url, k=2) as srv:
        raw = client(srv, default_headers={"x-toolsift-keep": "set_timer"}).chat.completions.with_raw_response.create(
            model="m", messages=user("weather in Oslo"), tools=tools)
        sent = offered_names(up.chat_requests[0])
        assert {"final_answer", "final_result_Forecast", "set_timer", "get_weather"} <= set(sent)
        assert len(sent) <= 2 + 3
        selected = json.loads(raw.headers["x-toolsift-selected"])
        assert {"name": "final_answer", "reason": "control"} in selected
        assert {"name": "set_timer", "reason": "request"} in selected
        assert "kept=control:2,request:1" in raw.headers["x-toolsift-route"]
        assert "x-toolsift-keep" not in up.requests[0].headers  # the mark is the proxy's, not the upstream's
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("x"), tools=tools[:2])
        assert offered_names(up.chat_requests[1]) == ["get_weather", "geocode_city"]
        assert raw.headers["x-toolsift-route"].startswith("all; in=2; out=2")


def test_upstream_headers_status_and_body_come_back_with_or_without_v1():
    limited = error(429, {"error": {"message": "slow down", "type": "rate_limit"}},
                    {"retry-after": "7", "x-ratelimit-remaining-requests": "0"})
    with ScriptedUpstream([completion("hi"), limited, completion("streamed")]) as up, \
            running(up.url, k=3) as srv:  # upstream given without /v1
        c = openai.OpenAI(api_key=KEY, base_url=srv.url, max_retries=0)  # client without /v1
        raw = c.chat.completions.with_raw_response.create(model="m", messages=user("x"), tools=small_tools())
        assert raw.headers["x-request-id"].startswith("req_scripted_") and "x-toolsift-verdicts" in raw.headers
        with pytest.raises(openai.RateLimitError) as exc:
            c.chat.completions.create(model="m", messages=user("x"))
        assert exc.value.response.headers["retry-after"] == "7"
        assert exc.value.response.headers["x-ratelimit-remaining-requests"] == "0"
        assert exc.value.body["message"] == "slow down"
        with c.chat.completions.with_streaming_response.create(model="m", messages=user("x"), stream=True) as r:
            assert r.headers["x-request-id"].startswith("req_scripted_")
        assert [r.path for r in up.requests] == ["/v1/chat/completions"] * 3
        other = httpx.get(f"{srv.url}/models")
        assert other.status_code == 200 and other.headers["x-toolsift-route"].startswith("unrouted; reason=")


def test_responses_api_routed_checked_repaired_and_builtin_tools_untouched():
    tools = [*responses_tools(), WEB_SEARCH]
    bad = response(calls=[("get_wether", {"city": "Oslo"})])
    good = response(calls=[("get_weather", {"city": "Oslo"})])
    with ScriptedUpstream([good, bad, good]) as up, running(up.base_url, k=3, on_hallucination="repair") as srv:
        c = client(srv)
        raw = c.responses.with_raw_response.create(model="m", input="weather in Oslo?", tools=tools,
                                                   instructions="You are a weather bot.")
        resp = raw.parse()
        assert resp.output[0].name == "get_weather"
        sent = up.api_requests("responses")[0]
        assert WEB_SEARCH in sent["tools"] and len(sent["tools"]) == 3 + 1
        assert all(t in tools for t in sent["tools"])  # the caller's exact tool objects
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["verdict"] in ("valid", "correct")
        assert raw.headers["x-toolsift-route"].endswith("builtin=1")
        raw = c.responses.with_raw_response.create(model="m", input=[{"role": "user", "content": "weather?"}],
                                                   tools=tools)
        assert raw.headers["x-toolsift-repairs"] == "1" and raw.parse().output[0].name == "get_weather"
        repair = up.api_requests("responses")[2]["input"]
        assert repair[1]["type"] == "function_call" and repair[1]["name"] == "get_wether"
        assert repair[2]["type"] == "function_call_output" and "get_weather" in repair[2]["output"]


def test_responses_stream_and_previous_response_id():
    tools = [*responses_tools(), WEB_SEARCH]
    with ScriptedUpstream([response(calls=[("play_music", {"query": "Abba"})]), response("done"),
                           response(calls=[("get_wether", {})])]) as up, \
            running(up.base_url, k=2) as srv:
        c = client(srv)
        events = list(c.responses.create(model="m", input="play some Abba music", tools=tools, stream=True))
        assert events[-1].type == "response.completed" and events[-1].response.output[0].name == "play_music"
        first_id = events[-1].response.id
        # the follow-up says nothing about music: routing knows from the remembered conversation
        c.responses.create(model="m", previous_response_id=first_id, tools=tools,
                           input=[{"type": "function_call_output", "call_id": "c1", "output": "playing"}])
        assert "play_music" in [t.get("name") for t in up.api_requests("responses")[1]["tools"]]
        with httpx.stream("POST", f"{srv.url}/v1/responses", json={
                "model": "m", "input": "weather", "tools": tools, "stream": True}) as r:
            lines = [line for line in r.iter_lines() if line]
    comment = [i for i, line in enumerate(lines) if line.startswith(": toolsift-verdicts")]
    assert len(comment) == 1 and lines[comment[0] + 1] == "event: response.completed"
    assert json.loads(lines[comment[0]].split(" ", 2)[2])[0]["verdict"] == "hallucinated_tool"


def test_messages_api_with_the_real_anthropic_client(caplog):
    caplog.set_level(logging.INFO, logger="toolsift.proxy")
    tools = [*anthropic_tools(), ANTHROPIC_SEARCH]
    limited = error(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
                    {"retry-after": "3"})
    with ScriptedUpstream([message(calls=[("get_weather", {"city": "Oslo"})]), message(calls=[("get_wether", {})]),
                           limited]) as up, running(up.url, k=3) as srv:
        a = anthropic.Anthropic(api_key="sk-ant-secret-1", base_url=srv.url, max_retries=0)
        raw = a.messages.with_raw_response.create(model="m", max_tokens=64, tools=tools, messages=[
            {"role": "user", "content": "weather in Oslo?"}])
        assert raw.parse().content[0].name == "get_weather"
        sent = up.api_requests("messages")[0]
        assert ANTHROPIC_SEARCH in sent["tools"] and len(sent["tools"]) == 3 + 1
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        assert raw.headers["x-request-id"].startswith("req_scripted_")
        with a.messages.stream(model="m", max_tokens=64, tools=tools,
                               messages=[{"role": "user", "content": "weather?"}]) as stream:
            final = stream.get_final_message()
        assert final.content[0].name == "get_wether"
        with pytest.raises(anthropic.RateLimitError) as exc:
            a.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}])
        assert exc.value.response.headers["retry-after"] == "3"
        got = up.requests[0].headers
        assert "sk-ant-secret-1" in (got.get("x-api-key", "") + got.get("authorization", ""))
        assert got["anthropic-version"]
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "toolsift.proxy"]
    assert lines[1]["api"] == "messages" and lines[1]["verdicts"] == ["hallucinated_tool"]
    assert "sk-ant-secret-1" not in caplog.text


def test_messages_stream_verdict_comment_and_reject():
    tools = anthropic_tools()
    with ScriptedUpstream([message(calls=[("get_wether", {})]), message(calls=[("get_wether", {})])]) as up, \
            running(up.base_url, k=3, on_hallucination="reject") as srv:
        with httpx.stream("POST", f"{srv.url}/v1/messages", json={
                "model": "m", "max_tokens": 9, "stream": True, "tools": tools,
                "messages": [{"role": "user", "content": "weather"}]}) as r:
            lines = [line for line in r.iter_lines() if line]
        i = next(i for i, line in enumerate(lines) if line.startswith(": toolsift-verdicts"))
        assert json.loads(lines[i].split(" ", 2)[2])[0]["verdict"] == "hallucinated_tool"
        assert lines[i + 1] == "event: message_stop"
        with pytest.raises(anthropic.UnprocessableEntityError):
            anthropic.Anthropic(api_key="k", base_url=srv.url, max_retries=0).messages.create(
                model="m", max_tokens=9, tools=tools, messages=[{"role": "user", "content": "weather"}])


def test_agent_model_finishes_only_when_its_tool_is_kept():
    """The scripted agent model of the framework suite, driven through the proxy by hand."""
    tools = small_tools()
    with ScriptedUpstream(agent_model()) as up, running(up.base_url, k=3) as srv:
        c = client(srv)
        first = c.chat.completions.create(model="m", messages=user("What's the weather in Oslo?"), tools=tools)
        call = first.choices[0].message.tool_calls[0]
        assert call.function.name == "get_weather"
        done = c.chat.completions.create(model="m", tools=tools, messages=[
            *user("What's the weather in Oslo?"), first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "12 °C, sunny"}])
        assert "sunny" in done.choices[0].message.content
