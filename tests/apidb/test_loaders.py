"""Every loader on the real files in ../shared/data.

Expected counts are computed here from the raw files with plain json, never through
the loader under test.
"""
from __future__ import annotations

import ast
import json
from collections import defaultdict
from pathlib import Path

import pytest

from apidb.loaders import detect, load
from apidb.loaders.common import read_source, slug
from apidb.loaders.openapi import operation_name
from tests.conftest import shared

STB = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction")
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
JSON_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_id(records) -> dict:
    return {r.id: r for r in records}


def ids_unique(records) -> bool:
    return len({r.id for r in records}) == len(records)


# --- detection ------------------------------------------------------------------------------

REAL_FILES = [
    (("gorilla", "api", "torchhub_api.jsonl"), "gorilla"),
    (("gorilla", "api", "tensorflowhub_api.jsonl"), "gorilla"),
    (("gorilla", "api", "huggingface_api.jsonl"), "gorilla"),
    *[((("bfcl", f"BFCL_v4_{c}.json")), "bfcl") for c in (
        "simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
        "irrelevance", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
        "live_irrelevance", "live_relevance")],
    *[(("stabletoolbench_solvable", "test_instruction", f"{g}.json"), "toolbench") for g in STB],
    (("restbench", "specs", "tmdb_oas.json"), "openapi"),
    (("restbench", "specs", "spotify_oas.json"), "openapi"),
    (("livemcpbench", "tools.json"), "mcp"),
]


@pytest.mark.parametrize("parts,fmt", REAL_FILES, ids=["/".join(p) for p, _ in REAL_FILES])
def test_detection_picks_the_right_format(parts, fmt):
    path = shared(*parts)
    assert detect(path, read_source(path)) == fmt


@pytest.mark.parametrize("parts", [("bfcl", "possible_answer", "BFCL_v4_simple_python.json"),
                                   ("restbench", "datasets", "tmdb.json"),
                                   ("metatool", "plugin_des.json")])
def test_files_that_are_not_catalogs_are_not_detected(parts):
    from apidb.errors import LoadError

    path = shared(*parts)
    with pytest.raises(LoadError, match="not a known catalog format"):
        detect(path, read_source(path))


# --- gorilla ----------------------------------------------------------------------------------

@pytest.mark.parametrize("hub", ["torchhub", "tensorflowhub", "huggingface"])
def test_gorilla_one_record_per_distinct_api_call(hub):
    path = shared("gorilla", "api", f"{hub}_api.jsonl")
    rows = jsonl(path)
    calls = {r["api_call"].strip() for r in rows}
    res = load(path)
    assert res.format == "gorilla" and res.namespaces == {hub}
    assert len(res.records) == len(calls)
    assert {r.call for r in res.records} == calls
    assert ids_unique(res.records)
    # unparsable upstream calls are kept and flagged, never dropped
    bad = set()
    for c in calls:
        try:
            ast.parse(c, mode="eval")
        except SyntaxError:
            bad.add(c)
    assert {r.call for r in res.records if not r.metadata["call_parses"]} == bad


def test_gorilla_counts_match_the_data_card():
    counts = {hub: len({r["api_call"] for r in jsonl(shared("gorilla", "api", f"{hub}_api.jsonl"))})
              for hub in ("torchhub", "tensorflowhub", "huggingface")}
    assert counts == {"torchhub": 94, "tensorflowhub": 80, "huggingface": 895}


def test_gorilla_tf_hub_duplicates_are_merged():
    path = shared("gorilla", "api", "tensorflowhub_api.jsonl")
    rows = jsonl(path)
    use = "hub.load('https://tfhub.dev/google/universal-sentence-encoder/4')"
    n = sum(r["api_call"] == use for r in rows)
    rec = next(r for r in load(path).records if r.call == use)
    assert rec.metadata["merged_from"] == n > 1


