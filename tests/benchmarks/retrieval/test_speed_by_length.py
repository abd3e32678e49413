"""Route latency by request length (`toolsift bench router --speed-only`): short questions and
agent-length requests timed apart, with their words per request, and the README row made from them."""
from __future__ import annotations

import os

from benchmarks.data.datasets import available, load_dataset
from benchmarks.retrieval.targets_run import length_row
from benchmarks.retrieval.targets_speed import AGENT_WORDS, SHORT_WORDS, by_length


def test_short_and_agent_requests_are_timed_apart_and_make_the_readme_row(tmp_path):
    import pytest

    from apidb.loaders import load
    from router import Router
    from tests.conftest import shared
    from tests.router.conftest import STB_CATEGORIES

    if not available("stabletoolbench_G2_instruction"):
        pytest.skip("real data not available: StableToolBench G2_instruction")
    path = shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    records = [r for r in load(path, format="toolbench").records if r.metadata.get("category_name") in STB_CATEGORIES]
    stb_router = Router.from_records(records, cache_dir=tmp_path)
    texts = [q.text for q in load_dataset("stabletoolbench_G2_instruction").queries]
    texts += ["weather in Paris tomorrow", "convert 100 dollars to euros", "find a cocktail recipe with vodka"]
    by = by_length(stb_router, texts, quick=True)
    assert set(by) == {"short", "agent"}
    assert by["short"]["words_range"][1] <= SHORT_WORDS
    assert AGENT_WORDS[0] <= by["agent"]["words_range"][0] <= by["agent"]["words_range"][1] <= AGENT_WORDS[1]
    for v in by.values():
        assert 0 < v["hybrid"]["cpu_p50"] and 0 < v["hybrid"]["p50"] and v["requests"] == min(30, v["requests"])
    # where the CPU goes: the stages add up to the route, the query encoder is timed on every request
    for v in by.values():
        st = v["stages"]
        assert {"encoder", "bm25", "dense search", "shaping", "selection", "rest", "total"} <= set(st)
        assert st["encoder"] > 0 and abs(sum(x for k, x in st.items() if k != "total") - st["total"]) < 0.01
    assert stb_router.encode_queries.__func__ is type(stb_router).encode_queries  # the timing wrappers are gone
    row = length_row({"by_length": by, "catalog": len(stb_router), "encoder": stb_router.encoder,
                      "command": "toolsift bench router --speed-only --quick"})
    cells = row.strip("|").split(" | ")
    assert len(cells) == 4 and cells[2] == "`toolsift bench router --speed-only --quick`"
    agent = by["agent"]
    assert (f"agent-length requests ({agent['words_range'][0]}–{agent['words_range'][1]} words, "
            f"{agent['mean_words']} on average): hybrid p50 {agent['hybrid']['p50']:.2f} ms wall, "
            f"{agent['hybrid']['cpu_p50']:.2f} ms CPU") in row
    assert f"on {os.cpu_count()} cores" in row
    # the baseline of the wide encoder session, measured in the same run, is in the row
    one = agent["hybrid_one_thread"]
    assert one["p50"] > 0 and f"one encoder thread: {one['p50']:.2f} ms wall" in row
    assert stb_router.embedder.model.wide_queries  # restored after the baseline
    # what part_signal="hybrid" costs, measured in the same run on the same requests
    encoded = agent["hybrid_parts_encoded"]
    assert encoded["p50"] > 0 and encoded["cpu_p50"] > 0
