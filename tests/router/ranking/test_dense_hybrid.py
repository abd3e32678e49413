"""Hybrid and dense routing with the real MiniLM model on small real catalogs."""
from __future__ import annotations

from dataclasses import replace

from router import text as rtext
from router import Router
from router.encoders.dense import shared_cache


def test_hybrid_explanations_carry_both_scores(hub_router):
    sel = hub_router.select("What is an API that can be used to classify sports activities in videos?", k=5)
    assert "torchhub/slow_r50" in [s.record.id for s in sel]
    top = sel[0]
    assert top.bm25_score is not None and top.dense_score is not None and 0 < top.dense_score <= 1
    assert 0 <= top.score <= 1.0 + 1e-9  # weighted sum of min-max normalized scores (no tool groups here)


def test_dense_only_ranks_by_cosine(hub_router):
    sel = hub_router.select("a model that turns a photo into a depth map", k=4, method="dense")
    assert len(sel) == 4
    assert [round(s.score, 6) for s in sel] == [round(s.dense_score, 6) for s in sel]
    assert sel[0].score >= sel[-1].score


def test_follow_up_turn_finds_the_weather_tool(stb_router):
    conversation = [
        {"role": "user", "content": "What's the weather like in London right now?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "realtime_weather_api_for_weatherapi_com", "arguments": "{\"q\": \"London\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp_c\": 11, \"condition\": \"Light rain\"}"},
        {"role": "assistant", "content": "It is 11 C with light rain in London."},
        {"role": "user", "content": "and in Paris?"},
    ]
    sel = stb_router.select(conversation, k=3)
    assert sel and all(s.record.metadata["category_name"] == "Weather" for s in sel)
    assert any("weather" in t for t in sel[0].matched_terms)  # the earlier turn's words matched


def test_filters_and_pins_in_hybrid_mode(stb_router, stb_records):
    travel = [r.id for r in stb_records if r.metadata["category_name"] == "Travel"]
    sel = stb_router.select("hotel prices in Rome", k=3, include_namespaces=["toolbench"], candidates=travel,
                            pinned=["toolbench/Weather.Easy_Weather.Current_conditions_basic"])
    assert sel[0].reason == "pinned" and len(sel) == 4
    assert all(s.record.id in travel for s in sel[1:])


def test_from_records_reuses_cached_vectors(torchhub_records, emb_cache, hub_router):
    again = Router.from_records(torchhub_records, cache_dir=emb_cache)
    again.dense_index()
    assert again.embedder.docs_encoded == 0  # every vector came from the cache
    changed = list(torchhub_records[:-1]) + [replace(torchhub_records[-1], description="A brand new model.")]
    other = again.with_records(changed)
    other.dense_index()
    assert other.embedder.docs_encoded == 1
    # vectors are keyed by passage: records that render the same passage share one vector
    passages = {rtext.embedding_key(r) for r in torchhub_records}
    assert len(shared_cache(emb_cache, other.model_id)) >= len(passages) + 1


def test_split_queries_keep_each_request(stb_router):
    q = ("Get the current weather in Tokyo. Also, convert 100 US dollars to Japanese yen, "
         "and then find a ramen recipe.")
    sel = stb_router.select(q, k=6, split=True)
    cats = {s.record.metadata["category_name"] for s in sel}
    assert "Weather" in cats and len(cats) >= 2


def test_endpoints_of_one_tool_are_grouped(stb_router):
    from router.ranking.engine import _groups

    groups = _groups(stb_router.records)
    easy = [i for i, r in enumerate(stb_router.records) if ".Easy_Weather." in r.id]
    assert len(easy) == 3 and len({int(groups[i]) for i in easy}) == 1
    plain = stb_router.configured(group_boost=0.0).select("current conditions for latitude and longitude", k=5)
    boosted = stb_router.select("current conditions for latitude and longitude", k=5)
    n_easy = lambda sel: sum(".Easy_Weather." in s.record.id for s in sel)
    assert n_easy(boosted) >= n_easy(plain)
