"""BM25 read with numpy (no bm25s at query time), honest token budgets, explanations that explain."""
from __future__ import annotations

import numpy as np
import pytest

from router import text as rtext
from router.ranking.budget import DEFAULT_RELATIVE_CUT
from router.ranking.explain import content_words, matched_fields
from router.index.lexical import LexicalIndex
from router.tokens import tool_tokens


def test_stop_words_are_still_bm25s_own_list():
    from bm25s.stopwords import STOPWORDS_EN

    assert rtext.STOPWORDS_EN == frozenset(STOPWORDS_EN)


def test_numpy_scores_equal_bm25s_scores_on_a_saved_real_index(gorilla_records, tmp_path):
    import bm25s

    docs = rtext.batch_tokens(gorilla_records)
    built = LexicalIndex.build(docs)
    built.save(tmp_path / "bm25")
    loaded = LexicalIndex.load(tmp_path / "bm25")
    reference = bm25s.BM25.load(str(tmp_path / "bm25"))  # bm25s reads the files we wrote
    for query in ("summarize long english news articles", "detect objects in street photos and and photos",
                  "translate english to french", "zzzz unknownword"):
        tokens = rtext.tokenize(query)
        ids = [reference.vocab_dict[t] for t in tokens if t in reference.vocab_dict]
        want = reference.get_scores_from_ids(ids) if ids else np.zeros(len(docs), dtype=np.float32)
        assert np.array_equal(loaded.scores(tokens), want), query
        assert np.array_equal(built.scores(tokens), want), query


def test_routing_from_an_index_imports_neither_bm25s_numba_scipy_nor_torch(hub_db):
    import subprocess
    import sys

    from router.index.build import build_index

    build_index(hub_db)
    code = ("import sys; from router.ranking.engine import Router; r = Router.open(sys.argv[1]); "
            "assert not r.warnings, r.warnings; r.select('classify sports activities in videos', k=3); "
            "print(sorted(m for m in ('numba', 'scipy', 'bm25s', 'torch', 'sentence_transformers', 'checker', "
            "'fastapi', 'mcp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(hub_db)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_budget_drops_what_does_not_fit_and_substitutes_only_above_the_cut(bm25_router):
    query = "question answering on documents"
    plain = bm25_router.select(query, k=5, method="bm25")
    costs = {s.record.id: tool_tokens(s.record.to_openai_tool()) for s in plain}
    budget = min(costs.values())  # only the smallest top-5 tool fits
    sel = bm25_router.select(query, k=5, method="bm25", token_budget=budget)
    report = sel.budget
    assert report.limit == budget and report.used == sum(s.tokens for s in sel) <= budget
    assert all(s.tokens == tool_tokens(s.record.to_openai_tool()) for s in sel)
    top = plain[0].score
    assert report.cut == pytest.approx(DEFAULT_RELATIVE_CUT * top)
    for s in sel:  # a tool from below the top 5 only if it clears the relevance cut
        assert s.record.id in costs or (s.reason == "substitute" and s.score >= report.cut)
    dropped = {d.record.id: d for d in report.dropped}
    assert {rid for rid, c in costs.items() if c > budget} <= set(dropped)
    assert all("does not fit" in d.reason and d.rank <= 5 for d in report.dropped)
    # without a budget nothing changes: the plain top-k, no report
    assert plain.budget is None and all(s.tokens is None for s in plain)


def test_a_budget_nothing_fits_returns_nothing_rather_than_an_unrelated_small_tool(bm25_router):
    sel = bm25_router.select("question answering on documents", k=5, method="bm25", token_budget=1)
    assert list(sel) == [] and sel.budget.used == 0 and len(sel.budget.dropped) >= 5


def test_matched_terms_are_content_words_with_their_fields(torchhub_records):
    stems = content_words("What's going on: I'd like one model from torch hub to classify sports videos, please")
    words = set(stems.values())
    assert not words & {"s", "going", "from", "one", "like", "i", "d", "please"}
    assert {"model", "torch", "hub", "classify", "sports", "videos"} <= words
    rec = next(r for r in torchhub_records if "video" in r.description.lower())
    hits = matched_fields(stems, rec)
    assert hits and all(set(fields) <= {"name", "namespace", "description", "params", "tags", "call"}
                        for fields in hits.values())
    assert "videos" in hits and "description" in hits["videos"]


def test_a_bm25_route_neither_reads_the_dense_index_nor_imports_faiss(hub_db):
    import subprocess
    import sys

    from router.index.build import build_index

    build_index(hub_db)
    code = ("import sys; from router.ranking.engine import Router; r = Router.open(sys.argv[1], dense=False); "
            "assert not r.warnings, r.warnings; s = r.select('classify sports activities in videos', k=3, "
            "method='bm25'); assert len(s) == 3; print('faiss' in sys.modules, 'onnxruntime' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(hub_db)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
