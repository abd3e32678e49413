"""Issues 42 and 37 (item 5): every malformed request is a 400 in the client's own API shape and
words, on all three routed paths (Chat Completions, Responses, Messages), against the running
proxy (uvicorn on 127.0.0.1) and the scripted upstream.

First each reproduction of the probe (each was a 500 with a traceback, or an error describing a
Chat Completions shape to a Responses or Messages client); then a fuzz: valid requests of each
API with one field replaced by something hostile (wrong types, deep nesting, lone surrogates,
huge numbers). The proxy may forward or refuse; it never answers 500, and a refusal is that
API's error object.
"""
from __future__ import annotations

import copy
import json
import logging

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.router.middleware.test_proxy import running
from tests.support.scripted_apis import answer
from tests.support.scripted_upstream import ScriptedUpstream

PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}
NAMES = [f"tool_{i}" for i in range(6)]
DEEP = "__DEEP__"


def valid(api: str) -> dict:
    """A well-formed request of ``api`` with more tools than k (so that it is ranked)."""
    if api == "chat":
        return {"model": "m", "messages": [
            {"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "tool_1", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"}],
            "tools": [{"type": "function", "function": {"name": n, "description": "weather", "parameters": {
                "type": "object"}}} for n in NAMES],
            "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [
                {"type": "function", "function": {"name": "tool_0"}}]}}}
    if api == "responses":
        return {"model": "m", "instructions": "be brief", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "weather please"}]},
            {"type": "function_call", "call_id": "c1", "name": "tool_1", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "done"}],
            "tools": [{"type": "function", "name": n, "description": "weather", "parameters": {"type": "object"}}
                      for n in NAMES],
            "tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "tool_0"}]}}
    return {"model": "m", "max_tokens": 10, "system": [{"type": "text", "text": "be brief"}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "weather please"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "tool_1", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1",
                                      "content": [{"type": "text", "text": "done"}]}]}],
        "tools": [{"name": n, "description": "weather", "input_schema": {"type": "object"}} for n in NAMES],
        "tool_choice": {"type": "tool", "name": "tool_0"}}


def error_message(api: str, r: httpx.Response) -> str:
    """The message of an error answer, checking it has ``api``'s error shape."""
    body = r.json()
    if api == "messages":
        assert body["type"] == "error" and set(body["error"]) >= {"type", "message"}, body
    else:
        assert set(body["error"]) >= {"message", "type", "code"}, body
    return body["error"]["message"]


@pytest.fixture(scope="module")
def proxy():
    with ScriptedUpstream(lambda request, api: answer(api, "ok"), repeat_last=True) as up, \
            running(up.base_url, k=3) as srv:
        yield srv


def send(proxy, api: str, body: dict | str) -> httpx.Response:
    content = body if isinstance(body, str) else json.dumps(body)
    return httpx.post(proxy.url + PATHS[api], content=content.replace(f'"{DEEP}"', "[" * 5000 + "]" * 5000),
                      headers={"content-type": "application/json"}, timeout=60)


def with_(api: str, path: tuple, value) -> dict:
    body = copy.deepcopy(valid(api))
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


CASES = [  # (api, field, value, words the 400 must hold)
    ("chat", ("extra",), DEEP, "nests too deeply"),
    ("chat", ("tool_choice", "allowed_tools"), 5, "tool_choice.allowed_tools must be an object"),
    ("responses", ("tool_choice", "tools"), 5, "tool_choice.tools must be a list"),
    ("responses", ("tools",), 5, "'tools' must be a list"),
    ("responses", ("input",), 5, "'input' must be a string or a list of input items"),
    ("responses", ("tools", 0, "name"), None, 'a function tool is {"type": "function", "name"'),
    ("responses", ("input", 0, "content", 0, "text"), 5, "input[0].content[0].text must be a string"),
    ("messages", ("system", 0, "text"), 5, "system[0].text must be a string"),
    ("messages", ("messages", 2, "content", 0, "content", 0, "text"), {"a": 1},
     "messages[2].content[0].content[0].text must be a string"),
    ("messages", ("tools", 0, "name"), None, 'a tool is {"name", "description", "input_schema"}'),
    ("messages", ("messages",), 5, "'messages' must be a non-empty list"),
]


@pytest.mark.parametrize("api, path, value, words", CASES)
def test_each_reproduction_is_a_400_in_the_apis_own_shape_and_words(proxy, caplog, api, path, value, words):
    assert send(proxy, api, valid(api)).status_code == 200  # the valid request goes through
    with caplog.at_level(logging.ERROR, logger="toolsift.proxy"):
        r = send(proxy, api, with_(api, path, value))
    message = error_message(api, r)
    assert r.status_code == 400 and words in message, message
    assert "Traceback" not in caplog.text and "unexpected error" not in caplog.text
    if api != "chat":  # never the Chat Completions shapes or the image-only guess
        assert '"function": {' not in message and "image-only" not in message
    if api == "responses":
        assert "messages" not in message


hostile = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70), st.floats(),
                    st.sampled_from(["", "\ud800", "x" * 5000, DEEP, "{}", "null"]),
                    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))


def paths_of(node, prefix=()):
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        yield from paths_of(v, (*prefix, k))


@pytest.mark.parametrize("api", sorted(PATHS))
def test_fuzz_one_hostile_field_is_never_a_500(proxy, api):
    paths = [p for p in paths_of(valid(api)) if p]

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(paths), hostile)
    def run(path, value):
        r = send(proxy, api, with_(api, path, value))
        assert r.status_code in (200, 400), (path, value, r.status_code, r.text[:300])
        if r.status_code == 400:
            error_message(api, r)

    run()


@pytest.mark.parametrize("api", sorted(PATHS))
def test_a_trickled_body_is_a_408_not_a_held_socket(api):
    """Issue 42: a client that sends its headers and then a few bytes of body held its socket and
    memory until it gave up (90-120 s in the probe). The body now has body_timeout in all."""
    import socket
    import time

    with ScriptedUpstream(lambda request, a: answer(a, "ok")) as up, running(up.base_url, k=3, body_timeout=1) as srv:
        with socket.create_connection((srv.host, srv.port), timeout=10) as s:
            s.sendall(f"POST {PATHS[api]} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: 1000\r\n\r\n{\"model\": ".encode())
            t0 = time.monotonic()
            data = b""
            while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            waited = time.monotonic() - t0
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408") and waited < 5, (head, waited)
        fake = httpx.Response(408, content=body)
        assert "not received within 1 s" in error_message(api, fake)
        assert not up.requests


@pytest.mark.parametrize("api, body, words", [
    ("responses", {"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
     "'input' holds no user message with text"),
    ("messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}]},
     "'messages' hold no user text block"),
])
def test_a_conversation_without_words_is_refused_in_the_apis_words(proxy, api, body, words):
    """Issue 37, item 5: Responses and Messages clients were told about 'an image-only conversation'
    and Chat Completions 'messages' / 'user turn'."""
    tools = valid(api)["tools"]
    r = send(proxy, api, {**body, "tools": tools})
    message = error_message(api, r)
    assert r.status_code == 400 and words in message and "image-only" not in message, message
