"""Abstention and the usage log through the real proxy process (`toolsift serve openai`), with the
real openai client and the scripted upstream, on the 2,231 real StableToolBench tools."""
from __future__ import annotations

import json
import os
import subprocess

import openai
import pytest

from tests.router.middleware.test_proxy_hardening import _SCRIPT, free_port, wait_health
from tests.support.cli import stop
from tests.support.scripted_upstream import ScriptedUpstream, call_first_tool
from tests.support.toolsets import stb_dataset, stb_tools

KEY = "sk-proxy-client-key-0123456789"
IRRELEVANT = "Solve for the roots of the equation 3x^2 - 2x - 5."


def _serve(upstream: str, *args: str):
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("TOOLSIFT_DB", None)
    proc = subprocess.Popen([str(_SCRIPT), "serve", "openai", "--upstream", upstream, "--port", str(port),
                             "--method", "hybrid", *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)
    url = f"http://127.0.0.1:{port}"
    wait_health(url, proc, deadline=300)
    return proc, url


def _ask(url: str, text: str, tools: list[dict]):
    c = openai.OpenAI(api_key=KEY, base_url=f"{url}/v1", max_retries=0)
    return c.chat.completions.with_raw_response.create(
        model="gpt-x", messages=[{"role": "user", "content": text}], tools=tools, tool_choice="auto")


@pytest.mark.slow
def test_abstain_header_flags_by_default_and_strips_only_when_asked(tmp_path):
    tools = stb_tools()[:300]
    q = stb_dataset().queries[0].text
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up:
        proc, url = _serve(up.base_url, "-k", "5")
        try:
            raw = _ask(url, q, tools)
            assert raw.headers["x-toolsift-abstain"].startswith("0; evidence=")
            raw = _ask(url, IRRELEVANT, tools)
            flag = raw.headers["x-toolsift-abstain"]
            assert flag.startswith("1; evidence=") and "stripped" not in flag
            assert len(up.chat_requests[-1]["tools"]) == 5 + 1  # default: flagged, never stripped (+ tool search)
        finally:
            stop(proc)
        proc, url = _serve(up.base_url, "-k", "5", "--on-abstain", "strip")
        try:
            raw = _ask(url, IRRELEVANT, tools)
            assert raw.headers["x-toolsift-abstain"].endswith("; stripped")
            sent = up.chat_requests[-1]
            assert "tools" not in sent and "tool_choice" not in sent  # the APIs refuse "tools": []
            assert "abstain=stripped" in raw.headers["x-toolsift-route"]
            raw = _ask(url, q, tools)
            assert len(up.chat_requests[-1]["tools"]) == 5 + 1  # an answerable request keeps its tools (+ search)
        finally:
            stop(proc)


@pytest.mark.slow
def test_usage_log_records_valid_offered_calls_without_contents_unless_allowed(tmp_path):
    tools = stb_tools()[:300]
    queries = [q.text for q in stb_dataset().queries[:3]]
    secret = "my api_key=sk-live-abcdefghijklmnop0123 please"
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up:
        plain = tmp_path / "plain.jsonl"
        proc, url = _serve(up.base_url, "-k", "5", "--usage-log", str(plain))
        try:
            for text in queries:
                _ask(url, text, tools)
        finally:
            stop(proc)
        lines = [json.loads(x) for x in plain.read_text().splitlines()]
        assert len(lines) == 3 and all("query" not in x for x in lines)
        for line, req in zip(lines, up.chat_requests[-3:]):
            assert line["called"] == req["tools"][0]["function"]["name"] and line["called"] in line["offered"]
            assert line["verdict"] == "valid" and line["source"] == "proxy" and len(line["query_hmac"]) == 64
        full = tmp_path / "full.jsonl"
        proc, url = _serve(up.base_url, "-k", "5", "--usage-log", str(full), "--usage-log-content")
        try:
            _ask(url, f"{queries[0]} {secret}", tools)
        finally:
            stop(proc)
    text = full.read_text()
    assert KEY not in text and "sk-live" not in text and "[redacted]" in text
    assert json.loads(text.splitlines()[0])["query"].startswith(queries[0][:40])


def test_usage_log_content_needs_the_log(tmp_path):
    r = subprocess.run([str(_SCRIPT), "serve", "openai", "--upstream", "http://127.0.0.1:9/v1",
                        "--usage-log-content"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "needs --usage-log" in r.stderr and "Traceback" not in r.stderr
