"""Every control of Router.select on the real bundled Gorilla catalog, BM25 path (no model)."""
from __future__ import annotations

import pytest

from router import Router, RouterError
from router.tokens import tool_tokens


def ids(sel):
    return [s.record.id for s in sel]


def test_k_and_explanations(bm25_router):
    sel = bm25_router.select("classify sports activities in videos", k=3, method="bm25")
    assert len(sel) == 3 and [s.rank for s in sel] == [1, 2, 3]
    assert all(s.reason == "ranked" for s in sel)
    assert sel[0].score >= sel[1].score >= sel[2].score
    assert "videos" in sel[0].matched_terms and sel[0].bm25_score > 0 and sel[0].dense_score is None
    d = sel[0].to_dict()
    assert {"id", "name", "namespace", "score", "call", "rank", "reason", "bm25_score", "matched_terms",
            "dense_score"} <= d.keys()


def test_min_score_drops_weak_tools(bm25_router):
    all_ = bm25_router.select("translate english to french", k=10, method="bm25")
    cut = all_[3].score
    sel = bm25_router.select("translate english to french", k=10, method="bm25", min_score=cut)
    assert ids(sel) == ids(all_)[: len(sel)] and all(s.score >= cut for s in sel)
    assert len(sel) < 10


def test_pinned_by_id_and_name_not_counted_against_k(bm25_router):
    sel = bm25_router.select("translate english to french", k=2, method="bm25",
                             pinned=["torchhub/slow_r50", "Video_Classification_Model"])
    assert [s.reason for s in sel] == ["pinned", "pinned", "ranked", "ranked"]
    assert ids(sel)[:2] == ["torchhub/slow_r50", "tensorflowhub/Video_Classification_Model"]
    with pytest.raises(RouterError, match="not in the catalog"):
        bm25_router.select("x", pinned=["no_such_tool"])


def test_namespace_filters_apply_before_ranking(bm25_router):
    q = "image classification model pretrained on imagenet"
    only = bm25_router.select(q, k=5, method="bm25", include_namespaces=["torchhub"])
    assert len(only) == 5 and {s.record.namespace for s in only} == {"torchhub"}
    none_tf = bm25_router.select(q, k=5, method="bm25", exclude_namespaces=["tensorflowhub", "huggingface"])
    assert ids(none_tf) == ids(only)
    with pytest.raises(RouterError, match="unknown namespace 'pytorch'"):
        bm25_router.select(q, include_namespaces=["pytorch"])


def test_candidates_restrict_ranking(bm25_router, gorilla_records):
    pool = [r.id for r in gorilla_records if r.namespace == "huggingface"][:40]
    sel = bm25_router.select("text generation", k=5, method="bm25", candidates=pool)
    assert set(ids(sel)) <= set(pool)
    with pytest.raises(RouterError, match="not a record id"):
        bm25_router.select("text", candidates=["huggingface/nope"])


@pytest.mark.parametrize("budget", [60, 150, 400, 1500])
def test_token_budget_is_never_exceeded(bm25_router, budget):
    sel = bm25_router.select("question answering on documents", k=8, method="bm25", token_budget=budget)
    spent = sum(tool_tokens(s.record.to_openai_tool()) for s in sel)
    assert spent <= budget
    if budget >= 1500:
        assert len(sel) == 8


def test_pinned_over_budget_is_an_error(bm25_router):
    with pytest.raises(RouterError, match="over the budget"):
        bm25_router.select("x y", pinned=["torchhub/slow_r50"], token_budget=5)


@pytest.mark.parametrize("bad, match", [
    (dict(query=""), "empty query"),
    (dict(query="   \n"), "empty query"),
    (dict(query="weather " * 15000), "limit is 50,000"),
    (dict(query="ok", k=0), "positive integer"),
    (dict(query="ok", k=-3), "positive integer"),
    (dict(query="ok", method="magic"), "unknown method"),
    (dict(query="ok", token_budget=0), "token_budget"),
    (dict(query=[{"role": "assistant", "content": "hi"}]), "no user turn"),
    (dict(query=42), "string or a messages list"),
])
def test_bad_input_is_a_clear_error(bm25_router, bad, match):
    q = bad.pop("query")
    with pytest.raises(RouterError, match=match):
        bm25_router.select(q, **bad)


def test_long_conversation_is_trimmed_not_refused(bm25_router):
    msgs = [{"role": "user", "content": "translate this to german: " + "word " * 30000}]
    assert bm25_router.select(msgs, k=3, method="bm25")


def test_query_with_no_known_word_selects_nothing(bm25_router):
    assert bm25_router.select("zzqx vvbw", k=3, method="bm25") == []


def test_bm25_only_router_falls_back_from_hybrid(bm25_router):
    sel = bm25_router.select("object detection", k=2)  # hybrid asked, dense disabled
    assert len(sel) == 2 and sel[0].dense_score is None
    assert any("BM25 only" in w for w in bm25_router.warnings)


def test_empty_or_duplicate_tool_lists_are_refused(torchhub_records):
    with pytest.raises(RouterError, match="no tools"):
        Router.from_records([])
    with pytest.raises(RouterError, match="duplicate record id"):
        Router.from_records([torchhub_records[0], torchhub_records[0]])
