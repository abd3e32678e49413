"""`toolsift bench search --quick` through the installed command, on the real StableToolBench G2 data."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import shared


def test_quick_search_benchmark_compares_every_method(tmp_path):
    shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    script = Path(sys.executable).parent / "toolsift"
    r = subprocess.run([str(script), "bench", "search", "--quick", "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "results.json").read_text())["datasets"]["stabletoolbench_G2_instruction"]["rows"]
    assert rows["all tools"]["all_gold"] == 1.0 and rows["routing"]["requests_per_task"] == 1.0
    # one search round never loses a gold tool routing offered, and costs tokens only when taken
    assert rows["routing + search"]["all_gold"] >= rows["routing"]["all_gold"]
    assert rows["routing"]["tokens_per_request"] < rows["all tools"]["tokens_per_request"] / 100
    assert 1.0 <= rows["routing + search"]["requests_per_task"] <= 2.0
    assert "| search only (keyword) |" in (tmp_path / "report.md").read_text()


def test_search_benchmark_ranks_a_big_list_with_its_vectors(tmp_path, monkeypatch):
    """A list over the proxy's inline limit is embedded before its first route, so the hybrid rows are
    hybrid whatever the load or the vector cache holds: left to the background, the requests routed
    before it finished were ranked by BM25 alone (after a new encoder, StableToolBench 75 % -> 58 %)."""
    shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    from benchmarks.routing.search import _tasks, evaluate
    from router.middleware.list_routers import INLINE_MAX

    monkeypatch.setenv("TOOLSIFT_CACHE", str(tmp_path))  # nothing cached: every vector is computed now
    tools, tasks = _tasks("stabletoolbench_G2_instruction", quick=True)
    tools = tools[: INLINE_MAX + 100]
    rows, without_dense = evaluate(tools, tasks[:3], "hybrid")
    assert without_dense == 0
    assert rows["routing"]["requests_per_task"] == 1.0