def test_gorilla_spot_check_torchhub_record():
    path = shared("gorilla", "api", "torchhub_api.jsonl")
    raw = next(r for r in jsonl(path) if r["api_name"] == "slow_r50")
    rec = next(r for r in load(path).records if r.name == "slow_r50")
    assert rec.id == "torchhub/slow_r50" and rec.namespace == "torchhub"
    assert rec.call == raw["api_call"] and rec.description == raw["description"]
    assert rec.metadata["domain"] == raw["domain"] and rec.source_format == "gorilla"


# --- openapi ----------------------------------------------------------------------------------

def _operations(spec: dict) -> list[tuple[str, str]]:
    return [(m.upper(), p) for p, item in spec["paths"].items() for m in item if m in HTTP_METHODS]


@pytest.mark.parametrize("api,namespace", [("tmdb", "tmdb"), ("spotify", "spotify_web_api")])
def test_openapi_one_record_per_operation(api, namespace):
    path = shared("restbench", "specs", f"{api}_oas.json")
    spec = json.loads(path.read_text(encoding="utf-8"))
    ops = _operations(spec)
    res = load(path)
    assert res.format == "openapi" and res.namespaces == {namespace}
    assert len(res.records) == len(ops)
    assert sorted((r.metadata["method"], r.metadata["path"]) for r in res.records) == sorted(ops)
    assert ids_unique(res.records)
    for rec in res.records:  # every merged schema is an object whose required args exist
        assert rec.parameters["type"] == "object"
        assert set(rec.parameters.get("required", [])) <= set(rec.parameters["properties"])
        assert "$ref" not in json.dumps(rec.parameters)


def test_openapi_spot_check_tmdb_credits():
    path = shared("restbench", "specs", "tmdb_oas.json")
    op = json.loads(path.read_text(encoding="utf-8"))["paths"]["/movie/{movie_id}/credits"]["get"]
    rec = next(r for r in load(path).records if r.metadata["endpoint"] == "GET /movie/{movie_id}/credits")
    assert rec.name == op["operationId"]
    assert rec.metadata["path"] == "/movie/{movie_id}/credits" and rec.metadata["method"] == "GET"
    assert rec.parameters["properties"]["movie_id"]["type"] == "integer"  # path-level parameter merged in
    assert "movie_id" in rec.parameters["required"]
    assert rec.description.startswith(op["summary"].strip())


def test_openapi_request_body_is_merged_with_parameters():
    path = shared("restbench", "specs", "spotify_oas.json")
    spec = json.loads(path.read_text(encoding="utf-8"))
    op = spec["paths"]["/users/{user_id}/playlists"]["post"]
    body = op["requestBody"]["content"]["application/json"]["schema"]
    rec = next(r for r in load(path).records if r.metadata["endpoint"] == "POST /users/{user_id}/playlists")
    assert rec.name == op["operationId"]
    assert set(rec.parameters["properties"]) == {"user_id"} | set(body["properties"])
    assert set(rec.parameters["required"]) == {"user_id"} | set(body.get("required", []))
    assert rec.metadata["parameter_locations"]["user_id"] == "path"


def test_openapi_without_operation_ids_uses_method_and_path(tmp_path):
    spec = json.loads(shared("restbench", "specs", "tmdb_oas.json").read_text(encoding="utf-8"))
    for item in spec["paths"].values():
        for m, op in item.items():
            if m in HTTP_METHODS:
                op.pop("operationId", None)
    path = tmp_path / "tmdb_oas.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    names = {r.name for r in load(path).records}
    assert "get_movie_movie_id_credits" in names
    assert names == {operation_name(m, p) for m, p in _operations(spec)}


def test_openapi_yaml_gives_the_same_records_as_json(tmp_path):
    import yaml

    src = shared("restbench", "specs", "tmdb_oas.json")
    dst = tmp_path / "tmdb_oas.yaml"
    spec = json.loads(src.read_text(encoding="utf-8"))
    dst.write_text(yaml.dump(spec, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True),
                   encoding="utf-8")
    res = load(dst)
    assert res.format == "openapi"
    assert {r.id: r.content_hash for r in res.records} == {r.id: r.content_hash for r in load(src).records}


