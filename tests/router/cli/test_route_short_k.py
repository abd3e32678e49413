"""`-k N` that selects fewer than N tools says why (issue 40: `-k 5 --method bm25` gave one tool
and no word about it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import toolsift

TOOLS = Path(__file__).resolve().parents[3] / "examples" / "tools.json"


@pytest.fixture()
def db(tmp_path):
    db = tmp_path / "c.db"
    assert toolsift("catalog", "add", TOOLS, db=db).returncode == 0
    return db


def test_bm25_short_of_k_says_why(db):
    res = toolsift("route", "weather in Oslo", "-k", "5", "--method", "bm25", db=db)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    n = len(out["tools"])
    assert n < 5
    note = f"{n} of k=5 tool(s) selected: BM25 ranks only tools that share a word with the request"
    assert note in res.stderr and any(note in w for w in out["warnings"])


def test_no_index_short_of_k_names_the_dense_fallback(db):
    res = toolsift("route", "weather in Oslo", "-k", "5", db=db)  # hybrid asked for, no index: BM25 only
    assert res.returncode == 0, res.stderr
    assert "of k=5 tool(s) selected" in res.stderr and "dense search is off" in res.stderr, res.stderr


def test_queries_file_lines_carry_the_note(db, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "w", "query": "weather in Oslo"}) + "\n", encoding="utf-8")
    res = toolsift("route", "--queries", queries, "-k", "5", "--method", "bm25", db=db)
    line = json.loads(res.stdout)
    assert "of k=5 tool(s) selected" in line["note"] and "query w: " in res.stderr


def test_a_full_k_has_no_note(db):
    res = toolsift("route", "weather in Oslo", "-k", "1", "--method", "bm25", db=db)
    assert "selected:" not in res.stderr
