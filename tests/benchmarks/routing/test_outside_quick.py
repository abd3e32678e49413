"""`toolsift bench routing --only outside --quick`: the shipped router on multi-step requests from
outside the training families, through the installed command."""
from __future__ import annotations

import json
from importlib import metadata

import pytest

from tests.support.cli import toolsift


@pytest.mark.slow
def test_outside_section_scores_today_and_new_on_each_set_and_in_one_catalog(tmp_path):
    try:
        metadata.distribution("nestful-wrapper")
    except metadata.PackageNotFoundError:
        pytest.skip("the outside sets' wheel nestful-wrapper is not installed (pip install 'toolsift[bench]')")
    res = toolsift("bench", "routing", "--only", "outside", "--quick", "--out", tmp_path, timeout=1800)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "general encoder (shipped), all sets in one catalog: multi-tool all-gold@10 nestful_executable" in res.stdout
    o = json.loads((tmp_path / "results.json").read_text())["outside"]
    assert o["command"] == "toolsift bench routing --quick --only outside"
    sets = o["sets"]
    assert set(sets) == {"nestful_executable", "nestful_glaive", "nestful_sgd", "complexfuncbench"}
    assert all(s["requests"] == 24 for s in sets.values())
    assert o["catalog_tools"] == sum(s["tools"] for s in sets.values())
    assert set(o["rows"]) == {"base MiniLM", "general encoder (shipped)"}
    for catalogs in o["rows"].values():
        assert set(catalogs) == {"own", "all sets in one catalog"}
        for by in catalogs.values():
            assert set(by) == {"today", "new", "part_signal hybrid", "no part floor"}
            for key, new in by["new"].items():
                today = by["today"][key]
                assert new["n"] == today["n"] and key.split("|")[0] in sets
                # companions and part tools never move the first five places
                assert abs(new["ndcg@5"] - today["ndcg@5"]) < 1e-9
                assert 0 <= new["all_gold@5"] <= new["all_gold@10"] <= 1
                assert 1 <= new["tools"] <= 10 and new["tokens"] > 0
            for name, s in sets.items():  # every multi-tool request of the sample is scored, in its group
                assert by["new"][f"{name}|multi"]["n"] == s["multi"]
    for by in o["rows"]["base MiniLM"].values():  # the untuned MiniLM holds part tools to no floor
        assert by["no part floor"] == by["new"]
    report = (tmp_path / "report.md").read_text()
    assert "## Multi-step requests from outside the training families" in report
    assert "| general encoder (shipped) | all | complexfuncbench |" in report


def test_an_unknown_section_names_outside_among_the_choices():
    res = toolsift("bench", "routing", "--only", "outsde", timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--only: speed, usage-log, curve, parts, companions or outside, not 'outsde'" in res.stderr