SWAGGER2 = """
swagger: "2.0"
info: {title: Pet Store, version: "1"}
paths:
  /pets/{petId}:
    parameters:
      - {name: petId, in: path, required: true, type: integer, description: The pet}
    get:
      summary: Find a pet
      parameters:
        - {name: verbose, in: query, type: boolean}
    put:
      operationId: updatePet
      parameters:
        - in: body
          name: pet
          required: true
          schema: {$ref: "#/definitions/Pet"}
  /pets:
    post:
      consumes: [application/x-www-form-urlencoded]
      parameters:
        - {name: name, in: formData, type: string, required: true}
definitions:
  Pet:
    type: object
    required: [name]
    properties:
      name: {type: string}
      parent: {$ref: "#/definitions/Pet"}
      children: {type: array, items: {$ref: "#/definitions/Pet"}}
"""


def test_swagger2_yaml_with_body_form_data_and_a_ref_cycle(tmp_path):
    path = tmp_path / "petstore.yaml"
    path.write_text(SWAGGER2, encoding="utf-8")
    recs = {r.metadata["endpoint"]: r for r in load(path).records}
    assert set(recs) == {"GET /pets/{petId}", "PUT /pets/{petId}", "POST /pets"}
    get = recs["GET /pets/{petId}"]
    assert get.namespace == "pet_store" and get.name == "get_pets_petId"
    assert get.parameters["properties"]["petId"] == {"type": "integer", "description": "The pet"}
    assert get.parameters["required"] == ["petId"]
    put = recs["PUT /pets/{petId}"]
    assert put.name == "updatePet"
    assert set(put.parameters["properties"]) == {"petId", "name", "parent", "children"}
    assert set(put.parameters["required"]) == {"petId", "name"}
    # the self-reference is cut off with a stub instead of recursing forever
    assert "recursive" in put.parameters["properties"]["parent"]["description"]
    assert "recursive" in put.parameters["properties"]["children"]["items"]["description"]
    assert recs["POST /pets"].parameters["required"] == ["name"]


# --- mcp ----------------------------------------------------------------------------------------

def test_livemcpbench_one_namespace_per_server():
    path = shared("livemcpbench", "tools.json")
    servers = json.loads(path.read_text(encoding="utf-8"))
    per_key = {key: [t["name"] for t in block["tools"]] for s in servers for key, block in s["tools"].items()}
    res = load(path)
    assert res.format == "mcp"
    assert len(res.records) == sum(len(v) for v in per_key.values())
    assert len(res.namespaces) == len(per_key)
    assert ids_unique(res.records)
    counts = defaultdict(int)
    for r in res.records:
        counts[r.metadata["server_key"]] += 1
    assert dict(counts) == {k: len(v) for k, v in per_key.items()}


def test_livemcpbench_spot_check():
    path = shared("livemcpbench", "tools.json")
    servers = json.loads(path.read_text(encoding="utf-8"))
    server = servers[0]
    key, block = next(iter(server["tools"].items()))
    tool = block["tools"][0]
    rec = by_id(load(path).records)[f"{key}/{tool['name']}"]
    assert rec.name == tool["name"] and rec.description == tool["description"].strip()
    assert rec.parameters == tool["inputSchema"]
    assert rec.metadata["category"] == server["category"] and rec.metadata["server"] == block["server_name"]


