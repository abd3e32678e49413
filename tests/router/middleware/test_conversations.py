"""Issue 37, server-held state, through the installed proxy (`toolsift serve anthropic|openai`) with
the real anthropic and openai clients and the scripted upstream: a turn that brings no tools in a
conversation that had them is checked against the tools remembered for it (per tenant), or not
at all; never against zero tools. A Responses ``conversation`` follow-up carrying only a
``function_call_output`` reaches the model."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest

from router.tenancy.tenants import hash_key
from tests.router.middleware.test_proxy_apis import anthropic_tools, responses_tools
from tests.router.middleware.test_proxy_hardening import free_port, wait_health
from tests.support.scripted_apis import message, response
from tests.support.scripted_upstream import ScriptedUpstream

_SCRIPT = Path(sys.executable).parent / "toolsift"
KEY_A, KEY_B = "tsk_team-a-key-0123456789", "tsk_team-b-key-9876543210"
SYSTEM = "You are a travel assistant."
FIRST = {"role": "user", "content": "What's the weather in Oslo?"}
CURRENCY = ("convert_currency", {"amount": 5, "from_currency": "EUR", "to_currency": "NOK"})


@contextlib.contextmanager
def serving(api: str, upstream: str, tmp_path: Path, *args: str):
    """The installed proxy in a subprocess; yields its URL."""
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_DATA_HOME": str(tmp_path)}  # no catalog: request tools only
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", api, "--upstream", upstream,
                             "--method", "bm25", "-k", "3", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_health(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def tenants_file(path: Path) -> Path:
    path.write_text(f'[tenants.a]\nkey_sha256 = "{hash_key(KEY_A)}"\nnamespaces = ["*"]\n\n'
                    f'[tenants.b]\nkey_sha256 = "{hash_key(KEY_B)}"\nnamespaces = ["*"]\n', encoding="utf-8")
    return path


def claude(url: str, key: str | None = None) -> anthropic.Anthropic:
    headers = {"x-toolsift-key": key} if key else {}
    return anthropic.Anthropic(api_key="sk-ant-client", base_url=url, max_retries=0, default_headers=headers)


def second_turn(first) -> list[dict]:
    """The thread's history after the first answer: as a thread-mode client sends it, without tools."""
    use = first.content[0]
    return [FIRST, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "12 °C, sunny"},
                                         {"type": "text", "text": "And 5 euros in kroner?"}]}]


def test_thread_turn_without_tools_is_checked_against_the_remembered_list_per_tenant(tmp_path):
    """Turn 1 brings 12 tools (3 routed); turn 2 brings none and the model calls a tool of the 12
    that routing left out: valid, not a 422, and tenant b's identical thread never reads a's list."""
    script = [message(calls=[("get_weather", {"city": "Oslo"})]), message(calls=[CURRENCY]),
              message(calls=[CURRENCY]), message(calls=[("no_such_tool", {})]), message(calls=[CURRENCY])]
    with ScriptedUpstream(script) as up, serving("anthropic", up.url, tmp_path, "--on-hallucination", "reject",
                                                  "--tenants", str(tenants_file(tmp_path / "t.toml"))) as url:
        a = claude(url, KEY_A)
        first = a.messages.create(model="m", max_tokens=64, system=SYSTEM, tools=anthropic_tools(), messages=[FIRST])
        assert len(up.api_requests("messages")[0]["tools"]) == 3 + 1  # + the tool search (on by default)
        raw = a.messages.with_raw_response.create(model="m", max_tokens=64, system=SYSTEM,
                                                  messages=second_turn(first))
        assert raw.parse().content[0].name == "convert_currency"
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        route = raw.headers["x-toolsift-route"]
        assert route.startswith("unrouted; in=0; out=0") and "12 tools remembered" in route
        assert "tools" not in up.api_requests("messages")[1]  # the upstream's thread keeps its own tools
        # tenant b, same system prompt and first turn: a's list is not b's; unknown, so not judged
        raw = claude(url, KEY_B).messages.with_raw_response.create(model="m", max_tokens=64, system=SYSTEM,
                                                                   messages=second_turn(first))
        assert raw.status_code == 200 and json.loads(raw.headers["x-toolsift-verdicts"]) == []
        assert "calls not checked" in raw.headers["x-toolsift-route"]
        # a hallucinated call in a's thread is still caught: the list is known
        with pytest.raises(anthropic.UnprocessableEntityError):
            a.messages.create(model="m", max_tokens=64, system=SYSTEM, messages=second_turn(first))
        # a thread this proxy never saw (another instance, a restart): passed through, not judged
        other = [{"role": "user", "content": "Convert money"}, *second_turn(first)[1:]]
        raw = a.messages.with_raw_response.create(model="m", max_tokens=64, messages=other)
        assert raw.status_code == 200 and json.loads(raw.headers["x-toolsift-verdicts"]) == []


