"""`toolsift catalog relations` and companions in `toolsift route`, through the installed script."""
from __future__ import annotations

import json

import pytest

from router.training.usage_log import UsageLog
from tests.conftest import shared
from tests.support.cli import toolsift


@pytest.fixture
def tmdb_db(tmp_path):
    db = tmp_path / "tmdb.db"
    r = toolsift("catalog", "add", shared("restbench", "specs", "tmdb_oas.json"), db=db)
    assert r.returncode == 0, r.stderr
    return db


def _relations(db, *args):
    r = toolsift("catalog", "relations", "--json", *args, db=db)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_relations_are_counted_and_co_use_is_learned_from_a_usage_log(tmdb_db, tmp_path):
    before = _relations(tmdb_db)
    assert before["records"] == 54 and before["relations"]["produces_for"] > 50
    assert before["relations"]["co_use"] == 0
    log = UsageLog(tmp_path / "usage.jsonl")  # the writer the proxy uses; contents stay off
    person, credits = ["GET_search-person", "GET_person-person_id-movie_credits"], "GET_movie-movie_id-credits"
    trending = "GET_trending-media_type-time_window"
    for query, calls in [("films by Sofia Coppola", person), ("films by Greta Gerwig", person),
                         ("the Dark Knight's cast", [credits, trending]), ("Oppenheimer's cast", [credits, trending]),
                         ("a trending show", [trending])]:
        for name in calls:
            log.record(source="proxy", query=query, offered=calls, called=name, verdict="valid")
    log.record(source="proxy", query="x", offered=["nope"], called="not_a_catalog_tool", verdict="valid")
    after = _relations(tmdb_db, "--learn-from-log", tmp_path / "usage.jsonl")
    assert after["learned"] == {"lines": 10, "requests": 4, "unknown_tools": 1, "co_use": 4}
    assert after["relations"]["co_use"] == 4
    assert _relations(tmdb_db)["relations"]["co_use"] == 4  # stored with the catalog
    # what was learned routes: the tool used with the credits (no word of the request names it, no
    # structural relation links them) rises, and says whose companion it is
    assert toolsift("index", db=tmdb_db).returncode == 0
    query = "who played in the movie Titanic, the whole cast and crew"

    def ranked():
        r = toolsift("route", query, "-k", "20", "--json", db=tmdb_db)
        assert r.returncode == 0, r.stderr
        return {t["id"]: t for t in json.loads(r.stdout)["tools"]}

    learned = ranked()
    hit = learned["tmdb/GET_trending-media_type-time_window"]
    assert hit["reason"] == "companion" and hit["relation"] == "co_use"
    assert hit["companion_of"] == "tmdb/GET_movie-movie_id-credits" in learned
    UsageLog(tmp_path / "empty.jsonl")
    _relations(tmdb_db, "--learn-from-log", tmp_path / "empty.jsonl")  # learning again replaces
    before = ranked().get("tmdb/GET_trending-media_type-time_window")
    assert before is None or (before["rank"] > hit["rank"] and before["reason"] == "ranked")


def test_a_malformed_usage_log_is_one_error_line_and_nothing_is_stored(tmdb_db, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"v": 2, "called": "x"}\n')
    r = toolsift("catalog", "relations", "--learn-from-log", bad, db=tmdb_db)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert str(bad) in r.stderr and "query_hmac" in r.stderr
    assert _relations(tmdb_db)["relations"]["co_use"] == 0


def test_route_says_whose_companion_a_tool_is(tmdb_db):
    assert toolsift("index", db=tmdb_db).returncode == 0
    r = toolsift("route", "give me the number of movies directed by Sofia Coppola", "-k", "10", db=tmdb_db,
                 terminal=True)
    assert r.returncode == 0, r.stderr
    assert "companion of GET_" in r.stdout


def test_the_fields_an_endpoint_returns_are_stored_and_counted_as_feeds(tmp_path):
    """StableToolBench G2 added through the installed command: each endpoint's returned fields are
    kept with the catalog, and `catalog relations` counts the `feeds` links they make beside the
    produces-for ones read from names (apidb.relations)."""
    from dataclasses import replace

    from apidb import Catalog
    from apidb.loaders import load
    from apidb.relations import producer_links

    src = shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    db = tmp_path / "stb.db"
    r = toolsift("catalog", "add", src, "--format", "toolbench", db=db)
    assert r.returncode == 0, r.stderr
    loaded = load(src, format="toolbench").records
    with Catalog(db) as cat:
        stored = {rec.id: rec for rec in cat.records()}
    assert {rid: rec.metadata.get("output_fields") for rid, rec in stored.items()} == \
        {rec.id: rec.metadata.get("output_fields") for rec in loaded}
    blind = [replace(rec, metadata={k: v for k, v in rec.metadata.items() if k != "output_fields"})
             for rec in loaded]
    assert not [rel for rel in producer_links(blind) if rel.kind == "feeds"]
    counted = _relations(db)["relations"]
    feeds = [rel for rel in producer_links(loaded) if rel.kind == "feeds"]
    assert counted["feeds"] == len(feeds) > 10
    assert counted["produces_for"] == len(producer_links(blind))


def test_a_tool_the_usage_log_keeps_coming_back_to_rises_with_no_anchor(tmdb_db, tmp_path):
    """A tool the log pairs with three others, none of them among the request's first tools: no
    co-use pair links it to an anchor, and the usage log at large (relation ``used``) raises it."""
    hub = "GET_trending-media_type-time_window"
    others = ["GET_network-network_id", "GET_collection-collection_id-images", "GET_tv-tv_id-season-season_number"]
    log = UsageLog(tmp_path / "usage.jsonl")
    for i, other in enumerate(others * 2):
        for name in (other, hub):
            log.record(source="proxy", query=f"request {i}", offered=[other, hub], called=name, verdict="valid")
    query = "who played in the movie Titanic, the whole cast and crew"
    assert toolsift("index", db=tmdb_db).returncode == 0

    def ranked():
        r = toolsift("route", query, "-k", "20", "--json", db=tmdb_db)
        assert r.returncode == 0, r.stderr
        return {t["id"]: t for t in json.loads(r.stdout)["tools"]}

    before = ranked()
    assert not {f"tmdb/{o}" for o in others} & {t for t, v in before.items() if v["rank"] <= 5}
    assert _relations(tmdb_db, "--learn-from-log", tmp_path / "usage.jsonl")["learned"]["co_use"] == 6
    after = ranked()
    hit = after[f"tmdb/{hub}"]
    assert hit["reason"] == "companion" and hit["relation"] == "used" and "companion_of" not in hit
    assert f"tmdb/{hub}" not in before or before[f"tmdb/{hub}"]["rank"] > hit["rank"]
    table = toolsift("route", query, "-k", "20", db=tmdb_db, terminal=True)
    assert table.returncode == 0 and "often used with others" in table.stdout, table.stdout
