"""The companions stage (router.ranking.companions) through `Router.select`, on real catalogs."""
from __future__ import annotations

import pytest

from apidb.loaders import load
from apidb.relations import Relation
from router import Router
from tests.conftest import shared

OFF = dict(companion_same_api=0.0, companion_same_category=0.0, companion_produces_for=0.0, companion_co_use=0.0)


@pytest.fixture(scope="module")
def tmdb():
    return Router(load(shared("restbench", "specs", "tmdb_oas.json"), format="openapi").records)


def test_the_search_an_endpoint_needs_comes_with_it_and_says_why(tmdb):
    """RestBench TMDB's requests (real, labelled): with companions on, more of them get every tool
    they need in the top 10, each added tool says whose companion it is, and the first places stay."""
    from benchmarks.data.datasets import load_dataset

    queries = load_dataset("restbench_tmdb").queries
    plain = tmdb.configured(**OFF)
    complete = {True: 0, False: 0}
    added_gold = []
    for q in queries:
        on = tmdb.select(q.text, k=10, adaptive=False)
        off = plain.select(q.text, k=10, adaptive=False)
        keep = tmdb.config.companion_keep
        assert [s.record.id for s in on[:keep]] == [s.record.id for s in off[:keep]]
        assert not any(s.reason == "companion" or s.companion_of for s in off)
        for s in on:
            if s.reason == "companion":
                assert s.companion_of in {x.record.id for x in on} and s.relation in ("produces_for", "same_api")
                assert s.to_dict()["companion_of"] == s.companion_of
                if s.record.id in q.relevant and s.record.id not in {x.record.id for x in off}:
                    added_gold.append((q.text, s.record.id, s.companion_of))
        complete[True] += q.relevant <= {s.record.id for s in on}
        complete[False] += q.relevant <= {s.record.id for s in off}
    assert len(added_gold) >= 5, added_gold
    assert complete[True] > complete[False]
    assert any(gold.endswith("GET_search-person") for _, gold, _ in added_gold)


def test_filters_apply_to_companions(tmdb):
    query = "Show me the poster images of the Star Wars collection"
    sel = tmdb.select(query, k=10, adaptive=False,
                      candidates=[r.id for r in tmdb.records if "search" not in r.id])
    assert not any("search" in s.record.id for s in sel)


def test_learned_co_use_brings_the_tool_used_together():
    shared("metatool", "plugin_des.json")
    from benchmarks.data.datasets import load_dataset

    d = load_dataset("metatool_multi")
    router = Router(d.records)
    query = "What is the stock price of Tesla today?"
    off = router.select(query, k=30, adaptive=False)
    top, partner = off[0].record.id, off[20].record.id  # a tool far below the top ten
    on = router.with_co_use([Relation(top, partner, "co_use", 1.0)]).select(query, k=10, adaptive=False)
    hit = next(s for s in on if s.record.id == partner)
    assert hit.reason == "companion" and hit.relation == "co_use" and hit.companion_of == top
    # the learned pair belongs to the router it was given to, not to the one it came from
    assert partner not in {s.record.id for s in router.select(query, k=10, adaptive=False)}


def test_pairs_naming_tools_the_catalog_lacks_are_ignored(tmdb):
    r = tmdb.with_co_use([Relation("gone/tool", "tmdb/GET_search-movie", "co_use", 1.0)])
    assert r.relation_graph().counts().get("co_use", 0) == 0
    assert r.select("movies directed by Sofia Coppola", k=5)


def test_produces_for_edges_are_derived_per_api_when_first_reached(tmdb):
    """A router derives an API's produces-for edges when a request first reaches it (all of a 20k-tool
    catalog's took 0.2 s of every fresh `toolsift route`), and they are the catalog-wide ones."""
    from apidb.relations import producer_links
    from router.ranking.companions import RelationGraph

    records = tmdb.records
    graph = RelationGraph.build(records)
    assert graph._produced == {}  # building derives none
    index = {r.id: i for i, r in enumerate(records)}
    whole = {(index[r.source], index[r.target], r.strength) for r in producer_links(records)}
    assert len(whole) > 20
    lazy = {(a, b, s) for a in range(len(records)) for b, kind, s in graph.related(a) if kind == "produces_for"}
    assert lazy == whole
    assert graph.counts()["produces_for"] == len(whole)


