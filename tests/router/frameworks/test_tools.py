"""Python functions and framework tool objects as catalog records, and the in-memory registry over them."""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Literal

import pydantic
import pytest

from router import text as rtext
from router.frameworks import FrameworkError, MissingExtraError, ToolRegistry, load_registry, tool_record
from tests.support.python_tools import bfcl_python_tools


class Address(pydantic.BaseModel):
    """A postal address to ship to."""

    city: str = pydantic.Field(description="the city")
    country: str = "FR"


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius", *, days: int = 1) -> dict:
    """Current weather and forecast for a city.

    Args:
        city: The city, e.g. Paris.
        unit: The temperature unit,
            celsius or fahrenheit.
        days: How many days of forecast.

    Returns:
        The forecast.
    """
    return {"city": city, "unit": unit, "days": days}


def ship_parcel(to: Address, weight_kg: float, *args, _id: str | None = None, **kwargs) -> str:
    """Ship a parcel.

    :param to: where it goes
    :param weight_kg: its weight
        in kilograms
    :param _id: a tracking id
    :returns: the tracking number
    """
    return "T1"


def test_a_function_becomes_a_record_from_its_name_docstring_and_type_hints():
    rec = tool_record(get_weather)
    assert (rec.id, rec.name, rec.namespace, rec.source_format) == ("python/get_weather", "get_weather", "python",
                                                                      "python")
    assert rec.description == "Current weather and forecast for a city."  # Args and Returns are not the description
    props = rec.parameters["properties"]
    assert list(props) == ["city", "unit", "days"]
    assert props["city"] == {"type": "string", "description": "The city, e.g. Paris."}
    assert props["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert props["unit"]["description"] == "The temperature unit, celsius or fahrenheit."  # continuation line kept
    assert props["days"]["type"] == "integer" and props["days"]["default"] == 1
    assert rec.parameters["required"] == ["city"]
    assert "title" not in rec.parameters and all("title" not in p for p in props.values())


def test_sphinx_docstrings_pydantic_arguments_and_framework_arguments():
    rec = tool_record(ship_parcel)
    props = rec.parameters["properties"]
    # *args / **kwargs are not model arguments; a leading underscore is a legal parameter name
    assert list(props) == ["to", "weight_kg", "_id"]
    assert props["weight_kg"] == {"type": "number", "description": "its weight in kilograms"}
    # the nested model inline, as a hand-written schema has it: the router reads its field names
    assert props["to"]["description"] == "where it goes" and "$defs" not in rec.parameters
    assert props["to"]["properties"]["city"] == {"type": "string", "description": "the city"}
    assert "city" in rtext.record_fields(rec)["params"]
    assert rec.description == "Ship a parcel."


class Folder(pydantic.BaseModel):
    """A folder and its sub-folders."""

    name: str
    children: list["Folder"] = []


def test_a_recursive_model_keeps_its_refs():
    props = tool_record(Folder).parameters["properties"]
    assert props["children"]["items"] == {"$ref": "#/$defs/Folder"}
    assert "Folder" in tool_record(Folder).parameters["$defs"]


def test_a_pydantic_model_and_an_openai_tool_dict_are_tools():
    rec = tool_record(Address)
    assert (rec.name, rec.source_format, rec.description) == ("Address", "pydantic", "A postal address to ship to.")
    assert rec.parameters["required"] == ["city"]
    tool = {"type": "function", "function": {"name": "lookup", "description": "Look up a word.",
                                             "parameters": {"type": "object", "properties": {"w": {"type": "string"}}}}}
    rec = tool_record(tool, namespace="dict")
    assert (rec.id, rec.source_format, rec.parameters["properties"]) == ("dict/lookup", "openai", {"w": {"type": "string"}})


def test_framework_tool_objects_are_tools():
    lc_tools = pytest.importorskip("langchain_core.tools")
    agents = pytest.importorskip("agents")
    from mcp import types as mcp_types

    lc = lc_tools.StructuredTool.from_function(get_weather)
    rec = tool_record(lc)
    assert (rec.name, rec.source_format) == ("get_weather", "langchain")
    assert set(rec.parameters["properties"]) == {"city", "unit", "days"}

    async def run(ctx, args):
        return args

    ag = agents.FunctionTool(name="convert", description="Convert money.", on_invoke_tool=run,
                             params_json_schema={"type": "object", "properties": {"amount": {"type": "number"}}})
    rec = tool_record(ag)
    assert (rec.name, rec.description, rec.source_format) == ("convert", "Convert money.", "openai-agents")

    mt = mcp_types.Tool(name="read_file", description="Read a file.",
                        inputSchema={"type": "object", "properties": {"path": {"type": "string"}}})
    rec = tool_record(mt)
    assert (rec.name, rec.source_format, list(rec.parameters["properties"])) == ("read_file", "mcp", ["path"])


def test_a_llamaindex_function_tool_is_a_tool():
    core_tools = pytest.importorskip("llama_index.core.tools")

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    tool = core_tools.FunctionTool.from_defaults(fn=add)
    rec = tool_record(tool)
    assert (rec.name, rec.source_format) == ("add", "llamaindex")
    assert list(rec.parameters["properties"]) == ["a", "b"] and "Add two numbers." in rec.description
    # a schema LlamaIndex itself cannot build (Literal under `from __future__ import annotations`) is one line
    with pytest.raises(FrameworkError, match="'get_weather': LlamaIndex cannot build"):
        tool_record(core_tools.FunctionTool.from_defaults(fn=get_weather))


def test_what_is_not_a_tool_is_a_clear_error():
    with pytest.raises(FrameworkError, match="int is not a tool"):
        tool_record(42)
    with pytest.raises(FrameworkError, match="needs a 'name'"):
        tool_record({"type": "function", "function": {"description": "x"}})
    with pytest.raises(FrameworkError, match="two tools are named 'get_weather'"):
        ToolRegistry([get_weather, get_weather])
    with pytest.raises(FrameworkError, match="no tools"):
        ToolRegistry([])


def test_the_registry_ranks_with_the_router_and_returns_the_objects():
    reg = ToolRegistry({"weather": get_weather, "ship": ship_parcel, "address": Address}, dense=False)
    assert reg.select("what is the weather in Paris", k=1) == [get_weather]
    assert reg.select_keys("send a parcel of 2 kg", k=1) == ["ship"]
    sel = reg.selections("send a parcel", k=1)[0]
    assert sel.record.id == "python/ship_parcel" and sel.reason == "ranked" and "parcel" in sel.matched_terms
    assert reg.by_key("weather") is get_weather and reg.tool("python/Address") is Address
    # pins come first and do not count against k (Router.select's own rule)
    assert reg.select("what is the weather in Paris", k=1, pinned=["Address"]) == [Address, get_weather]


def test_a_function_ranks_exactly_like_the_same_tool_written_as_json(tmp_path):
    """370 BFCL functions as Python source and as an OpenAI tools file: the router sees the same text."""
    from apidb.loaders import load

    tools = bfcl_python_tools(str(tmp_path))
    assert len(tools.functions) >= 200
    from_json = load(tools.tools_json).records
    reg = ToolRegistry(tools.functions, namespace=from_json[0].namespace)
    assert [r.id for r in reg.records] == [r.id for r in from_json]
    for a, b in zip(reg.records, from_json):
        assert rtext.record_fields(a) == rtext.record_fields(b), a.name
        assert rtext.record_passage(a) == rtext.record_passage(b), a.name
    # and the function the registry hands back is the real one
    fn = reg.by_key("calculate_triangle_area")
    assert fn(base=10, height=5)["arguments"] == {"base": 10, "height": 5, "unit": None}


def test_load_registry_imports_module_attribute(tmp_path, monkeypatch):
    (tmp_path / "my_tools.py").write_text("def add(a: int, b: int) -> int:\n    'Add two numbers.'\n    return a + b\n"
                                          "TOOLS = [add]\nNOT_TOOLS = 'add'\n"
                                          "from router.frameworks import ToolRegistry\n"
                                          "REGISTRY = ToolRegistry(TOOLS, namespace='maths')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_registry("my_tools:TOOLS").records[0].id == "python/add"
    assert load_registry("my_tools:REGISTRY").records[0].id == "maths/add"  # a registry is taken as it is
    for spec, msg in (("my_tools", "MODULE:ATTRIBUTE"), ("no_such_module_x:T", "cannot import"),
                      ("my_tools:MISSING", "no attribute 'MISSING'"), ("my_tools:NOT_TOOLS", "got str")):
        with pytest.raises(FrameworkError, match=msg):
            load_registry(spec)


def test_a_missing_framework_is_one_line_naming_the_extra():
    # the framework's package made unimportable in a fresh interpreter, as if never installed
    code = ("import sys; sys.modules['langgraph_bigtool'] = None\n"
            "from router.frameworks.extras import require\n"
            "try:\n    require('langgraph_bigtool')\n"
            "except ImportError as exc:\n    print(type(exc).__name__, exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("MissingExtraError langgraph_bigtool is not installed"), out
    assert "pip install 'toolsift[langgraph]'" in out and out.count("\n") == 1
    assert issubclass(MissingExtraError, FrameworkError)


def test_a_saved_registry_is_a_catalog_the_command_routes(tmp_path):
    from tests.support.cli import toolsift

    reg = ToolRegistry([get_weather, ship_parcel, Address], namespace="mine", dense=False)
    db = reg.save(tmp_path / "catalog.db")
    proc = toolsift("route", "send a parcel to Lyon", "-k", "1", "--method", "bm25", "--json", db=db)
    assert proc.returncode == 0, proc.stderr
    assert [t["id"] for t in json.loads(proc.stdout)["tools"]] == ["mine/ship_parcel"]
    reg2 = ToolRegistry([get_weather], namespace="mine", dense=False)
    reg2.save(db)  # the namespace now holds exactly the registry's tools
    proc = toolsift("catalog", "list", "--json", db=db)
    assert "mine/ship_parcel" not in proc.stdout and "mine/get_weather" in proc.stdout
