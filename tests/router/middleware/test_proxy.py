"""The OpenAI-compatible proxy, end to end: the real openai client → the real proxy (uvicorn on
127.0.0.1) → the scripted upstream (a real HTTP server), with the real StableToolBench catalog."""
from __future__ import annotations

import contextlib
import json
import logging
import socket
import time
from pathlib import Path

import httpx
import openai
import pytest

from router.middleware.app import create_app
from tests.support.scripted_upstream import (ScriptedUpstream, call_first_tool, completion, error, garbage,
                                             offered_names, slow, tool_call)
from tests.support.servers import ServerThread
from tests.support.toolsets import gold_names, small_tools, stb_catalog, stb_dataset, stb_tools

KEY = "sk-client-secret-123"


@pytest.fixture(scope="module")
def stb_router(tmp_path_factory):
    from router import Router

    db = stb_catalog(tmp_path_factory.mktemp("stb") / "stb.db")
    return Router.open(db)  # no persisted index: BM25 in memory, which is what these tests route with


@contextlib.contextmanager
def running(upstream_url: str, router=None, **kw):
    kw.setdefault("method", "bm25")
    app = create_app(upstream_url, router, **kw)
    with ServerThread(app) as srv:
        yield srv


def client(srv, key: str = KEY, **kw) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=f"{srv.url}/v1", max_retries=0, **kw)


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def test_2k_tools_routed_gold_kept_verdicts_in_headers(stb_router):
    tools, ds = stb_tools(), stb_dataset()
    assert len(tools) > 2000
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up, running(up.base_url, stb_router, k=5) as srv:
        c = client(srv)
        hits = 0
        queries = ds.queries[:10]
        for q in queries:
            raw = c.chat.completions.with_raw_response.create(model="gpt-x", messages=user(q.text), tools=tools)
            resp = raw.parse()
            sent = up.chat_requests[-1]
            assert len(sent["tools"]) <= 5
            # the caller's exact schemas, in the caller's order
            order = [tools.index(t) for t in sent["tools"]]
            assert order == sorted(order)
            hits += bool(gold_names(q) & set(offered_names(sent)))
            selected = json.loads(raw.headers["x-toolsift-selected"])
            assert [s["name"] for s in selected if s["reason"] == "ranked"]
            verdicts = json.loads(raw.headers["x-toolsift-verdicts"])
            assert verdicts[0]["ok"] is True, verdicts
            assert resp.choices[0].message.tool_calls[0].function.name == sent["tools"][0]["function"]["name"]
        # Messi query (G1_instruction[0]): its gold Transfermarkt tool is among the 5 offered
        assert gold_names(queries[0]) & set(offered_names(up.chat_requests[0]))
        assert hits >= 7, f"gold tool offered for only {hits}/10 real queries"
        authz = {r.headers.get("authorization") for r in up.requests}
        assert authz == {f"Bearer {KEY}"}  # the client's key reached the upstream


def test_tool_choice_pinned_and_history_tools_always_kept(stb_router):
    tools = stb_tools()
    named, pinned, called = (tools[i]["function"]["name"] for i in (100, 200, 300))
    messages = [{"role": "user", "content": "weather in Paris"},
                {"role": "assistant", "content": None, "tool_calls": [tool_call(called, {})]},
                {"role": "tool", "tool_call_id": "call_0", "content": "{}"},
                {"role": "user", "content": "and in London?"}]
    with ScriptedUpstream([completion("fine")]) as up, \
            running(up.base_url, stb_router, k=3, pinned=(pinned,)) as srv:
        messages[1]["tool_calls"][0]["id"] = "call_0"
        client(srv).chat.completions.create(model="m", messages=messages, tools=tools,
                                            tool_choice={"type": "function", "function": {"name": named}})
        sent = offered_names(up.chat_requests[0])
        assert {named, pinned, called} <= set(sent)
        assert len(sent) <= 3 + 3
        assert up.chat_requests[0]["tool_choice"]["function"]["name"] == named


