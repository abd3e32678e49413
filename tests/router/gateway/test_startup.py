"""Issue #13: how the MCP gateway starts, and what it says when an upstream does not.

Real upstream servers (tests/support/mcp_servers: slow answers late or never, needs_env
quits at start without its variable), the `mcp` SDK's client, and for the CLI cases the
installed `toolsift` console script in a subprocess. No timing assertions: a hung server
is shown to be still hung when the gateway answers, with generous bounds on every wait.
"""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import anyio
import pytest

from router.gateway import Gateway, parse_config
from tests.conftest import ROOT
from tests.support.cli import toolsift
from tests.support.mcp_servers import stdio_entry

TOOLSIFT = Path(sys.executable).parent / "toolsift"


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None))


async def _until(predicate, limit: float = 180.0, what: str = "") -> None:
    """Poll ``predicate`` (sync or async) until it holds; generous bound, not a timing claim."""
    with anyio.fail_after(limit):
        while True:
            value = predicate()
            if hasattr(value, "__await__"):
                value = await value
            if value:
                return
            await anyio.sleep(0.1)


def test_a_hung_server_is_marked_not_waited_for(tmp_path):
    """`hung` never answers (start timeout 600 s): list_tools, search and calls are served
    from the others while it is still starting. A pinned tool's server (`late`) is waited
    for, since list_tools must show the pin; `later` answers after the gateway is serving and
    joins then. The encoder loads while upstreams are still starting, not on the first search."""
    from mcp import Client

    specs = parse_config({"mcpServers": {"calculator": stdio_entry("calculator"),
                                         "late": stdio_entry("slow", "3"),
                                         "later": stdio_entry("slow", "15"),
                                         "hung": stdio_entry("slow", "3600")}})

    async def scenario():
        async with Gateway(specs, pinned=["add", "late__late_hello"], start_timeout=600, ready_timeout=1,
                           cache_dir=tmp_path / "embeddings") as gw, Client(gw.build_server()) as client:
            with anyio.fail_after(120):  # the old gateway waited the whole start timeout (600 s) here
                listed = [t.name for t in (await client.list_tools()).tools]
            assert listed == ["search_tools", "call_tool", "calculator__add", "late__late_hello"]
            assert gw.upstreams["hung"].status == "starting"
            await _until(lambda: gw.encoder == "loaded")
            assert gw.upstreams["hung"].status == "starting"  # loaded without waiting for the upstreams

            res = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert not res.is_error and "3" in _text(res)
            found = json.loads(_text(await client.call_tool("search_tools", {"query": "add two numbers", "k": 2})))
            assert found["tools"][0]["name"] == "calculator__add"
            assert found["tools"][0]["why"]["dense_score"] is not None
            assert found["unavailable_servers"]["hung"].startswith("starting: no answer after")
            down = await client.call_tool("call_tool", {"name": "hung__late_hello", "arguments": {"name": "x"}})
            assert down.is_error and "unavailable (starting: no answer" in _text(down)
            res = await client.call_tool("late__late_hello", {"name": "Ada"})
            assert _text(res) == "hello Ada, sorry I am late"

            async def later_found() -> bool:
                res = await client.call_tool("search_tools", {"query": "greet someone who is late", "k": 5})
                return "later__late_hello" in [t["name"] for t in json.loads(_text(res))["tools"]]

            await _until(later_found)  # indexed when it answered, long after the gateway was serving
            res = await client.call_tool("call_tool", {"name": "later__late_hello", "arguments": {"name": "Bo"}})
            assert _text(res) == "hello Bo, sorry I am late"
            status = {s["server"]: s for s in gw.status()["servers"]}
            assert status["hung"]["status"] == "starting" and "waiting" in status["hung"]

    anyio.run(scenario)


def _gateway_params(cfg: Path, *extra: str, token: str = "parent-secret"):
    """The installed `toolsift serve mcp` as a stdio MCP server, with a secret in its environment."""
    from mcp import StdioServerParameters

    return StdioServerParameters(command=str(TOOLSIFT), cwd=str(ROOT),
                                 args=["serve", "mcp", "--config", str(cfg), "--method", "bm25", *extra],
                                 env={"TOOLSIFT_TEST_TOKEN": token, "HF_HUB_OFFLINE": "1"})


def test_exit_messages_labelled_stderr_and_environment(tmp_path):
    """Through the real `toolsift` process: a server that exits at start is reported with its
    own message; every upstream stderr line reaches the gateway's stderr labelled with its
    server; a server gets the gateway's environment only through `env` or inheritEnv."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    if not TOOLSIFT.exists():
        pytest.skip(f"{TOOLSIFT} is missing: run `make install`")
    var = "TOOLSIFT_TEST_TOKEN"
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {
        "bare": stdio_entry("needs_env", var),                               # not passed: exits at start
        "given": stdio_entry("needs_env", var, **{var: "abc"}),              # passed with `env`
        "inherits": {**stdio_entry("needs_env", var), "inheritEnv": True},   # the gateway's whole environment
    }}))
    errlog = tmp_path / "gateway-stderr.txt"

    async def scenario():
        with errlog.open("w") as err:
            async with Client(stdio_client(_gateway_params(cfg), errlog=err)) as client:
                found = json.loads(_text(await client.call_tool("search_tools", {"query": "secret length"})))
                why = found["unavailable_servers"]["bare"]
                assert why.startswith("exited during start-up")
                assert why.endswith(f"its stderr ended with: needs_env: {var} is not set")
                res = await client.call_tool("call_tool", {"name": "given__secret_length"})
                assert _text(res) == f"{var} has 3 characters"
                res = await client.call_tool("call_tool", {"name": "inherits__secret_length"})
                assert _text(res) == f"{var} has {len('parent-secret')} characters"

    anyio.run(scenario)
    lines = errlog.read_text().splitlines()
    assert f"[bare] needs_env: {var} is not set" in lines
    assert {"[bare] needs_env: starting", "[given] needs_env: starting", "[inherits] needs_env: starting"} <= set(lines)
    # the gateway's own log lines quote a server's message; every other line with it is labelled
    unlabelled = [line for line in lines if "needs_env: " in line and not line.startswith(("[", "toolsift-mcp:"))]
    assert unlabelled == [], lines

    # --inherit-env: every stdio server gets the gateway's environment
    only = tmp_path / "only.json"
    only.write_text(json.dumps({"mcpServers": {"bare": stdio_entry("needs_env", var)}}))

    async def inherited():
        async with Client(_gateway_params(only, "--inherit-env", "--pin", "secret_length")) as client:
            res = await client.call_tool("bare__secret_length", {})
            assert _text(res) == f"{var} has {len('parent-secret')} characters"

    anyio.run(inherited)


def test_busy_port_is_one_line_before_anything_starts(tmp_path):
    """Reproduction: a busy port printed an 81-line exception group after starting the
    upstreams. Now: one line, exit 2, and (with -v) nothing else happened first."""
    cfg = tmp_path / "servers.json"
    cfg.write_text(json.dumps({"mcpServers": {"calculator": stdio_entry("calculator")}}))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = toolsift("serve", "mcp", "--config", cfg, "--transport", "http", "--port", port, "-v")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert proc.stdout == ""


def test_default_environment_is_what_the_docs_say():
    """docs/gateway.md names the variables a stdio server gets without `env`: the SDK's list."""
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    docs = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")
    if os.name == "posix":
        assert ", ".join(DEFAULT_INHERITED_ENV_VARS) in docs
