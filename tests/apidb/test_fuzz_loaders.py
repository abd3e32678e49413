"""Fuzzing the catalog loaders (issue #19): documents shaped like each of the six
formats, with random and hostile contents (deep nesting, over-long integers, lone
surrogates, YAML aliases, $ref cycles and fan-out, raw bytes), written to a real file
and given to `apidb.loaders.load`. Each either loads, and what it loads can be stored in
a catalog, or raises the documented LoadError; never anything else, and never slowly.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apidb import Catalog
from apidb.errors import LoadError
from apidb.loaders import FORMATS, load

SECONDS = 5.0
HUGE, DEEP = "__HUGE_INT__", "__DEEP__"
FUZZ = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

# mostly plain names, so that many documents load; now and then something hostile
name = st.text(alphabet="abcdefghij_-. /", min_size=1, max_size=12)
hostile = st.sampled_from(["", " ", "\ud800", "x\udfffy", "[bold]", "\x1b[2J", HUGE, DEEP, "2020-01-01", "null"])
text = st.one_of(name, name, name, name, name, name, st.text(max_size=20), hostile)
leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text)
value = st.recursive(leaf, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                  st.dictionaries(text, kids, max_size=4)), max_leaves=8)
valid_schema = st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(
    name, st.fixed_dictionaries({"type": st.sampled_from(["string", "integer"])}), max_size=3)})
schema = st.one_of(valid_schema, valid_schema, valid_schema, value, st.fixed_dictionaries(
    {"type": st.sampled_from(["object", "string", "dict", "array"]),
     "properties": st.dictionaries(text, st.one_of(value, st.fixed_dictionaries({"type": text})), max_size=3)},
    optional={"required": st.one_of(value, st.lists(text, max_size=3))}))
ref = st.sampled_from(["#/components/schemas/A", "#/components/schemas/B", "#/nope", "#/", "other.yaml#/x", "#/paths"])
maybe_ref = st.one_of(schema, ref.map(lambda r: {"$ref": r}))


def tool_like(schema_key: str):
    """A tool object: mostly valid (so documents load), sometimes not at all."""
    valid = st.fixed_dictionaries({"name": name, "description": name, schema_key: valid_schema})
    odd = st.fixed_dictionaries({"name": st.one_of(text, value)},
                                optional={"description": st.one_of(text, value), schema_key: schema})
    return st.one_of(valid, valid, odd)


FORMAT_DOCS = {
    "gorilla": st.lists(st.fixed_dictionaries(
        {"api_call": st.one_of(st.just("torch.hub.load('a/b', 'c')"), name.map(lambda n: f"f('{n}')"), text, value),
         "api_name": st.one_of(name, name, name, text, value), "domain": name}, optional={"api_arguments": value}),
        min_size=1, max_size=4),
    "openai": st.builds(lambda tools, wrap: {"tools": tools} if wrap else tools, st.lists(st.one_of(
        tool_like("parameters"), st.fixed_dictionaries({"type": st.just("function"), "function": tool_like("parameters")})),
        max_size=4), st.booleans()),
    "mcp": st.one_of(
        st.fixed_dictionaries({"tools": st.lists(tool_like("inputSchema"), max_size=4)}),
        st.lists(st.fixed_dictionaries({"name": text, "tools": st.dictionaries(  # the LiveMCPBench server list
            name, st.fixed_dictionaries({"server_name": text, "tools": st.lists(tool_like("inputSchema"), max_size=3)}),
            max_size=2)}), min_size=1, max_size=2)),
    "openapi": st.fixed_dictionaries({  # with $refs, and a cycle A -> B -> A
        "openapi": st.sampled_from(["3.0.0", "3.1.0"]), "info": st.fixed_dictionaries({"title": text}),
        "paths": st.dictionaries(st.sampled_from(["/a", "/b/{id}", "/c"]), st.dictionaries(
            st.sampled_from(["get", "post", "get", "post", "parameters", "$ref"]),
            st.one_of(st.fixed_dictionaries({"operationId": name, "parameters": st.lists(st.fixed_dictionaries(
                {"name": name, "in": st.just("query"), "schema": maybe_ref}), max_size=2)}),
                value, st.fixed_dictionaries({}, optional={
                "operationId": text, "parameters": st.lists(st.one_of(
                    ref.map(lambda r: {"$ref": r}),
                    st.fixed_dictionaries({"name": text, "in": text, "schema": maybe_ref})), max_size=3),
                "requestBody": st.fixed_dictionaries({"content": st.fixed_dictionaries(
                    {"application/json": st.fixed_dictionaries({"schema": maybe_ref})})})})), max_size=3),
            max_size=3),
        "components": st.fixed_dictionaries({"schemas": st.fixed_dictionaries(
            {"A": st.one_of(maybe_ref, st.just({"properties": {"x": {"$ref": "#/components/schemas/B"},
                                                               "y": {"$ref": "#/components/schemas/B"}}})),
             "B": st.one_of(maybe_ref, st.just({"properties": {"z": {"$ref": "#/components/schemas/A"}}}))})})}),
    "bfcl": st.lists(st.fixed_dictionaries({"id": st.one_of(name, text), "question": value, "function": st.lists(
        st.one_of(tool_like("parameters"), tool_like("parameters"), value), min_size=1, max_size=3)}),
        min_size=1, max_size=3),
    "toolbench": st.lists(st.fixed_dictionaries({"query": text, "query_id": st.one_of(st.integers(), text),
                                                 "api_list": st.lists(st.fixed_dictionaries(
        {"category_name": text, "tool_name": st.one_of(name, text), "api_name": st.one_of(name, text)},
        optional={"required_parameters": st.one_of(value, st.lists(
            st.fixed_dictionaries({"name": text, "type": text}), max_size=2))}), max_size=3)}), min_size=1, max_size=3),
}
documents = st.one_of(*FORMAT_DOCS.values(), value)

YAML_EXTRAS = ["", "x-alias: &a [1, 2]\nx-again: [*a, *a]\n", "x-self: &s\n  - *s\n",
               "x-lol:\n  a: &a [l,l,l,l,l,l,l,l,l]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
               "  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
               "  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
               "x-big: " + "9" * 5000 + "\n", "? [a, b]\n: c\n", "2020-01-01: date key\n", "x: !!python/object:os.system x\n"]


def render(doc, suffix: str, yaml_extra: str) -> bytes:
    """The document as file bytes; placeholders become the hostile text JSON cannot hold."""
    if suffix in (".yaml", ".yml"):
        import yaml

        try:
            body = yaml.safe_dump(doc, allow_unicode=False) if isinstance(doc, dict) else yaml.safe_dump({"x": doc})
        except yaml.YAMLError:
            body = json.dumps(doc)
        out = body + yaml_extra
    elif suffix == ".jsonl" or (suffix == ".json" and isinstance(doc, list) and len(doc) > 1
                                and isinstance(doc[0], dict)):  # (BFCL ships JSON Lines named .json)
        out = "\n".join(json.dumps(row) for row in doc) if isinstance(doc, list) and doc else json.dumps(doc)
    else:
        out = json.dumps(doc)
    out = out.replace(json.dumps(HUGE), "9" * 5000, 1).replace(json.dumps(DEEP), "[" * 5000 + "]" * 5000, 1)
    return out.encode("utf-8", errors="surrogatepass")


@FUZZ
@given(doc=documents, raw=st.one_of(*[st.none()] * 9, st.binary(max_size=200)),
       suffix=st.sampled_from([".json", ".jsonl", ".yaml", ".yml", ".txt"]), yaml_extra=st.sampled_from(YAML_EXTRAS),
       fmt=st.one_of(st.none(), st.sampled_from(FORMATS)), namespace=st.one_of(st.none(), text),
       skip_invalid=st.booleans())
def test_loaders_load_or_raise_load_error(doc, raw, suffix, yaml_extra, fmt, namespace, skip_invalid):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"source{suffix}"
        path.write_bytes(raw if raw is not None else render(doc, suffix, yaml_extra))
        start = time.perf_counter()
        try:
            result = load(path, format=fmt, namespace=namespace, skip_invalid=skip_invalid)
        except LoadError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(path))
            result = None
        assert time.perf_counter() - start < SECONDS
        if result is not None:
            ids = {r.id for r in result.records}
            if len(ids) == len(result.records):  # (the CLI rejects duplicate ids itself)
                with Catalog(":memory:") as cat:  # what loads can be stored
                    cat.sync(result.records, result.namespaces)
                    assert len(cat) == len(result.records)


@pytest.mark.parametrize("fmt", sorted(FORMAT_DOCS))
def test_fuzz_covers_every_format(fmt):
    """The strategies are not vacuous: documents of each format do load, as that format."""
    loaded = []

    @settings(max_examples=100, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(doc=FORMAT_DOCS[fmt])
    def run(doc):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "source.json"
            path.write_bytes(render(doc, ".json", ""))
            try:
                loaded.append(load(path).format)
            except LoadError:
                pass

    run()
    assert loaded.count(fmt) >= 3, loaded
