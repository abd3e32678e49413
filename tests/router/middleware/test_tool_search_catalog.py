"""Issue 37, item 1, with a catalog: a request that brought no tools gets catalog tools (inject on),
and the model's tool search looks through the catalog, not only the tools it was given. Through the
real proxy (uvicorn on 127.0.0.1) and the real clients, on the real StableToolBench catalog, with a
scripted model whose tool was not injected: it searches, and calls the catalog tool it found."""
from __future__ import annotations

import json

import anthropic
import pytest

from tests.router.middleware.test_proxy import client, running, stb_router, user  # noqa: F401 (fixture)
from tests.support.scripted_apis import offered_tools, searching_model
from tests.support.scripted_upstream import ScriptedUpstream

SEARCH = "toolsift_search_tools"
QUESTION = "Tell me a joke about cats"  # injected at k=2: the two cat-facts tools, no joke tool
FOUND = "get_random_joke_for_world_of_jokes"  # a StableToolBench endpoint the search finds


def model() -> object:
    return searching_model(FOUND, {}, "random joke", "Why did the cat sit on the computer?")


def names(request: dict, api: str) -> list[str]:
    return list(offered_tools(request, api))


@pytest.mark.parametrize("stream", [False, True])
def test_injected_request_searches_the_catalog(stb_router, stream):  # noqa: F811
    with ScriptedUpstream(model()) as up, running(up.base_url, stb_router, k=2, inject=True, tool_search=True,
                                                  on_hallucination="reject") as srv:
        c = client(srv)
        if stream:
            with c.chat.completions.with_streaming_response.create(model="m", messages=user(QUESTION),
                                                                   stream=True) as raw:
                headers, body = raw.headers, raw.text()
            assert SEARCH not in body and FOUND in body
            comment = next(line for line in body.splitlines() if line.startswith(": toolsift-verdicts"))
            assert json.loads(comment.split(" ", 2)[2])[0]["ok"] is True
        else:
            raw = c.chat.completions.with_raw_response.create(model="m", messages=user(QUESTION))
            headers, call = raw.headers, raw.parse().choices[0].message.tool_calls[0]
            assert call.function.name == FOUND
            # checked against the catalog tool the search added, as an injected tool would be
            assert json.loads(headers["x-toolsift-verdicts"])[0]["ok"] is True
            selected = json.loads(headers["x-toolsift-selected"])
            found = next(s for s in selected if s["name"] == FOUND)
            assert found["reason"] == "searched" and stb_router.get(found["id"]).name == FOUND
            assert "search=1" in headers["x-toolsift-route"]
        assert headers["x-toolsift-route"].startswith("injected")
        first, second = up.chat_requests
        injected = names(first, "chat")
        assert len(injected) == 2 + 1 and injected[-1] == SEARCH and FOUND not in injected
        # the found catalog tools come after everything sent before, in the catalog record's schema
        after = names(second, "chat")
        assert after[:len(injected)] == injected and FOUND in after[len(injected):]
        tool = next(t for t in second["tools"] if t["function"]["name"] == FOUND)
        assert tool["function"]["description"].startswith("Get the random joke")
        assert FOUND in second["messages"][-1]["content"]  # the search's answer names it


def test_injected_messages_request_searches_the_catalog(stb_router):  # noqa: F811
    with ScriptedUpstream(model()) as up, running(up.url, stb_router, k=2, inject=True, tool_search=True,
                                                  on_hallucination="reject") as srv:
        a = anthropic.Anthropic(api_key="k", base_url=srv.url, max_retries=0)
        msg = a.messages.create(model="m", max_tokens=64, messages=[{"role": "user", "content": QUESTION}])
        assert [b.name for b in msg.content] == [FOUND]
        first, second = up.api_requests("messages")
        assert names(first, "messages")[-1] == SEARCH and FOUND in names(second, "messages")[2:]
        assert "input_schema" in next(t for t in second["tools"] if t["name"] == FOUND)


def test_no_catalog_search_without_inject(stb_router):  # noqa: F811
    """Without inject, catalog tools never reach the model, searched or not."""
    with ScriptedUpstream(model()) as up, running(up.base_url, stb_router, k=2, tool_search=True) as srv:
        answer = client(srv).chat.completions.create(model="m", messages=user(QUESTION))
        assert "cannot" in answer.choices[0].message.content and "tools" not in up.chat_requests[0]


def test_wrapped_client_searches_the_catalog(stb_router):  # noqa: F811
    import openai

    from router.middleware import wrap

    with ScriptedUpstream(model()) as up:
        c = wrap(openai.OpenAI(api_key="k", base_url=up.base_url, max_retries=0), router=stb_router, k=2,
                 method="bm25", inject=True, tool_search=True)
        resp = c.chat.completions.create(model="m", messages=user(QUESTION))
        assert resp.choices[0].message.tool_calls[0].function.name == FOUND and resp.toolsift.ok
        assert "search=1" in resp.toolsift.route and len(up.chat_requests) == 2