def test_thread_turn_without_tools_is_not_repaired(tmp_path):
    script = [message(calls=[("get_weather", {"city": "Oslo"})]), message(calls=[CURRENCY]), message("done")]
    with ScriptedUpstream(script) as up, serving("anthropic", up.url, tmp_path, "--on-hallucination", "repair") as url:
        a = claude(url)
        first = a.messages.create(model="m", max_tokens=64, system=SYSTEM, tools=anthropic_tools(), messages=[FIRST])
        raw = a.messages.with_raw_response.create(model="m", max_tokens=64, system=SYSTEM,
                                                  messages=second_turn(first))
        assert raw.headers["x-toolsift-repairs"] == "0" and raw.parse().content[0].name == "convert_currency"
        assert len(up.api_requests("messages")) == 2  # no repair turn spent on a valid call


def test_responses_conversation_follow_up_with_only_a_function_call_output_reaches_the_model(tmp_path):
    tools = responses_tools()
    script = [response(calls=[("play_music", {"query": "Abba"})]), response("Playing Abba."),
              response("Fine."), response(calls=[("play_music", {"query": "Queen"})])]
    with ScriptedUpstream(script) as up, serving("openai", up.base_url, tmp_path) as url:
        c = openai.OpenAI(api_key="sk-client", base_url=f"{url}/v1", max_retries=0)
        first = c.responses.create(model="m", conversation="conv_abba", input="play some Abba music", tools=tools)
        call = first.output[0]
        output = [{"type": "function_call_output", "call_id": call.call_id, "output": "playing"}]
        raw = c.responses.with_raw_response.create(model="m", conversation="conv_abba", input=output, tools=tools)
        assert raw.parse().output_text == "Playing Abba."
        # routed on the remembered conversation: the follow-up itself says nothing about music
        assert "play_music" in [t["name"] for t in up.api_requests("responses")[1]["tools"]]
        route = raw.headers["x-toolsift-route"]
        assert route.startswith("routed; in=12") and "kept=history:1" in route
        # a conversation this proxy never saw: nothing to rank on, so everything goes through, said so
        raw = c.responses.with_raw_response.create(model="m", conversation={"id": "conv_elsewhere"}, input=output,
                                                   tools=tools)
        assert raw.status_code == 200 and raw.headers["x-toolsift-route"].startswith("unrouted; in=12; out=12")
        assert len(up.api_requests("responses")[2]["tools"]) == 12
        # a turn without tools in the known conversation: checked against the 12 it brought before
        raw = c.responses.with_raw_response.create(model="m", conversation="conv_abba", input="now some Queen")
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True


def test_thread_turn_without_tools_can_still_search(tmp_path):
    """The thread's first turn carried toolsift's search tool; a later tool-less turn that calls it
    is answered from the remembered list, and the client gets the model's call to the found tool."""
    search = ("toolsift_search_tools", {"query": "convert an amount of money between currencies"})
    script = [message(calls=[("get_weather", {"city": "Oslo"})]), message(calls=[search]), message(calls=[CURRENCY])]
    with ScriptedUpstream(script) as up, serving("anthropic", up.url, tmp_path, "--on-hallucination", "reject") as url:
        a = claude(url)
        first = a.messages.create(model="m", max_tokens=64, system=SYSTEM, tools=anthropic_tools(), messages=[FIRST])
        assert "toolsift_search_tools" in [t["name"] for t in up.api_requests("messages")[0]["tools"]]
        raw = a.messages.with_raw_response.create(model="m", max_tokens=64, system=SYSTEM,
                                                  messages=second_turn(first))
        assert raw.parse().content[0].name == "convert_currency"
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        third = up.api_requests("messages")[2]
        assert "convert_currency" in [t["name"] for t in third["tools"]]
        assert third["messages"][-1]["content"][0]["type"] == "tool_result"
