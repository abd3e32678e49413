"""Issue 37, item 4, on the real proxy with the real openai client: framework tools that no name
pattern covers are kept from what the request itself says — a hand-off tool by what its name or
description says, a structured-output tool by its type-shaped name, a tool the system prompt
tells the model to call — and none of these rules fires on a real catalog."""
from __future__ import annotations

import json

from tests.router.middleware.test_proxy import client, running, user
from tests.support.scripted_upstream import ScriptedUpstream, completion, offered_names
from tests.support.toolsets import small_tools, stb_tools


def fn(name: str, description: str = "", props: dict | None = None) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props or {}, "required": sorted(props or {})}}}


def ask(tools: list[dict], question: str, k: int = 2, system: str | None = None, **kw) -> tuple[list[str], dict]:
    """The tool names the upstream was offered, and x-toolsift-selected by name."""
    messages = ([{"role": "system", "content": system}] if system else []) + user(question)
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, k=k) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=messages, tools=tools, **kw)
        offered = offered_names(up.chat_requests[0])
    return offered, {s["name"]: s["reason"] for s in json.loads(raw.headers["x-toolsift-selected"])}


def test_structured_output_tool_named_after_its_schema_is_kept():
    output = fn("AnswerFormat", "Answer to return to the user.", {"answer": {"type": "string"},
                                                                 "confidence": {"type": "number"}})
    offered, why = ask([*small_tools(), output], "What's the weather in Oslo?", tool_choice="required")
    assert "AnswerFormat" in offered and why["AnswerFormat"] == "control"
    assert len(offered) == 2 + 1
    # type-shaped names as a catalog's naming style are ranked, not kept
    tools = [fn("".join(w.title() for w in t["function"]["name"].split("_")), t["function"]["description"],
                t["function"]["parameters"]["properties"]) for t in small_tools()]
    offered, why = ask([*tools, output], "What's the weather in Oslo?")
    assert len(offered) == 2 and set(why.values()) == {"ranked"}


def test_hand_off_tools_are_kept_whatever_they_are_called():
    handoff = fn("handoff", "Useful for handing off to another agent. If you are currently not equipped to handle "
                 "the request, hand off to the appropriate agent. Currently available agents: billing, travel.",
                 {"to_agent": {"type": "string"}, "reason": {"type": "string"}})
    back = fn("transfer_back_to_supervisor")
    offered, why = ask([*small_tools(), handoff, back], "How much money is left on my main-checking account?", k=3)
    assert {"handoff", "transfer_back_to_supervisor"} <= set(offered)
    assert why["handoff"] == why["transfer_back_to_supervisor"] == "control" and len(offered) == 3 + 2


def test_a_tool_the_system_prompt_tells_the_model_to_call_is_kept_but_a_tool_listing_keeps_none():
    publish = fn("publish_story", "Publish.", {"text": {"type": "string"}})
    steer = "You are a reporter. When you are done, call publish_story with the final text."
    offered, why = ask([*small_tools(), publish], "What's the weather in Oslo?", system=steer)
    assert "publish_story" in offered and why["publish_story"] == "control"
    listing = "Tools: get_weather, send_email, stock_quote, set_timer, play_music, publish_story."
    offered, why = ask([*small_tools(), publish], "What's the weather in Oslo?", system=listing)
    assert len(offered) == 2 and "control" not in why.values()


def test_no_loop_tool_found_in_a_real_catalog():
    from router.middleware.policy import loop_tools

    tools = stb_tools()  # 2,211 real StableToolBench endpoints (skips without the data)
    names = [t["function"]["name"] for t in tools]
    assert loop_tools(names, lambda i: tools[i]["function"].get("description") or "") == set()
