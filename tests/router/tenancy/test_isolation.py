"""Issue 42, tenants that cannot see each other: the installed `toolsift serve openai --tenants`
in a subprocess, the scripted upstream, the real Gorilla catalog split between two tenants
("vision": torchhub + tensorflowhub; "nlp": huggingface) and a proxy-wide pin of an nlp tool.

Each test has one tenant try what it must not: continue the other's Responses conversation,
get its key sent upstream by presenting it in two headers at once, learn of a pin of the other
tenant's tool. (The MCP gateway's sessions: tests/router/gateway/test_tenants.py.)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.router.middleware.test_proxy_hardening import free_port, wait_health
from tests.router.middleware.test_tenants import NLP_KEY, SUMMARIZE, UPSTREAM_KEY, VISION_KEY, write_tenants
from tests.support.scripted_apis import message, response
from tests.support.scripted_upstream import ScriptedUpstream, call_first_tool, completion

_SCRIPT = Path(sys.executable).parent / "toolsift"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    from tests.conftest import build_gorilla_catalog

    tmp = tmp_path_factory.mktemp("isolation")
    db = tmp / "catalog.db"
    records = build_gorilla_catalog(db)
    vision = {r.openai_name() for r in records if r.namespace != "huggingface"}
    pin = sorted({r.openai_name() for r in records if r.namespace == "huggingface"} - vision)[0]
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOOLSIFT_UPSTREAM_API_KEY": UPSTREAM_KEY}
    env.pop("TOOLSIFT_DB", None)
    with ScriptedUpstream(repeat_last=True) as up:
        proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", up.base_url, "--db", str(db),
                                 "--tenants", str(write_tenants(tmp / "tenants.toml")), "--inject-catalog",
                                 "--method", "bm25", "-k", "4", "--port", str(port), "--pin", pin,
                                 "--usage-log", str(tmp / "usage.jsonl")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            wait_health(f"http://127.0.0.1:{port}", proc)
            yield {"url": f"http://127.0.0.1:{port}", "up": up, "pin": pin, "usage": tmp / "usage.jsonl"}
        finally:
            proc.terminate()
            _, log = proc.communicate(timeout=30)
    assert VISION_KEY not in log and NLP_KEY not in log


def post(proxy, path: str, body: dict, key: str) -> httpx.Response:
    return httpx.post(proxy["url"] + path, json=body, headers={"x-toolsift-key": key}, timeout=60)


def test_responses_memory_is_per_tenant(proxy):
    up = proxy["up"]
    up.clear()
    first = response("I will summarize it.")
    up.set_script([first, response("done"), response("done")])
    r = post(proxy, "/v1/responses", {"model": "m", "input": SUMMARIZE}, NLP_KEY)
    assert r.status_code == 200 and r.json()["id"] == first["id"]
    # the same tenant continues its conversation: routed on what it asked before
    r = post(proxy, "/v1/responses", {"model": "m", "input": "", "previous_response_id": first["id"]}, NLP_KEY)
    assert r.headers["x-toolsift-route"].startswith("injected")
    assert {s["id"].split("/")[0] for s in json.loads(r.headers["x-toolsift-selected"])} == {"huggingface"}
    # the other tenant naming that response id: a conversation this proxy never answered for it
    r = post(proxy, "/v1/responses", {"model": "m", "input": "", "previous_response_id": first["id"]}, VISION_KEY)
    assert r.status_code == 200
    assert not r.headers.get("x-toolsift-route", "").startswith("injected")
    assert SUMMARIZE not in json.dumps(up.api_requests("responses")[-1])
    assert "summar" not in r.headers.get("x-toolsift-selected", "")


def test_a_key_sent_as_bearer_and_as_x_api_key_reaches_the_upstream_in_neither(proxy):
    up = proxy["up"]
    up.clear()
    up.set_script([message("ok")])
    for key in (VISION_KEY, NLP_KEY):
        r = httpx.post(proxy["url"] + "/v1/messages", timeout=60,
                       json={"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": SUMMARIZE}]},
                       headers={"authorization": f"Bearer {key}", "x-api-key": key, "anthropic-version": "2023-06-01"})
        assert r.status_code == 200
        sent = up.requests[-1].headers
        assert key not in json.dumps(dict(sent))
        assert sent["x-api-key"] == UPSTREAM_KEY and sent["authorization"] == f"Bearer {UPSTREAM_KEY}"
    # a client's own upstream key (another value) passes through untouched
    r = httpx.post(proxy["url"] + "/v1/messages", timeout=60,
                   json={"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": SUMMARIZE}]},
                   headers={"x-toolsift-key": NLP_KEY, "x-api-key": "sk-ant-own", "anthropic-version": "2023-06-01"})
    assert r.status_code == 200 and up.requests[-1].headers["x-api-key"] == "sk-ant-own"


def test_a_pin_of_another_tenants_tool_means_nothing_to_this_tenant(proxy):
    up, pin = proxy["up"], proxy["pin"]
    up.clear()
    up.set_script([completion("ok")])
    names = [pin] + [f"vision_tool_{i}" for i in range(7)]
    tools = [{"type": "function", "function": {"name": n, "description": f"detect objects in pictures {i}",
                                               "parameters": {"type": "object"}}} for i, n in enumerate(names)]
    chat = {"model": "m", "messages": [{"role": "user", "content": "detect objects in pictures 5"}], "tools": tools}
    mine = post(proxy, "/v1/chat/completions", chat, NLP_KEY)  # the tenant the pin is for: pinned
    assert {s["name"]: s["reason"] for s in json.loads(mine.headers["x-toolsift-selected"])}[pin] == "pinned"
    r = post(proxy, "/v1/chat/completions", chat, VISION_KEY)
    assert r.status_code == 200
    reasons = {s["name"]: s.get("reason") for s in json.loads(r.headers["x-toolsift-selected"])}
    assert reasons.get(pin) != "pinned" and "pinned" not in r.headers["x-toolsift-selected"]


FORMS = {"x-toolsift-key": lambda k: {"x-toolsift-key": k}, "bearer": lambda k: {"authorization": f"Bearer {k}"},
         "x-api-key": lambda k: {"x-api-key": k}, "both": lambda k: {"authorization": f"Bearer {k}", "x-api-key": k}}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_way_in_with_every_key_form_shows_nothing_of_the_other_tenant(proxy, form):
    """Chat, Responses, Messages, /healthz, /metrics and the error answers, for the vision tenant
    with its key in each header form the clients use: no nlp namespace, no pinned nlp tool name,
    and the key itself never reaches the upstream."""
    up, pin = proxy["up"], proxy["pin"]
    up.clear()
    headers = {**FORMS[form](VISION_KEY), "anthropic-version": "2023-06-01"}
    seen = []
    for path, body, answer in (
            ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": SUMMARIZE}]},
             completion("ok")),
            ("/v1/responses", {"model": "m", "input": SUMMARIZE}, response("ok")),
            ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": SUMMARIZE}]},
             message("ok")),
            ("/v1/responses", {"model": "m", "input": 5}, None),           # a malformed request
            ("/v1/messages", {"model": "m", "messages": "x"}, None)):
        if answer is not None:
            up.set_script([answer])
        r = httpx.post(proxy["url"] + path, json=body, headers=headers, timeout=60)
        assert r.status_code == (200 if answer is not None else 400), r.text
        if answer is not None:
            assert {s["id"].split("/")[0] for s in json.loads(r.headers["x-toolsift-selected"])} \
                <= {"torchhub", "tensorflowhub"}
        seen.append(json.dumps(dict(r.headers)) + r.text)
    for path in ("/healthz", "/metrics", "/metrics?format=json"):
        r = httpx.get(proxy["url"] + path, headers=headers, timeout=30)
        assert r.status_code == 200
        seen.append(r.text)
    text = "\n".join(seen)
    assert "huggingface" not in text and pin not in text
    sent = json.dumps([dict(q.headers) for q in up.requests])
    assert VISION_KEY not in sent and len(up.requests) == 3


def test_healthz_counts_only_the_tenants_own_tools(proxy):
    sync = {}
    for key in (VISION_KEY, NLP_KEY):
        body = httpx.get(proxy["url"] + "/healthz", headers={"x-toolsift-key": key}, timeout=30).json()
        assert body["status"] == "ok"
        sync[key] = body.get("catalog_sync", {}).get("records")
    if sync[VISION_KEY] is None:
        pytest.skip("this proxy's catalog is not live-synced: /healthz has no catalog_sync")
    # vision sees torchhub + tensorflowhub, nlp huggingface: neither sees the catalog's total
    assert sync[VISION_KEY] != sync[NLP_KEY] and sync[NLP_KEY] > sync[VISION_KEY] > 0


def test_usage_log_lines_name_the_tenant(proxy):
    up = proxy["up"]
    up.clear()
    up.set_script(call_first_tool)
    tools = [{"type": "function", "function": {"name": f"detector_{i}", "description": "detect objects in images",
                                               "parameters": {"type": "object", "properties": {}}}} for i in range(6)]
    before = proxy["usage"].read_text().splitlines() if proxy["usage"].exists() else []
    for key in (VISION_KEY, NLP_KEY):
        r = post(proxy, "/v1/chat/completions", {"model": "m", "messages": [
            {"role": "user", "content": "detect objects in images"}], "tools": tools}, key)
        assert r.status_code == 200
    lines = [json.loads(x) for x in proxy["usage"].read_text().splitlines()[len(before):]]
    assert [x.get("tenant") for x in lines] == ["vision", "nlp"]
