"""The scripted upstream speaks the wire format the real openai client expects."""
from __future__ import annotations

import httpx
import openai
import pytest

from tests.support.scripted_upstream import (ScriptedUpstream, completion, error, garbage, offered_names,
                                             slow, tool_call)


def client(up: ScriptedUpstream, **kw) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=up.base_url, max_retries=0, **kw)


def test_plain_and_tool_call_answers_and_recording():
    with ScriptedUpstream([completion("hello"), completion(tool_calls=[tool_call("get_weather", {"city": "Oslo"})])]) as up:
        c = client(up)
        r1 = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        r2 = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "weather?"}],
                                       tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])
        assert r1.choices[0].message.content == "hello"
        assert r2.choices[0].message.tool_calls[0].function.name == "get_weather"
        assert [offered_names(j) for j in up.chat_requests] == [[], ["get_weather"]]
        assert up.requests[0].headers["authorization"] == "Bearer sk-test"


def test_streaming_tool_call_deltas_assemble():
    call = tool_call("get_weather", {"city": "Oslo", "unit": "celsius"})
    with ScriptedUpstream([completion("ok then", [call])]) as up:
        chunks = list(client(up).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                                         stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    args = "".join(tc.function.arguments or "" for c in chunks for tc in (c.choices[0].delta.tool_calls or []))
    assert text == "ok then"
    assert args == call["function"]["arguments"]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_callable_script_errors_garbage_and_timeout():
    with ScriptedUpstream(lambda req: completion(f"{len(req['messages'])} messages")) as up:
        r = client(up).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}] * 3)
        assert r.choices[0].message.content == "3 messages"
    with ScriptedUpstream([error(500), garbage(), slow(2.0, completion("late"))]) as up:
        with pytest.raises(openai.InternalServerError):
            client(up).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        resp = httpx.post(f"{up.base_url}/chat/completions", json={"messages": []})
        assert resp.status_code == 200 and resp.content.startswith(b"<html>")
        with pytest.raises(openai.APITimeoutError):
            client(up, timeout=0.3).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert httpx.get(f"{up.base_url}/models").json()["data"][0]["id"] == "scripted-model"
