"""The SQLite catalog: incremental sync, namespaces, atomic writes."""
from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from apidb import ApiRecord, Catalog, CatalogError
from apidb.record import make_id


def rec(ns: str, name: str, desc: str = "d") -> ApiRecord:
    return ApiRecord(id=make_id(ns, name), namespace=ns, name=name, description=desc, source_format="openai")


def test_sync_counts_added_updated_removed_unchanged(tmp_path):
    with Catalog(tmp_path / "c.db") as cat:
        assert cat.sync([rec("a", "x"), rec("a", "y")]).to_dict() == {"added": 2, "updated": 0, "removed": 0, "unchanged": 0}
        report = cat.sync([rec("a", "x", "changed"), rec("a", "z")])
        assert report.to_dict() == {"added": 1, "updated": 1, "removed": 1, "unchanged": 0}
        assert sorted(r.name for r in cat.records("a")) == ["x", "z"]
        assert cat.get("a/x").description == "changed"


def test_same_name_in_two_namespaces_coexist_and_sync_is_per_namespace(tmp_path):
    with Catalog(tmp_path / "c.db") as cat:
        cat.sync([rec("a", "search")])
        cat.sync([rec("b", "search")])
        assert cat.namespaces() == {"a": 1, "b": 1}
        assert cat.remove_namespace("a") == 1
        assert cat.namespaces() == {"b": 1}


def test_failed_sync_leaves_catalog_unchanged(tmp_path):
    path = tmp_path / "c.db"
    with Catalog(path) as cat:
        cat.sync([rec("a", "x")])
    before = path.read_bytes()
    with Catalog(path) as cat:
        with pytest.raises(CatalogError):
            cat.sync([rec("a", "y"), rec("a", "y")])  # duplicate id in one load
    assert path.read_bytes() == before
    # a failure inside the transaction (here: a record sqlite cannot store) rolls back too
    bad = replace(rec("a", "w"), name=None)  # NOT NULL constraint
    with Catalog(path) as cat:
        with pytest.raises(CatalogError):
            cat.sync([rec("a", "q"), bad])
        assert sorted(r.name for r in cat.records()) == ["x"]


def test_not_a_catalog_is_a_clear_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CatalogError, match="not a toolsift catalog"):
        Catalog(junk)
    with pytest.raises(CatalogError, match="no catalog here"):
        Catalog.open(tmp_path / "missing.db")


def test_record_round_trip_and_hash(tmp_path):
    r = ApiRecord(id="ns/f", namespace="ns", name="f", description="x",
                  parameters={"type": "object", "properties": {"a": {"type": "string"}}},
                  call="f(a='1')", source_format="gorilla", metadata={"domain": "d"})
    with Catalog(tmp_path / "c.db") as cat:
        cat.sync([r])
        back = cat.get("ns/f")
    assert back == r and back.content_hash == r.content_hash
    assert replace(r, description="y").content_hash != r.content_hash
    assert isinstance(sqlite3.sqlite_version, str)
