"""Real tool sets for the middleware tests: the StableToolBench endpoints (as OpenAI tools and
as a catalog file) and a small hand-written set for the embedding-model test."""
from __future__ import annotations

import functools
from pathlib import Path

from tests.conftest import shared


@functools.lru_cache(maxsize=1)
def _stb():
    from benchmarks.data.datasets import load_dataset

    return load_dataset("stabletoolbench_G1_instruction")


@functools.lru_cache(maxsize=4)
def _dataset(name: str):
    from benchmarks.data.datasets import load_dataset

    return load_dataset(name)


def dataset(name: str):
    """A benchmark data set by its name (benchmarks.data.datasets), loaded once for the tests that
    share it; skips with the reason when its data is absent."""
    import pytest

    from benchmarks.data.datasets import available

    if not available(name):
        pytest.skip(f"real data not available: {name}")
    return _dataset(name)


def stb_dataset():
    """The StableToolBench G1-instruction queries over the 2,231-endpoint union corpus (skips without data)."""
    shared("stabletoolbench_solvable", "test_instruction", "G1_instruction.json")
    return _stb()


def stb_tools() -> list[dict]:
    """Every endpoint as an OpenAI tool; the few names two endpoints share keep their first one
    (a Chat Completions request cannot carry two tools with one name)."""
    seen, tools = set(), []
    for r in stb_dataset().records:
        tool = r.to_openai_tool()
        if tool["function"]["name"] not in seen:
            seen.add(tool["function"]["name"])
            tools.append(tool)
    return tools


def gold_names(query) -> set[str]:
    ds = stb_dataset()
    by_id = {r.id: r for r in ds.records}
    return {by_id[i].openai_name() for i in query.relevant if i in by_id}


def stb_catalog(path: Path) -> Path:
    from apidb import Catalog

    with Catalog(path) as cat:
        cat.sync(stb_dataset().records)
    return path


def small_tools() -> list[dict]:
    def fn(name: str, desc: str, props: dict, required: list[str]) -> dict:
        return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
            "type": "object", "properties": props, "required": required}}}

    s = {"type": "string"}
    return [
        fn("get_weather", "Current weather (temperature, wind, rain) for a city.", {"city": s,
           "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"]),
        fn("geocode_city", "Latitude and longitude of a city name.", {"city": s}, ["city"]),
        fn("send_email", "Send an email to a recipient with a subject and body.", {"to": s, "subject": s, "body": s},
           ["to", "body"]),
        fn("convert_currency", "Convert an amount of money from one currency to another.",
           {"amount": {"type": "number"}, "from_currency": s, "to_currency": s}, ["amount", "from_currency", "to_currency"]),
        fn("search_flights", "Find flights between two airports on a date.", {"origin": s, "destination": s, "date": s},
           ["origin", "destination"]),
        fn("book_hotel", "Book a hotel room in a city for given nights.", {"city": s, "nights": {"type": "integer"}},
           ["city"]),
        fn("translate_text", "Translate text into another language.", {"text": s, "target_language": s},
           ["text", "target_language"]),
        fn("stock_quote", "Latest stock price for a ticker symbol.", {"symbol": s}, ["symbol"]),
        fn("create_calendar_event", "Add an event to the user's calendar.", {"title": s, "start": s}, ["title", "start"]),
        fn("play_music", "Play a song, album or artist on the speaker.", {"query": s}, ["query"]),
        fn("set_timer", "Start a countdown timer.", {"seconds": {"type": "integer"}}, ["seconds"]),
        fn("news_headlines", "Top news headlines for a topic or country.", {"topic": s}, []),
    ]
