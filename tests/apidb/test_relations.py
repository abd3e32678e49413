"""apidb.relations on real catalogs: the producer of an id an endpoint needs, and learned co-use."""
from __future__ import annotations

import pytest

from apidb.errors import CatalogError
from apidb.loaders import load
from apidb.relations import api_key, category_key, co_use_pairs, output_fields, producer_links
from tests.conftest import shared


def _links(records, kind="produces_for"):
    return {(r.source.split("/", 1)[1], r.target.split("/", 1)[1]): r.strength for r in producer_links(records)
            if r.kind == kind}


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


def test_a_field_one_endpoint_returns_and_another_requires_links_them():
    """StableToolBench G2: Instagram Pro's "following" needs a user's ``pk``; its followers listing
    returns users with their ``pk`` (template_response) and takes a username, not a pk."""
    records = load(shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json"),
                   format="toolbench").records
    links = _links(records, "feeds")
    assert links[("Social.Instagram_Pro.Following_by_PK", "Social.Instagram_Pro.Followers_by_username")] == 1.0
    assert len(links) > 10 and set(links) != set(_links(records))  # a kind of its own, not more produces_for
    by_id = {r.id.split("/", 1)[1]: r for r in records}
    for consumer, producer in links:
        c, p = by_id[consumer], by_id[producer]
        assert api_key(c) == api_key(p) and consumer != producer
        fed = output_fields(p) & {n.lower() for n in c.parameters.get("required", [])} - {"id"}
        # a product, not an echo: the producer does not take the field itself
        assert fed and any(f not in {n.lower() for n in p.parameters["properties"]} for f in fed), (consumer, producer)


def test_a_required_parameter_whose_description_names_another_endpoint_is_linked_to_it():
    """Where a parameter's description says which endpoint yields it, by name or path, that endpoint
    produces for its consumer: StableToolBench G2's Airbnb "locale: id item from the Get Languages
    API" (no ``_id`` name for the name rule to read), LiveMCPBench's Context7 "library ID ... retrieved
    from 'resolve-library-id'" and 12306's stations "通过 `get-station-code-by-names` ... 查询得到"."""
    g2 = _links(load(shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json"),
                     format="toolbench").records)
    assert g2[("Travel.Airbnb_Search.Property_Details", "Travel.Airbnb_Search.Get_Languages")] == 1.0
    assert g2[("Travel.Airbnb_Search.Search_Property_By_GEO", "Travel.Airbnb_Search.Get_Languages")] == 1.0
    records = load(shared("livemcpbench", "tools.json")).records
    mcp = {(r.source, r.target): r.strength for r in producer_links(records) if r.kind == "produces_for"}
    assert mcp[("Context7/get-library-docs", "Context7/resolve-library-id")] == 1.0
    assert mcp[("12306-mcp/get-tickets", "12306-mcp/get-station-code-by-names")] == 1.0
    assert mcp[("12306-mcp/get-tickets", "12306-mcp/get-current-date")] == 1.0  # "first call `get-current-date`"
    # a tool of another server named in a description is not linked, nor a tool to itself
    key = {r.id: api_key(r) for r in records}
    assert all(key[a] == key[b] and a != b for a, b in mcp)
    # a list in a description is not a path ("album, track" is not /albums/{id}/tracks), and "the
    # last artist ID" names the thing, not the endpoint /artists/{id}
    spotify = _links(load(shared("restbench", "specs", "spotify_oas.json"), format="openapi").records)
    assert ("search", "get-an-albums-tracks") not in spotify and ("get-followed", "get-an-artist") not in spotify


def test_output_fields_come_from_the_loaders_list_or_an_mcp_output_schema():
    biomcp = next(r for r in load(shared("livemcpbench", "tools.json")).records if r.id == "biomcp/article_searcher")
    assert "output_fields" not in biomcp.metadata and output_fields(biomcp) == {"result"}
    records = load(shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json"),
                   format="toolbench").records
    assert all(output_fields(r) == {f.lower() for f in r.metadata.get("output_fields", [])} for r in records)
    # a bare ``id`` says nothing of what it names: an endpoint that requires only ``id`` is fed by no
    # sibling, though many of them return one
    links = _links(records, "feeds")
    only_id = {r.id.split("/", 1)[1]: r for r in records if r.parameters.get("required") == ["id"]}
    returned = [(c, p) for c, rec in only_id.items() for p in records
                if api_key(p) == api_key(rec) and p.id != rec.id and "id" in output_fields(p)]
    assert len(returned) >= 5
    assert not any(c in only_id for c, _ in links)


def test_an_mcp_tools_output_schema_feeds_another_tools_required_parameter(tmp_path):
    """A ``tools/list`` whose tools declare ``outputSchema`` (MCP 2025-06-18): the field one returns
    and another requires links them; the echo of an input and a bare ``id`` do not."""
    import json

    def tool(name, required, output):
        return {"name": name, "description": name.replace("_", " "),
                "inputSchema": {"type": "object", "properties": {p: {"type": "string"} for p in required},
                                "required": required},
                "outputSchema": {"type": "object", "properties": output}}

    listing = {"tools": [
        tool("departures_board", ["origin"], {"flights": {"type": "array", "items": {
            "type": "object", "properties": {"flight_id": {"type": "string"}, "origin": {"type": "string"},
                                              "id": {"type": "string"}}}}}),
        tool("book_flight", ["flight_id"], {"booking": {"type": "object", "properties": {"id": {"type": "string"}}}}),
        tool("flights_from", ["origin"], {"count": {"type": "integer"}}),
        tool("cancel", ["id"], {"ok": {"type": "boolean"}})]}
    path = tmp_path / "airline.json"
    path.write_text(json.dumps(listing), encoding="utf-8")
    records = load(path, format="mcp").records
    assert output_fields(records[0]) == {"flights", "flight_id", "origin", "id"}
    # the departures board's name says nothing of flights: the link comes from what it returns
    assert set(_links(records, "feeds")) == {("book_flight", "departures_board")} and not _links(records)


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