def test_livemcpbench_namespace_override_keeps_same_name_tools_apart():
    path = shared("livemcpbench", "tools.json")
    servers = json.loads(path.read_text(encoding="utf-8"))
    names = defaultdict(set)
    for s in servers:
        for key, block in s["tools"].items():
            for t in block["tools"]:
                names[t["name"]].add(key)
    shared_names = {n for n, keys in names.items() if len(keys) > 1}
    assert shared_names  # the real file has them (e.g. several servers expose "search")
    res = load(path, namespace="mcp_all")
    assert res.namespaces == {"mcp_all"}
    assert ids_unique(res.records)
    assert len(res.records) == sum(len(b["tools"]) for s in servers for b in s["tools"].values())
    for name in shared_names:  # qualified by server key: ids do not depend on the tools' content
        assert {r.id for r in res.records if r.name == name} == {f"mcp_all/{slug(k)}.{name}" for k in names[name]}
    assert "mcp_all/read_pdf" in by_id(res.records)  # a name only one server has stays short


def test_mcp_tools_list_result_and_jsonrpc_envelope(tmp_path):
    servers = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    block = next(b for s in servers for b in s["tools"].values() if len(b["tools"]) > 3)
    plain, wrapped = tmp_path / "weather.json", tmp_path / "wrapped.json"
    plain.write_text(json.dumps({"tools": block["tools"]}), encoding="utf-8")
    wrapped.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": block["tools"]}}), encoding="utf-8")
    for path, ns in ((plain, "weather"), (wrapped, "wrapped")):
        res = load(path)
        assert res.format == "mcp" and res.namespaces == {ns}
        assert [r.name for r in res.records] == [t["name"] for t in block["tools"]]


# --- openai -------------------------------------------------------------------------------------

def _real_tools() -> list[dict]:
    """Real tool schemas (LiveMCPBench inputSchemas) written as OpenAI tools."""
    servers = json.loads(shared("livemcpbench", "tools.json").read_text(encoding="utf-8"))
    block = next(b for s in servers for b in s["tools"].values() if len(b["tools"]) >= 5)
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": t["inputSchema"]}} for t in block["tools"]]


@pytest.mark.parametrize("shape", ["list", "tools", "bare"])
def test_openai_tool_shapes(tmp_path, shape):
    tools = _real_tools()
    data = {"list": tools, "tools": {"tools": tools}, "bare": [t["function"] for t in tools]}[shape]
    path = tmp_path / "my_tools.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert detect(path, read_source(path)) == "openai"
    res = load(path)
    assert res.namespaces == {"my_tools"} and len(res.records) == len(tools)
    first = res.records[0]
    assert first.id == f"my_tools/{tools[0]['function']['name']}"
    assert first.parameters == tools[0]["function"]["parameters"]
    original = tools[0] if shape != "bare" else tools[0]["function"]
    assert first.metadata["openai_tool"] == original


def test_records_from_openai_tools_keeps_the_exact_tool_and_rejects_bad_ones():
    from apidb.errors import LoadError
    from apidb.loaders.openai import records_from_openai_tools

    tools = _real_tools()
    recs = records_from_openai_tools(tools, "req")
    assert [r.metadata["openai_tool"] for r in recs] == tools
    assert all(r.source_format == "openai" and r.namespace == "req" for r in recs)
    bad = tools[:1] + [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]
    with pytest.raises(LoadError) as exc:
        records_from_openai_tools(bad, "req")
    assert "<request>" in str(exc.value) and "'f'" in str(exc.value) and "parameters" in str(exc.value)


def test_yaml_only_values_become_json(tmp_path):
    """Dates and integer keys in a YAML spec must not break storing the record."""
    from apidb import Catalog

    path = tmp_path / "dates.yaml"
    path.write_text("openapi: 3.0.0\ninfo: {title: Dates, version: '1'}\npaths:\n  /day:\n    get:\n"
                    "      parameters:\n        - {name: d, in: query, schema: {type: string, example: 2024-01-31}}\n"
                    "      responses: {200: {description: ok}}\n", encoding="utf-8")
    rec = load(path).records[0]
    assert rec.parameters["properties"]["d"]["example"] == "2024-01-31"
    with Catalog(tmp_path / "c.db") as cat:
        assert cat.sync([rec]).added == 1
