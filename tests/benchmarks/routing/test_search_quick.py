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
