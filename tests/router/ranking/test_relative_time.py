"""A date the request gives relative to now is a part of its own (router.ranking.relative_time), on real
requests: LiveMCPBench (527 MCP tools, two of which tell the current date), with the shipped general
encoder; the library and the installed script."""
from __future__ import annotations

import pytest

from router.ranking.relative_time import relative_date


@pytest.fixture(scope="module")
def live():
    from benchmarks.data.datasets import available, load_dataset

    if not available("livemcpbench"):
        pytest.skip("real data not available: LiveMCPBench")
    return load_dataset("livemcpbench")


def _clocks(ds) -> set[str]:
    return {r.id for r in ds.records if r.name in ("get_current_time", "get-current-date")}


@pytest.mark.parametrize("text, date", [
    ("Help me check the train tickets from Beijing to Shanghai on next Wednesday.", "next Wednesday"),
    ("Analyze the last 24h of BTC", "last 24h"),
    ("How has the index changed over the past three days?", "past three days"),
    ("Book it for tomorrow evening", "tomorrow"),
    ("What did the market do two weeks ago?", "two weeks ago"),
    ("Find the latest papers on web agents", None),  # "latest" asks a data tool, not the clock
    ("What is the current price of gold?", None),
    ("Get the 3 last messages of the channel", None),  # "last" of a count, not of a span of time
])
def test_a_date_relative_to_now_is_found_and_other_time_words_are_not(text, date):
    span = relative_date(text)
    assert (None if span is None else text[span[0]:span[1]]) == date


def test_every_request_whose_gold_needs_the_clock_gives_a_relative_date(live):
    """Against the dataset's own labels: each request whose gold set holds a clock tool gives a date
    relative to now; most that give one have no clock in their gold set ("today's top LLM-related
    news"), which is what the bench weighs."""
    clocks = _clocks(live)
    needs = [q for q in live.queries if q.relevant & clocks]
    assert needs and all(relative_date(q.text) for q in needs), [q.text for q in needs if not relative_date(q.text)]
    # measured: 5 requests need the clock, all 5 found; 20 of the 94 give a relative date
    assert len(needs) >= 5
