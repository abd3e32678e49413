"""Record text, tokenization and the fusion formulas (no model needed)."""
from __future__ import annotations

import numpy as np

from router.ranking.fusion import Ranking, interleave, min_max, rrf, wsum
from router.ranking.query import build_query, split_query
from router.text import record_fields, record_passage, record_tokens, split_identifier, tokenize


def test_identifiers_split_snake_camel_and_acronyms():
    assert split_identifier("get_weather_by_coords") == "get weather by coords"
    assert split_identifier("getWeatherByCoords") == "get Weather By Coords"
    assert split_identifier("HTTPServerError2") == "HTTP Server Error2"
    assert tokenize("getWeatherByCoords") == tokenize("get weather by coords")


def test_tokens_drop_stopwords_and_stem():
    assert tokenize("What is the weather in Paris?") == ["weather", "pari"]


def test_record_fields_on_a_real_gorilla_record(torchhub_records):
    rec = next(r for r in torchhub_records if r.id == "torchhub/slow_r50")
    f = record_fields(rec)
    assert "slow r50" in f["name"]
    assert "Video Classification" in f["tags"]
    assert "pytorchvideo" in f["call"]
    assert "pretrained" in f["params"]
    assert "video classification" in record_passage(rec).lower()
    toks = record_tokens(rec, {"name": 3, "description": 0, "params": 0, "tags": 0, "call": 0, "namespace": 0})
    assert toks.count("slow") == 3 and "video" not in toks


def test_record_fields_on_a_real_toolbench_record(stb_records):
    rec = next(r for r in stb_records if "Easy_Weather" in r.id)
    f = record_fields(rec)
    assert f["tags"] == "Weather Easy Weather"  # category and tool name
    assert "latitude" in f["params"]


def test_rrf_and_wsum_by_hand():
    a = Ranking(np.array([3, 1, 2]), np.array([9.0, 5.0, 1.0]))
    b = Ranking(np.array([1, 4]), np.array([0.8, 0.4]))
    fused = rrf([a, b], k=60)
    assert fused.docs[0] == 1  # ranked 2nd and 1st beats 1st alone
    assert np.isclose(fused.scores[0], 1 / 62 + 1 / 61)
    w = wsum([a, b], [0.5, 0.5])
    got = dict(zip(w.docs.tolist(), w.scores.tolist()))
    assert np.isclose(got[3], 0.5 * 1.0) and np.isclose(got[1], 0.5 * 0.5 + 0.5 * 1.0)
    assert np.isclose(got[4], 0.0) and np.isclose(got[2], 0.0)
    assert min_max(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]


def test_interleave_takes_each_subquery_best_first():
    a = Ranking(np.array([1, 2, 3]), np.array([3.0, 2.0, 1.0]))
    b = Ranking(np.array([7, 1]), np.array([5.0, 4.0]))
    assert interleave([a, b]).docs.tolist() == [1, 7, 2, 3]


def test_build_query_from_conversation():
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What's the weather in London?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_current_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "12 C, light rain " + "x" * 5000},
        {"role": "user", "content": [{"type": "text", "text": "and in Paris?"}]},
    ]
    q = build_query(messages)
    assert q.startswith("and in Paris?")
    assert "weather in London" in q and "get_current_weather" in q and "light rain" in q
    assert len(q) < 1000  # tool results are cut short


def test_split_query_on_multi_request_text():
    q = ("I need the weather forecast for Berlin for next week. Also, find me vegetarian restaurants "
         "near the Brandenburg Gate, and then convert 100 euros to US dollars.")
    parts = split_query(q)
    assert len(parts) == 3
    assert split_query("weather in Berlin") == ["weather in Berlin"]
