"""Sentence matching in hybrid ranking: a request that asks for two tools in two sentences."""
from __future__ import annotations

import numpy as np

from router.ranking.query import query_sentences

COCKTAIL = "toolbench/Food.Cocktail_by_API-Ninjas.v1_cocktail"
CAKES = "toolbench/Food.The_Birthday_Cake_DB.List_of_Cakes"
# A real StableToolBench G2_instruction request; its gold tools are COCKTAIL and CAKES.
PARTY = ("I'm hosting a cocktail party and I need some cocktail recipes. Can you suggest some cocktail "
         "recipes that contain vodka as one of the ingredients? Also, provide me with a cake recipe "
         "from The Birthday Cake DB.")


def test_query_sentences_only_for_several_sentences():
    assert query_sentences("weather in Paris tomorrow") == []
    assert query_sentences("Find hotels in Rome. Ok.") == []  # "Ok." is too short to stand alone
    assert query_sentences(PARTY) == [
        "I'm hosting a cocktail party and I need some cocktail recipes.",
        "Can you suggest some cocktail recipes that contain vodka as one of the ingredients?",
        "Also, provide me with a cake recipe from The Birthday Cake DB."]
    assert len(query_sentences(" ".join(["Get the weather for a city."] * 20), max_sentences=6)) == 6
    assert query_sentences("previous turn about weather\nand in Paris now?") == [
        "previous turn about weather", "and in Paris now?"]  # conversation parts are lines
    # a period after an abbreviation ends no sentence (router.ranking.query.abbreviation_ends)
    assert query_sentences("Who won Barcelona vs. Real Madrid last week? Book me a hotel in Madrid.") == [
        "Who won Barcelona vs. Real Madrid last week?", "Book me a hotel in Madrid."]
    assert query_sentences("Get the price of Apple Inc. and its CEO. Then email it to Dr. Lee at work.") == [
        "Get the price of Apple Inc. and its CEO.", "Then email it to Dr. Lee at work."]
    assert query_sentences("Get the stock price of Apple Inc. Then find the CEO of the company.") == [
        "Get the stock price of Apple Inc.", "Then find the CEO of the company."]


def test_second_sentence_reaches_its_tool(stb_base_router):
    stb_router = stb_base_router  # this request is in the general encoder's training data
    top = [s.record.id for s in stb_router.select(PARTY, k=3)]
    assert COCKTAIL in top and CAKES in top
    # one query vector (and no re-ordering by parts, router.ranking.coverage, which would serve the cake
    # sentence on its own): the cocktail words dominate and the cake tool drops out of the top 3
    plain = [s.record.id for s in stb_router.configured(sentence_max=False, coverage=0.0).select(PARTY, k=3)]
    assert COCKTAIL in plain and CAKES not in plain
    # the parts alone, without sentence matching, also bring the cake tool back
    parts = [s.record.id for s in stb_router.configured(sentence_max=False).select(PARTY, k=3)]
    assert COCKTAIL in parts and CAKES in parts


def test_explanations_keep_the_whole_query_cosine(stb_router):
    sel = stb_router.select(PARTY, k=3)
    plain = {s.record.id: s.dense_score for s in stb_router.configured(sentence_max=False).select(PARTY, k=10)}
    for s in sel:
        assert 0 < s.dense_score <= 1  # cosine of the whole query, not the summed ranking input
        if s.record.id in plain:
            assert abs(s.dense_score - plain[s.record.id]) < 1e-5


def test_sentence_spans_point_at_the_sentences():
    from router.ranking.query import sentence_spans

    spans = sentence_spans(PARTY)
    assert [PARTY[s:e] for s, e in spans] == query_sentences(PARTY)
    assert sentence_spans("  one two three.\n\n four five six  ") == [(2, 16), (19, 32)]


def test_span_vectors_come_from_one_pass_over_the_query(stb_router):
    """Row 0 is the plain query vector; each further row pools one sentence's tokens."""
    from router.encoders.dense import encode_with_spans
    from router.ranking.query import sentence_spans

    model = stb_router.embedder.model
    spans = sentence_spans(PARTY)
    vecs = encode_with_spans(model, PARTY, spans)
    assert vecs.shape == (1 + len(spans), 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    alone = stb_router.encode_queries([PARTY] + [PARTY[s:e] for s, e in spans])
    assert float(vecs[0] @ alone[0]) > 0.999
    # pooled tokens carry the whole request's context, yet each sentence encoded on its own
    # is closest to its own pooled row
    sims = vecs[1:] @ alone[1:].T
    assert list(sims.argmax(axis=0)) == list(range(len(spans)))
    # a sentence past the model's length limit has no tokens: its row is dropped
    long_text = "Find a tool for the weather. " + " ".join(["word"] * 400) + ". Then book a table for two."
    assert len(sentence_spans(long_text)) == 3
    assert encode_with_spans(model, long_text, sentence_spans(long_text)).shape[0] == 3


def test_parts_search_scores_are_exact():
    """Pooled candidates (the query's top ``pool``) and the union of each vector's top list
    both return exact cos(q) + max(cos(q), cos(part)) scores; with a pool as large as the
    catalog the result is the brute-force top n."""
    from router.index.vector_index import DenseIndex

    rng = np.random.default_rng(0)
    v = rng.normal(size=(500, 16)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    q, parts = v[3] + 0.1, rng.normal(size=(3, 16)).astype(np.float32)
    q /= np.linalg.norm(q)
    parts /= np.linalg.norm(parts, axis=1, keepdims=True)
    sims = v @ np.vstack([q, parts]).T
    want = sims[:, 0] + sims.max(axis=1)
    index = DenseIndex(v)
    for pool in (0, 50, 500):
        docs, scores = index.search_with_parts(q, parts, 10, pool=pool)
        assert np.allclose(scores, want[docs], atol=1e-5) and list(scores) == sorted(scores, reverse=True)
    docs, _ = index.search_with_parts(q, parts, 10, pool=500)
    assert set(docs) == set(np.argsort(-want)[:10])
    allowed = np.arange(0, 500, 2)
    docs, _ = index.search_with_parts(q, parts, 10, allowed, pool=50)
    assert len(docs) == 10 and all(d % 2 == 0 for d in docs)
