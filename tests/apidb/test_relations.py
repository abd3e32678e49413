"""apidb.relations on real catalogs: the producer of an id an endpoint needs, and learned co-use."""
from __future__ import annotations

import pytest

from apidb.errors import CatalogError
from apidb.loaders import load
from apidb.relations import api_key, category_key, co_use_pairs, producer_links
from tests.conftest import shared


def _links(records):
    return {(r.source.split("/", 1)[1], r.target.split("/", 1)[1]): r.strength for r in producer_links(records)}


def test_an_endpoint_that_needs_an_id_is_linked_to_the_search_that_finds_it():
    """RestBench TMDB: /person/{person_id}/movie_credits needs a person id; /search/person finds one."""
    records = load(shared("restbench", "specs", "tmdb_oas.json"), format="openapi").records
    links = _links(records)
    assert links[("GET_person-person_id-movie_credits", "GET_search-person")] == 1.0
    assert links[("GET_collection-collection_id-images", "GET_search-collection")] == 1.0
    # a search of another thing, or an endpoint that itself needs the id, never produces it
    assert ("GET_person-person_id-movie_credits", "GET_search-movie") not in links
    assert ("GET_person-person_id-movie_credits", "GET_person-person_id") not in links
    # nothing is produced for an endpoint that needs no id
    assert not any(src == "GET_search-person" for src, _ in links)


def test_generic_search_and_me_produce_ids_on_spotify():
    records = load(shared("restbench", "specs", "spotify_oas.json"), format="openapi").records
    links = _links(records)
    by_name = {r.id.split("/", 1)[1]: r for r in records}
    needs_user = [n for n, r in by_name.items() if "{user_id}" in str(r.metadata.get("path"))]
    assert needs_user and all(links.get((n, "get-current-users-profile")) == 1.0 for n in needs_user)
    assert links[("get-an-albums-tracks", "search")] == 0.7  # /search finds ids of every kind


def test_api_and_category_keys_come_from_the_records_own_metadata():
    records = load(shared("livemcpbench", "tools.json")).records
    r = records[0]
    assert api_key(r) == f"{r.namespace}\x1f{r.metadata['server']}"
    assert category_key(r) == f"{r.namespace}\x1f{r.metadata['category']}"


def test_co_use_strength_is_the_cosine_of_the_call_sets():
    sets = [["a", "b"], ["a", "b"], ["a", "c"], ["d"]]
    rel = {(r.source, r.target): r.strength for r in co_use_pairs(sets, min_count=1)}
    assert rel[("a", "b")] == rel[("b", "a")] == round(2 / (3 * 2) ** 0.5, 4)
    assert rel[("a", "c")] == round(1 / 3 ** 0.5, 4)
    assert not any("d" in pair for pair in rel)
    # by default a pair must be called together twice: once says little
    assert {(r.source, r.target) for r in co_use_pairs(sets)} == {("a", "b"), ("b", "a")}


def test_co_use_is_stored_with_the_catalog_on_both_backends(catalog_at):
    from apidb import Catalog

    records = load(shared("restbench", "specs", "tmdb_oas.json"), format="openapi").records
    pairs = co_use_pairs([["tmdb/GET_search-person", "tmdb/GET_person-person_id-movie_credits"]], min_count=1)
    with Catalog(catalog_at) as cat:
        cat.sync(records)
        assert cat.co_use() == []
        assert cat.set_co_use(pairs) == 2
        generation = cat.generation
    with Catalog.open(catalog_at, readonly=True) as cat:
        assert cat.co_use() == pairs
        assert cat.generation == generation  # learning co-use changes no record: no re-index
        with pytest.raises(CatalogError, match="read-only"):
            cat.set_co_use([])
