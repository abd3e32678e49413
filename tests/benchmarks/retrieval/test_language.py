"""`toolsift bench language --quick`: the request-language check on real benchmark queries."""
from __future__ import annotations

import json

import pytest

from benchmarks.data.datasets import available
from tests.support.cli import toolsift


def test_bench_language_quick_flags_no_english_query(tmp_path):
    if not all(available(n) for n in ("apibench_torchhub", "restbench_tmdb", "bfcl_live_multiple")):
        pytest.skip("shared benchmark data absent (../shared/data or $TOOLSIFT_SHARED_DATA)")
    res = toolsift("bench", "language", "--quick", "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    rows = {r["set"]: r for r in out["rows"]}
    t = out["shipped_threshold"]
    assert rows["apibench_torchhub"][f"flagged@{t}"] == 0 and rows["restbench_tmdb"][f"flagged@{t}"] == 0
    live = rows["bfcl_live_multiple"]
    assert live[f"non_latin_flagged@{t}"] == live["non_latin"] > 0
    assert {"ko", "zh"} <= {x["language"] for x in out["bfcl_live_flagged"]}
    assert "## BFCL live requests flagged" in (tmp_path / "report.md").read_text(encoding="utf-8")
