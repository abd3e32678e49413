"""`toolsift bench routing --quick`: every section on a small sample of the real data, as CI runs it."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.conftest import shared


@pytest.mark.slow
def test_quick_routing_benchmark_writes_every_section(tmp_path):
    shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    shared("bfcl", "BFCL_v4_irrelevance.json")
    shared("metatool", "plugin_des.json")
    from router.cli import app

    res = CliRunner().invoke(app, ["bench", "routing", "--quick", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "results.json").read_text())
    q = data["quality"]
    assert set(q["rows"]) == {"rank_bm25 (plain)", "today's router", "new router (cross-fitted)"}
    assert q["chosen"]["dev"] in (0.0, 0.3) and q["shipped"] == q["chosen"]["dev"]
    fixed = data["curve"]["fixed"]
    assert [fixed[k]["test"]["tools"] for k in ("1", "5", "10")] == [1.0, 5.0, 10.0]
    assert fixed["1"]["test"]["tokens"] < fixed["5"]["test"]["tokens"] < fixed["10"]["test"]["tokens"]
    assert fixed["1"]["test"]["all_gold"] <= fixed["10"]["test"]["all_gold"]
    assert all(v["test"]["tools"] <= 10 for v in data["curve"]["adaptive"].values())
    # the default's rule: as complete as fixed k=5, and not below the fixed-k curve at equal tokens
    curve, loosest = data["curve"], min(data["curve"]["adaptive"], key=float)
    for half, ratio in curve["chosen"].items():
        got = curve["adaptive"][str(ratio)][half]
        line = sorted((v[half]["tokens"], v[half]["all_gold"]) for v in fixed.values())
        assert str(ratio) == loosest or (got["all_gold"] >= fixed["5"][half]["all_gold"]
                                         and got["all_gold"] >= np.interp(got["tokens"], *zip(*line)))
    assert curve["shipped"] == curve["chosen"]["dev"]
    a = data["abstention"]
    assert set(a["scored"]["test"]) == {"bfcl_irrelevance", "stb_gold_removed", "metatool_gold_removed"}
    assert 0.10 <= a["shipped"] <= 0.45
    for row in data["exact_names"].values():
        assert row["new_rank1"] >= row["today_rank1"] and row["queries"] > 0
    assert data["speed"]["catalog"] == 2000 and data["speed"]["new_k5"]["mean_ms"] > 0
    u = data["usage_log"]
    assert u["log_lines"] == u["pairs"] > 0 and "no tuning" in u["note"]
    o = data["outside"]  # scored when the bench extra's nestful-wrapper is installed, else why not
    assert o["command"] == "toolsift bench routing --quick"
    assert set(o["rows"]) == {"base MiniLM", "general encoder (shipped)"} if "rows" in o else "not installed" in o["skipped"]
    report = (tmp_path / "report.md").read_text()
    for title in ("## Complete sets", "## Adaptive k", "## Abstention", "## Exact names", "## Cost per query",
                  "## Learning from use", "## Multi-step requests from outside the training families"):
        assert title in report
    assert "toolsift bench routing --quick" in report
