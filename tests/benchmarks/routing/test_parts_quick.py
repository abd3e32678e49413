"""`toolsift bench routing --only parts --quick`: the split's section, through the installed command."""
from __future__ import annotations

import json

import pytest

from tests.conftest import shared
from tests.support.cli import toolsift


@pytest.mark.slow
def test_parts_section_runs_alone_and_reports_parts_against_gold(tmp_path):
    shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    shared("metatool", "data", "multi_tool_query_golden.json")
    shared("livemcpbench", "all_annotations.json")
    res = toolsift("bench", "routing", "--only", "parts", "--quick", "--out", tmp_path, timeout=1800)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "multi-tool all-gold@10, today's split" in res.stdout
    p = json.loads((tmp_path / "results.json").read_text())["parts"]
    assert p["command"] == "toolsift bench routing --quick --only parts"
    assert {"today", "all"} <= set(p["candidates"]) and set(p["chosen"].values()) <= set(p["candidates"])
    today, new = p["requests"]["today"], p["requests"]["new"]
    assert set(today) == {"stabletoolbench_G2_instruction", "metatool_multi", "livemcpbench"}
    for name, m in new.items():
        assert 0 < m["requests"] <= 24 and m["gold_mean"] >= 2  # multi-tool requests only
        assert m["parts_mean"] >= today[name]["parts_mean"]      # the new rules only add cuts
        assert m["unsplit"] <= today[name]["unsplit"]
        assert 0 <= m["gold_share@5"] <= m["gold_share@10"] <= 1
    # the LiveMCPBench requests the old split left whole include ones the new rules cut
    assert new["livemcpbench"]["unsplit"] < today["livemcpbench"]["unsplit"]
    rows = p["rows"]["new split (cross-fitted)"]
    assert {"metatool_single", "apibench_torchhub"} <= set(rows)
    report = (tmp_path / "report.md").read_text()
    assert "## Parts of multi-tool requests" in report and "Requests today's split leaves whole" in report
    assert "(2 gold)" in report or "(3 gold)" in report  # real examples of missed splits
    # each part's own tool: chosen per half from the grid, cross-fitted rows beside "off", nDCG@5 kept
    pt = p["part_tools"]
    assert set(pt["chosen"].values()) <= set(pt["grid"]) and pt["shipped"] in pt["grid"]
    off, crossed = pt["rows"]["off"], pt["rows"]["cross-fitted"]
    for name in off:
        assert abs(crossed[name]["ndcg@5"] - off[name]["ndcg@5"]) < 1e-9  # the first five never move
    assert "### Each part's own best tool" in report
    # leave one family out: each family with multi-tool files gets the choice made without it
    assert set(pt["lofo"]) == {"stabletoolbench", "metatool", "livemcpbench"}
    for fam, row in pt["lofo"].items():
        assert row["chosen"] in pt["grid"]
        for name, r in row["rows"].items():
            assert r["off"] == off[name] and abs(r["new"]["ndcg@5"] - off[name]["ndcg@5"]) < 1e-9
    assert "chosen without it" in report
