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
