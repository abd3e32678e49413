"""`toolsift serve mcp -v` says what the gateway does, not what its libraries' loaders do (issue 40):
faiss's loader logged "Loading faiss with AVX2 support." (and, on CPUs without the build it tries
first, why it could not load it) as soon as a dense search loaded faiss. The installed command on
the stdio transport, the examples' MCP server, one real search."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.support.cli import mcp_over_stdio

SCRIPT = Path(sys.executable).parent / "toolsift"


def test_verbose_gateway_log_has_no_faiss_loader_lines(tmp_path):
    # the examples' config runs `python`: this environment's, which has mcp
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("TOOLSIFT_DB", None)
    reply, err = mcp_over_stdio(
        [str(SCRIPT), "serve", "mcp", "--config", "examples/mcp_servers.json", "--method", "hybrid", "-v"],
        {"method": "tools/call", "params": {"name": "search_tools",
                                            "arguments": {"query": "write down a note to read later"}}},
        cwd=ROOT, env=env)
    found = json.loads(reply["result"]["content"][0]["text"])
    assert found["tools"], found  # the search ran (hybrid: the dense half loads faiss)
    assert "upstream notes ready" in err, err[-2000:]  # -v is on: the gateway's own lines are there
    assert "faiss" not in err.lower() and "AVX" not in err, err[-2000:]