def test_a_follow_up_conversation_routes_like_router_select_on_the_same_messages():
    """The proxy builds its routing query the way `Router.select(messages=...)` does, "tools already
    called" included: here that is the only hint ("Now Paris." matches no tool on its own)."""
    from apidb.loaders.openai import records_from_openai_tools
    from router import Router

    tools, k = small_tools(), 3
    messages = [{"role": "user", "content": "Look up Berlin for me."},
                {"role": "assistant", "content": None, "tool_calls": [tool_call("geocode_city", {"city": "Berlin"})]},
                {"role": "tool", "tool_call_id": "x", "content": "52.52, 13.40"},
                {"role": "user", "content": "Now Paris."}]
    messages[2]["tool_call_id"] = messages[1]["tool_calls"][0]["id"]
    direct = Router.from_records(records_from_openai_tools(tools, "request")).select(messages, k=k + 1,
                                                                                      method="bm25")
    expected = [s.record.name for s in direct if s.record.name != "geocode_city"][:k]
    assert expected, "the conversation must give BM25 something to rank on"
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, k=k) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=messages, tools=tools)
    selected = json.loads(raw.headers["x-toolsift-selected"])
    assert {"name": "geocode_city", "reason": "history"} in selected
    assert [s["name"] for s in selected if s["reason"] == "ranked"] == expected


def test_catalog_tools_injected_when_request_has_none(stb_router):
    q = stb_dataset().queries[0]
    with ScriptedUpstream([completion("ok")]) as up, running(up.base_url, stb_router, k=4, inject=True) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user(q.text))
        sent = up.chat_requests[0]["tools"]
        assert len(sent) == 4
        assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in sent)
        assert gold_names(q) & {t["function"]["name"] for t in sent}
        assert all("id" in s for s in json.loads(raw.headers["x-toolsift-selected"]))


def test_hallucination_annotate_repair_reject():
    tools = small_tools()
    bad = completion(tool_calls=[tool_call("get_wether", {"city": "Oslo"})])
    good = completion(tool_calls=[tool_call("get_weather", {"city": "Oslo"})])
    with ScriptedUpstream([bad]) as up, running(up.base_url, k=3) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("weather in Oslo"),
                                                                    tools=tools)
        v = json.loads(raw.headers["x-toolsift-verdicts"])[0]
        assert v["verdict"] == "hallucinated_tool" and not v["ok"]
        assert "get_weather" in v["suggestions"]
    with ScriptedUpstream([bad, good]) as up, running(up.base_url, k=3, on_hallucination="repair") as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("weather in Oslo"),
                                                                    tools=tools)
        assert raw.parse().choices[0].message.tool_calls[0].function.name == "get_weather"
        assert raw.headers["x-toolsift-repairs"] == "1"
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is True
        second = up.chat_requests[1]["messages"]
        assert second[-2]["tool_calls"][0]["function"]["name"] == "get_wether"
        assert second[-1]["role"] == "tool" and "get_weather" in second[-1]["content"]
        said = second[-1]["content"]  # one sentence per thought, each ending once ("get_weather?." read badly)
        assert "?." not in said and ".." not in said and said.count("get_weather") == 1, said
    with ScriptedUpstream([bad, bad, bad]) as up, \
            running(up.base_url, k=3, on_hallucination="repair", max_repairs=2) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("x"), tools=tools)
        assert raw.headers["x-toolsift-repairs"] == "2" and len(up.chat_requests) == 3
        assert json.loads(raw.headers["x-toolsift-verdicts"])[0]["ok"] is False  # last answer, with its verdict
    with ScriptedUpstream([bad]) as up, running(up.base_url, k=3, on_hallucination="reject") as srv:
        with pytest.raises(openai.UnprocessableEntityError) as exc:
            client(srv).chat.completions.create(model="m", messages=user("x"), tools=tools)
        assert exc.value.body["code"] == "hallucinated_call"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_error_mapping_never_hangs():
    with ScriptedUpstream([error(500, {"error": {"message": "upstream exploded", "type": "server_error"}}),
                           error(429, {"error": {"message": "slow down", "type": "rate_limit"}}),
                           garbage(), slow(5, completion("late"))]) as up, \
            running(up.base_url, timeout=0.5) as srv:
        c = client(srv)
        with pytest.raises(openai.InternalServerError) as e500:
            c.chat.completions.create(model="m", messages=user("x"), tools=small_tools())
        assert e500.value.status_code == 500 and "upstream exploded" in str(e500.value.body)
        with pytest.raises(openai.RateLimitError):
            c.chat.completions.create(model="m", messages=user("x"))
        with pytest.raises(openai.APIStatusError) as e502:
            c.chat.completions.create(model="m", messages=user("x"))
        assert e502.value.status_code == 502 and "not JSON" in e502.value.message
        t0 = time.monotonic()
        with pytest.raises(openai.APIStatusError) as e504:
            c.chat.completions.create(model="m", messages=user("x"))
        assert e504.value.status_code == 504 and time.monotonic() - t0 < 3
        # malformed client requests: 400 with a message that says what is wrong
        for content, needle in ((b"{not json", "not valid JSON"), (b'{"model": "m"}', "'messages'"),
                                (b'{"messages": [{"role": "user", "content": "x"}], "tools": {"a": 1}}', "'tools'"),
                                (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}',
                                 "tools[0]"),
                                (b'[1, 2]', "must be a JSON object, got list"),
                                # a syntax error deep inside a tool the router would never decode
                                (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", '
                                 b'"function": {"name": "a", "parameters": {"x": [1,,2]}}}]}', "not valid JSON"),
                                (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", '
                                 b'"function": {"name": "a"}}, {"type": "code", "function": {"name": "b"}}]}',
                                 "tools[1]"),
                                (b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", '
                                 b'"function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}]}',
                                 "two tools are named 'a'")):
            r = httpx.post(f"{srv.url}/v1/chat/completions", content=content)
            assert r.status_code == 400 and needle in r.json()["error"]["message"], r.text
        assert httpx.get(f"{srv.url}/healthz").json()["status"] == "ok"  # still serving
    with running(f"http://127.0.0.1:{_closed_port()}/v1") as srv:
        with pytest.raises(openai.APIStatusError) as e:
            client(srv).chat.completions.create(model="m", messages=user("x"))
        assert e.value.status_code == 502
        assert httpx.get(f"{srv.url}/v1/models").status_code == 502


