"""A request in another language than English is routed, and said to be out of scope (issue 40:
German "Wird es morgen in Oslo regnen?" put translate_text first, silently)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import toolsift

TOOLS = Path(__file__).resolve().parents[3] / "examples" / "tools.json"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("lang") / "c.db"
    assert toolsift("catalog", "add", TOOLS, db=db).returncode == 0
    return db


@pytest.mark.parametrize("query, code", [("Wird es morgen in Oslo regnen?", "de"),
                                         ("¿Cuál es el tiempo en Madrid mañana?", "es"),
                                         ("明天奥斯陆会下雨吗？", "zh")])
def test_a_non_english_request_is_flagged(db, query, code):
    res = toolsift("route", query, "--method", "bm25", db=db)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["language"]["code"] == code
    assert "routing is built and measured for English requests" in res.stderr
    assert any("English" in w for w in out["warnings"])


def test_english_requests_are_not_flagged(db, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps({"id": i, "query": q}) for i, q in enumerate([
        "Will it rain in Oslo tomorrow?", "weather in Oslo", "book a flight",
        "Translate the following text from French to English: \"Le système éducatif français\""])) + "\n",
        encoding="utf-8")
    res = toolsift("route", "--queries", queries, "--method", "bm25", db=db)
    assert res.returncode == 0, res.stderr
    assert [json.loads(x)["language"] for x in res.stdout.splitlines()] == [None] * 4
    assert "English requests" not in res.stderr
