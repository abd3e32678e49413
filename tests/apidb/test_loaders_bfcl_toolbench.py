"""The BFCL and ToolBench loaders on the real files in ../shared/data.

Expected counts are computed here from the raw files with plain json, never through
the loader under test.
"""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from apidb.loaders import load
from apidb.loaders.toolbench import function_name
from tests.apidb.test_loaders import JSON_TYPES, STB, ids_unique, jsonl
from tests.conftest import shared


# --- bfcl -------------------------------------------------------------------------------------

@pytest.mark.parametrize("cat", ["simple_python", "simple_java", "simple_javascript", "multiple",
                                 "live_multiple", "live_irrelevance"])
def test_bfcl_one_record_per_distinct_doc(cat):
    path = shared("bfcl", f"BFCL_v4_{cat}.json")
    docs = {json.dumps(d, sort_keys=True) for e in jsonl(path) for d in e["function"]}
    res = load(path)
    assert res.format == "bfcl" and res.namespaces == {f"BFCL_v4_{cat}"}
    assert len(res.records) == len(docs)
    assert ids_unique(res.records)


def _types(schema: dict):
    if "type" in schema:
        yield schema["type"]
    for sub in (schema.get("properties") or {}).values():
        yield from _types(sub)
    if isinstance(schema.get("items"), dict):
        yield from _types(schema["items"])


@pytest.mark.parametrize("cat", ["simple_java", "simple_javascript", "simple_python", "parallel"])
def test_bfcl_types_become_json_schema_and_originals_are_kept(cat):
    path = shared("bfcl", f"BFCL_v4_{cat}.json")
    recs = load(path).records
    assert all(set(_types(r.parameters)) <= JSON_TYPES for r in recs)
    assert all(r.parameters["type"] == "object" and r.parameters["x-bfcl-type"] == "dict" for r in recs)
    raw_types = {p.get("type") for e in jsonl(path) for d in e["function"]
                 for p in d["parameters"].get("properties", {}).values()}
    kept = {p.get("x-bfcl-type", p.get("type")) for r in recs for p in r.parameters["properties"].values()}
    assert raw_types <= kept


def test_bfcl_spot_check_java():
    path = shared("bfcl", "BFCL_v4_simple_java.json")
    entry = jsonl(path)[0]
    doc = entry["function"][0]
    rec = next(r for r in load(path).records if r.name == doc["name"])
    assert "." in rec.name and rec.id == f"BFCL_v4_simple_java/{doc['name']}"
    assert rec.metadata["entries"] == [entry["id"]] and rec.metadata["language"] == "java"
    assert rec.parameters["required"] == doc["parameters"]["required"]
    for pname, p in doc["parameters"]["properties"].items():
        got = rec.parameters["properties"][pname]
        assert got.get("x-bfcl-type", got.get("type")) == p["type"]
        if p["type"] == "any":
            assert "type" not in got


def test_bfcl_same_name_different_docs_get_unique_ids():
    path = shared("bfcl", "BFCL_v4_live_multiple.json")
    variants = defaultdict(set)
    for e in jsonl(path):
        for d in e["function"]:
            variants[d["name"]].add(json.dumps(d, sort_keys=True))
    name, docs = next((n, v) for n, v in variants.items() if len(v) > 1)
    recs = [r for r in load(path).records if r.name == name]
    assert len(recs) == len(docs) and len({r.id for r in recs}) == len(docs)


def test_bfcl_plain_list_of_docs(tmp_path):
    docs = [d for e in jsonl(shared("bfcl", "BFCL_v4_simple_python.json")) for d in e["function"]]
    path = tmp_path / "python_docs.json"
    path.write_text(json.dumps(docs), encoding="utf-8")
    res = load(path)
    assert res.format == "bfcl" and len(res.records) == len({json.dumps(d, sort_keys=True) for d in docs})


# --- toolbench ----------------------------------------------------------------------------------

def _stb_endpoints(group: str) -> set[tuple[str, str, str]]:
    queries = json.loads(shared("stabletoolbench_solvable", "test_instruction", f"{group}.json").read_text(encoding="utf-8"))
    return {(a["category_name"], a["tool_name"], a["api_name"]) for q in queries for a in q["api_list"]}


@pytest.mark.parametrize("group", STB)
def test_toolbench_one_record_per_endpoint(group):
    res = load(shared("stabletoolbench_solvable", "test_instruction", f"{group}.json"))
    assert res.format == "toolbench" and res.namespaces == {"toolbench"}
    assert len(res.records) == len(_stb_endpoints(group))
    assert ids_unique(res.records)


def test_toolbench_union_of_the_four_files_is_2231_endpoints():
    expected = set().union(*(_stb_endpoints(g) for g in STB))
    assert len(expected) == 2231  # README-extra's figure, recomputed
    merged: dict[str, str] = {}
    for g in STB:
        for r in load(shared("stabletoolbench_solvable", "test_instruction", f"{g}.json")).records:
            assert merged.setdefault(r.id, r.content_hash) == r.content_hash  # same endpoint, same record
    assert len(merged) == len(expected)


def test_toolbench_spot_check():
    path = shared("stabletoolbench_solvable", "test_instruction", "G1_instruction.json")
    api = json.loads(path.read_text(encoding="utf-8"))[0]["api_list"][0]
    rec = next(r for r in load(path).records
               if (r.metadata["tool_name"], r.metadata["api_name"]) == (api["tool_name"], api["api_name"]))
    assert rec.name == function_name(api["tool_name"], api["api_name"])
    assert rec.metadata["category_name"] == api["category_name"] and rec.metadata["method"] == api["method"]
    assert rec.description == api["api_description"].strip()
    assert rec.parameters["required"] == [p["name"] for p in api["required_parameters"]]
    for p in api["required_parameters"] + api["optional_parameters"]:
        prop = rec.parameters["properties"][p["name"]]
        assert prop["x-toolbench-type"] == p["type"]
        if p["default"] not in (None, ""):
            assert prop["default"] == p["default"]


def test_toolbench_keeps_the_fields_an_endpoint_returns():
    """``template_response`` (an example of what the endpoint returns) is kept as the field names a
    later call can take (apidb.relations); an endpoint without one says nothing."""
    path = shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    apis: dict[tuple[str, str, str], dict] = {}
    for q in json.loads(path.read_text(encoding="utf-8")):  # an endpoint listed twice: its first listing
        for a in q["api_list"]:
            apis.setdefault((a["category_name"].strip(), a["tool_name"].strip(), a["api_name"].strip()), a)
    records = load(path).records
    with_fields = 0
    for rec in records:
        key = (rec.metadata["category_name"], rec.metadata["tool_name"], rec.metadata["api_name"])
        template = apis[key].get("template_response")
        fields = rec.metadata.get("output_fields")
        if not template:
            assert fields is None
            continue
        with_fields += 1
        assert fields and len(fields) == len(set(fields)) <= 64
        if isinstance(template, dict):  # its own top-level keys come first
            assert fields[:len(template)] == list(template)[:64]
    assert with_fields > len(records) / 2
    followers = next(r for r in records if r.id.endswith("Instagram_Pro.Followers_by_username"))
    assert {"pk", "username", "full_name"} <= set(followers.metadata["output_fields"])  # nested in a list


def test_toolbench_function_names():
    assert function_name("TheClique", "Songkick concert") == "songkick_concert_for_theclique"
    assert function_name("👋 Demo Project", "Get Product") == "get_product_for_demo_project"
    assert function_name("4D Results", "id") == "is_id_for_get_4d_results"
    assert len(function_name("t" * 50, "a" * 50)) == 64