def test_streaming_passes_chunks_in_order_without_buffering():
    tools = small_tools()
    answer = completion("Checking the weather now.", [tool_call("get_weather", {"city": "Oslo", "unit": "celsius"})])
    with ScriptedUpstream([answer, answer], chunk_delay=0.15) as up, running(up.base_url, k=3) as srv:
        direct = list(openai.OpenAI(api_key=KEY, base_url=up.base_url).chat.completions.create(
            model="m", messages=user("weather in Oslo"), tools=tools, stream=True))
        t0 = time.monotonic()
        stream = client(srv).chat.completions.create(model="m", messages=user("weather in Oslo"), tools=tools,
                                                     stream=True)
        arrivals, chunks = [], []
        for chunk in stream:
            arrivals.append(time.monotonic() - t0)
            chunks.append(chunk)
        assert [c.model_dump() for c in chunks] == [c.model_dump() for c in direct]
        assert arrivals[0] < arrivals[-1] - 0.5  # the first chunk came long before the last: not buffered
        assert len(up.chat_requests[1]["tools"]) <= 3
    with ScriptedUpstream([completion(tool_calls=[tool_call("get_wether", {"city": "Oslo"})])]) as up, \
            running(up.base_url, k=3) as srv:
        with httpx.stream("POST", f"{srv.url}/v1/chat/completions", headers={"authorization": f"Bearer {KEY}"},
                          json={"model": "m", "messages": user("x"), "tools": tools, "stream": True}) as r:
            lines = [line for line in r.iter_lines() if line]
            assert "x-toolsift-selected" in r.headers
        comment = next(line for line in lines if line.startswith(": toolsift-verdicts "))
        assert json.loads(comment.split(" ", 2)[2])[0]["verdict"] == "hallucinated_tool"
        assert lines[-1] == "data: [DONE]" and lines.index(comment) == len(lines) - 2