def test_relations_of_two_kinds_add_up():
    """StableToolBench G2, Instagram Pro: both of "following by pk"'s siblings are of its API, and only
    "followers by username" also returns the ``pk`` it requires (``feeds``). The kinds add up, so that
    one comes first among them even when the first ranking put the other above it; with one kind it
    does not."""
    import numpy as np

    from router.index.scores import Ranking
    from router.ranking.companions import RelationGraph, complete

    records = load(shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json"),
                   format="toolbench").records
    at = {r.id.rsplit(".", 1)[1]: i for i, r in enumerate(records) if ".Instagram_Pro." in r.id}
    anchor, producer, sibling = at["Following_by_PK"], at["Followers_by_username"], at["Advance_Profile"]
    graph = RelationGraph.build(records)
    kinds = {(c, kind) for c, kind, _ in graph.related(anchor)}
    assert {(producer, "same_api"), (producer, "feeds"), (sibling, "same_api")} <= kinds
    assert (sibling, "feeds") not in kinds
    # the anchor first; below it the sibling, then unrelated tools, then the producer
    others = [i for i in range(len(records)) if i not in at.values()][:8]
    docs = [anchor, sibling, *others, producer]
    scores = [1.0, 0.9, *np.linspace(0.85, 0.75, len(others)), 0.7]
    ranking = Ranking(np.array(docs, dtype=np.int64), np.array(scores))

    def order(weights):
        new, why = complete(ranking, graph, weights, anchors=1, keep=1)
        placed = new.docs.tolist()
        return placed.index(producer) < placed.index(sibling), why

    first, why = order({"same_api": 0.6, "feeds": 0.3})
    assert first and why[producer].anchor == anchor
    # same_api's share (0.6) outweighs feeds' (0.3): the explanation names it
    assert why[producer].kind == "same_api" and why[producer].evidence == pytest.approx(0.9)
    assert not order({"same_api": 0.6, "feeds": 0.0})[0]


def test_the_tools_a_usage_log_keeps_coming_back_to_complete_sets():
    """MetaTool's multi-tool requests: co-use learned from the dev half's gold sets (what a usage log
    of earlier requests holds). With the ``used`` kind on, more test-half requests get both their
    tools in the top 10; the raised tools say the usage log brought them (no anchor), and the first
    places stay."""
    shared("metatool", "plugin_des.json")
    from apidb.relations import co_use_pairs
    from benchmarks.data.datasets import load_dataset
    from benchmarks.data.halves import half_of

    d = load_dataset("metatool_multi")
    pairs = co_use_pairs(q.relevant for q in d.queries if half_of(q.id, "metatool_multi") == "dev")
    on = Router(d.records).with_co_use(pairs)
    assert on.config.companion_used > 0  # chosen on (router.ranking.config)
    base = on.configured(companion_used=0.0)
    test = [q for q in d.queries if half_of(q.id, "metatool_multi") == "test"][::3]
    complete, raised = {True: 0, False: 0}, []
    for q in test:
        with_used = on.select(q.text, k=10, adaptive=False)
        without = base.select(q.text, k=10, adaptive=False)
        keep = on.config.companion_keep
        assert [s.record.id for s in with_used[:keep]] == [s.record.id for s in without[:keep]]
        raised += [s for s in with_used if s.relation == "used"]
        complete[True] += q.relevant <= {s.record.id for s in with_used}
        complete[False] += q.relevant <= {s.record.id for s in without}
    assert complete[True] > complete[False], complete
    assert raised and all(s.reason == "companion" and s.companion_of is None for s in raised)
    shown = raised[0].to_dict()
    assert shown["relation"] == "used" and "companion_of" not in shown