def test_api_key_logs_metrics_and_forwarding(caplog):
    caplog.set_level(logging.INFO, logger="toolsift.proxy")
    with ScriptedUpstream([completion("hi"), completion(tool_calls=[tool_call("nope", {})])]) as up, \
            running(up.base_url, k=3, api_key="proxy-key") as srv:
        with pytest.raises(openai.AuthenticationError):
            client(srv).chat.completions.create(model="m", messages=user("secret message text"))
        c = client(srv, default_headers={"X-Toolsift-Key": "proxy-key"})
        assert c.chat.completions.create(model="m", messages=user("secret message text")).choices[0].message.content == "hi"
        c.chat.completions.create(model="m", messages=user("secret message text"), tools=small_tools())
        assert [m.id for m in c.models.list()] == ["scripted-model"]  # forwarded unchanged
        assert httpx.get(f"{srv.url}/metrics").status_code == 401
        m = httpx.get(f"{srv.url}/metrics?format=json", headers={"x-toolsift-key": "proxy-key"}).json()
        text = httpx.get(f"{srv.url}/metrics", headers={"x-toolsift-key": "proxy-key"}).text
        assert up.requests[0].headers["authorization"] == f"Bearer {KEY}"
        assert "proxy-key" not in json.dumps([r.headers for r in up.requests])
    assert m["requests"] == 3 and m["by_status"] == {"401": 1, "200": 2}
    assert m["tools_in"] == 12 and m["tools_out"] == 3 and m["verdicts"] == {"hallucinated_tool": 1}
    assert m["latency_ms"]["p50"] > 0 and 'toolsift_verdicts_total{verdict="hallucinated_tool"} 1' in text
    # the proxy's own time (latency minus the upstream's) for the two answered requests; each is at
    # most that request's latency (checked per request below: medians over different request sets
    # need not be ordered)
    assert m["proxy_ms"]["count"] == 2 and m["proxy_ms"]["p50"] > 0
    assert 'toolsift_proxy_own_ms{quantile="0.50"}' in text
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "toolsift.proxy"]
    assert [line["status"] for line in lines] == [401, 200, 200, 200]
    assert lines[3]["forwarded"] and lines[3]["path"] == "/v1/models"
    assert lines[2]["tools_in"] == 12 and lines[2]["verdicts"] == ["hallucinated_tool"]
    parts = lines[2]["own_ms"] + lines[2]["upstream_ms"] + lines[2]["body_ms"]
    assert lines[2]["upstream_ms"] > 0 and lines[2]["own_ms"] > 0 and abs(parts - lines[2]["ms"]) < 0.1
    assert all(0 < line["own_ms"] <= line["ms"] for line in lines[1:3])
    logged = caplog.text
    assert KEY not in logged and "proxy-key" not in logged and "secret message text" not in logged


def test_metrics_is_prometheus_text_with_help_and_type():
    from prometheus_client.parser import text_string_to_metric_families

    tools = small_tools()
    with ScriptedUpstream([completion("hi"), completion(tool_calls=[tool_call("nope", {})])]) as up, \
            running(up.base_url, k=3) as srv:
        c = client(srv)
        c.chat.completions.create(model="m", messages=user("weather in Oslo"), tools=tools)
        c.chat.completions.create(model="m", messages=user("weather in Oslo"), tools=tools)
        r = httpx.get(f"{srv.url}/metrics")
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    # parsed the way a Prometheus scrape is; a sample without its # TYPE line is an "unknown" family, and a
    # family whose samples are split by another's comes back twice
    families = list(text_string_to_metric_families(r.text))
    names = [f.name for f in families]
    assert len(names) == len(set(names)), names
    assert all(f.type in ("counter", "gauge", "summary") and f.documentation for f in families), \
        [(f.name, f.type, f.documentation) for f in families if f.type == "unknown" or not f.documentation]
    by_name = {f.name: f for f in families}
    assert by_name["toolsift_request_latency_ms"].type == "summary"
    assert {s.name for s in by_name["toolsift_request_latency_ms"].samples} >= {
        "toolsift_request_latency_ms", "toolsift_request_latency_ms_sum", "toolsift_request_latency_ms_count"}
    assert by_name["toolsift_verdicts"].samples[0].labels == {"verdict": "hallucinated_tool"}
    assert any(f.name.startswith("toolsift_cache_") for f in families)


def test_a_request_without_tools_gets_catalog_suggestions(tmp_path):
    """A request that brings no tools (and the proxy injects none) has nothing to check a call
    against: the verdict's suggestions come from the catalog instead of being empty (issue 40)."""
    from router import Router
    from tests.support.cli import toolsift

    db = tmp_path / "c.db"
    examples = Path(__file__).parents[3] / "examples" / "tools.json"
    assert toolsift("catalog", "add", examples, db=db).returncode == 0
    answer = completion(tool_calls=[tool_call("get_wether", {"city": "Oslo"})])
    with ScriptedUpstream([answer, answer]) as up, \
            running(up.base_url, Router.open(db), k=3, on_hallucination="repair", max_repairs=1) as srv:
        raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user("weather in Oslo"))
        v = json.loads(raw.headers["x-toolsift-verdicts"])[0]
        repair = up.chat_requests[1]["messages"][-1]["content"]
    assert v["verdict"] == "hallucinated_tool" and v["suggestions"][0] == "get_weather", v
    assert "tools" not in up.chat_requests[0]  # nothing was injected: the suggestion is for the reader
    assert "get_weather" not in repair  # ... not for the model, which was given no such tool


def test_injected_catalog_tools_are_named_by_what_tells_them_apart(tmp_path):
    """Gorilla's TorchHub holds four `Densenet` tools and TensorFlow Hub 31 `model_id` ones: injected,
    they reached the model as `Densenet`, `torchhub__Densenet_2`, ... (issue 40). Each is now named by
    the words of its call its namesakes lack (`Densenet_densenet121`), numbered only as a last resort."""
    import re

    from router import Router
    from tests.conftest import BUNDLED_GORILLA
    from tests.support.cli import toolsift

    db = tmp_path / "g.db"
    for hub in ("torchhub", "tensorflowhub"):
        assert toolsift("catalog", "add", BUNDLED_GORILLA / f"{hub}_api.jsonl", db=db).returncode == 0
    asks = ["Classify images with a DenseNet model pretrained on ImageNet",
            "Load a pre-trained text embedding model from TensorFlow Hub to embed sentences"]
    with ScriptedUpstream([completion("ok")] * len(asks)) as up, \
            running(up.base_url, Router.open(db), k=5, inject=True) as srv:
        sent = []
        for text in asks:
            raw = client(srv).chat.completions.with_raw_response.create(model="m", messages=user(text))
            selected = json.loads(raw.headers["x-toolsift-selected"])
            names = [t["function"]["name"] for t in up.chat_requests[-1]["tools"]]
            assert names == [s["name"] for s in selected]  # the header maps each name to its record
            sent.append(names)
    dense, hub = sent
    assert sum(n.startswith("Densenet_densenet") for n in dense) >= 2, dense
    assert any(n.startswith("model_id_") for n in hub), hub
    for names in sent:
        numbered = [n for n in names if re.search(r"_\d+$", n) and n.rsplit("_", 1)[0] in names]
        assert not numbered and not any("__" in n for n in names), names  # no _2, no torchhub__


def test_body_over_the_limit_is_413_before_it_is_read():
    tools = small_tools()  # twelve tool schemas, ~2 KB of JSON
    with ScriptedUpstream([completion("never")]) as up, running(up.base_url, max_body_mb=1 / 1024) as srv:
        r = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": user("x"), "tools": tools})
        assert r.status_code == 413
        ok = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": user("x")})
        assert ok.status_code == 200 and up.count == 1  # the big one never reached the upstream


def test_log_content_opt_in(caplog):
    caplog.set_level(logging.INFO, logger="toolsift.proxy")
    with ScriptedUpstream([completion("the answer")]) as up, running(up.base_url, log_content=True) as srv:
        client(srv).chat.completions.create(model="m", messages=user("what is the question"))
    line = json.loads([r for r in caplog.records if r.name == "toolsift.proxy"][-1].getMessage())
    assert line["messages"][0]["content"] == "what is the question"
    assert line["answer"][0]["content"] == "the answer"
    assert KEY not in caplog.text


def test_cli_rejects_bad_options(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "router.cli", "serve", "openai", "--upstream", "http://127.0.0.1:9/v1",
                        "--on-hallucination", "explode"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: --on-hallucination")
    r = subprocess.run([sys.executable, "-m", "router.cli", "serve", "openai", "--upstream", "http://127.0.0.1:9/v1",
                        "--db", str(tmp_path / "missing.db")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no such catalog" in r.stderr
    r = subprocess.run([sys.executable, "-m", "router.cli", "serve", "openai", "--upstream", "http://127.0.0.1:9/v1",
                        "--max-body-mb", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("error: --max-body-mb must be positive")


def test_headers_are_size_capped_valid_json_and_requests_validated():
    from router.middleware.request import RequestError, RequestRouter
    from router.middleware.routed import HEADER_LIMIT, capped_json

    items = [{"name": f"tool_{i:03d}_" + "x" * 50, "reason": "ranked", "score": 0.5} for i in range(128)]
    text = capped_json(items, lambda s: s["name"])
    assert len(text) <= HEADER_LIMIT and json.loads(text)[-1].startswith("+")
    dup = [{"type": "function", "function": {"name": "a"}}] * 2
    with pytest.raises(RequestError, match="two tools are named 'a'"):
        RequestRouter(k=1).route({"messages": user("x"), "tools": dup})
