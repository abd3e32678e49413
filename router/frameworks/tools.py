"""Python functions and framework tool objects as catalog records.

A tool here is whatever an agent framework runs: a plain Python callable (name, docstring,
type-hinted parameters), a Pydantic model class (its fields are the arguments, as with OpenAI's
``pydantic_function_tool``), an OpenAI-style tool dict, or a framework's own tool object —
LangChain ``BaseTool`` / ``StructuredTool``, LlamaIndex ``FunctionTool``, OpenAI Agents SDK
``FunctionTool``, MCP ``Tool``. Each becomes one `ApiRecord` the router ranks like any catalog
record; the frameworks are recognised by their attributes, so this module imports none of them.
"""
from __future__ import annotations

import inspect
import re
from typing import Any, Callable

from apidb.record import EMPTY_SCHEMA, ApiRecord, make_id

from .errors import FrameworkError

__all__ = ["SOURCE_FORMATS", "describe", "tool_record"]

# source_format of a record, by the kind of object it was made from
SOURCE_FORMATS = ("python", "pydantic", "openai", "langchain", "llamaindex", "openai-agents", "mcp")

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")  # Returns:, Raises:, Example: ... end the Args section
_GOOGLE_ARG = re.compile(r"^\s*\*{0,2}(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ARG = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
# arguments a framework passes itself, never the model (LangChain's callbacks, a run config)
_INJECTED = frozenset({"self", "cls", "run_manager", "callbacks", "config"})


def _doc_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """(the description, {argument: its description}) from a Google- or Sphinx-style docstring."""
    summary: list[str] = []
    args: dict[str, str] = {}
    section, current, indent = "summary", None, None
    for line in inspect.cleandoc(doc or "").splitlines():
        depth = len(line) - len(line.lstrip())
        if _ARGS_HEADER.match(line):
            section, current, indent = "args", None, None
        elif (m := _SPHINX_ARG.match(line)) is not None:
            section, current = "sphinx", m.group(1)
            args[current] = m.group(2).strip()
        elif not line.strip():
            continue
        elif section in ("summary", "args") and _SECTION.match(line):
            section = "other"
        elif section == "summary":
            summary.append(line)
        elif section == "args":
            indent = depth if indent is None else indent
            m = _GOOGLE_ARG.match(line)
            if m and depth <= indent:  # a new argument; deeper lines continue the current one
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current:
                args[current] = (args[current] + " " + line.strip()).strip()
        elif section == "sphinx" and current and depth > 0:
            args[current] += " " + line.strip()
        elif section == "sphinx":
            section = "other"
    return "\n".join(summary).strip(), args


def _strip_titles(schema: Any) -> Any:
    """Pydantic's generated ``title`` keys removed (they repeat the names; a hand-written schema
    has none, so the same tool ranks the same whether it came from a function or from JSON)."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "title" and isinstance(v, str):
                continue
            out[k] = {name: _strip_titles(p) for name, p in v.items()} if k in ("properties", "$defs") \
                and isinstance(v, dict) else _strip_titles(v)
        return out
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's ``$ref``s to its own ``$defs`` replaced by the definitions (a recursive model keeps
    its ``$ref`` and ``$defs``): hand-written tool schemas nest objects inline, and the router reads a
    nested object's field names only when they sit under the parameter (router.text)."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict):
        return schema
    unresolved = False

    def walk(node: Any, seen: tuple[str, ...]) -> Any:
        nonlocal unresolved
        if isinstance(node, list):
            return [walk(v, seen) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            if name in defs and name not in seen:
                extra = {k: v for k, v in node.items() if k != "$ref"}  # e.g. the argument's description
                return {**walk(defs[name], seen + (name,)), **extra}
            unresolved = True
            return node
        return {k: walk(v, seen) for k, v in node.items() if k != "$defs"}

    out = walk(schema, ())
    if unresolved:
        out["$defs"] = defs
    return out


def function_schema(fn: Callable[..., Any], arg_docs: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON Schema of a callable's arguments, from its signature and type hints (via Pydantic)."""
    import pydantic

    try:
        sig = inspect.signature(fn)
        hints = _type_hints(fn)
    except (TypeError, ValueError, NameError) as exc:
        raise FrameworkError(f"tool {_name_of(fn)!r}: cannot read its signature ({exc})") from None
    fields: dict[str, Any] = {}
    for name, p in sig.parameters.items():
        if name in _INJECTED or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = hints.get(name, Any)
        desc = (arg_docs or {}).get(name)
        default = ... if p.default is p.empty else p.default
        # keyed by position, named by alias: a parameter may be called `_id` or `schema`, which a
        # Pydantic field may not
        fields[f"f{len(fields)}"] = (ann, pydantic.Field(default, alias=name, description=desc))
    try:
        model = pydantic.create_model(f"{_name_of(fn)}_arguments", **fields)
        schema = model.model_json_schema()
    except Exception as exc:  # an annotation Pydantic cannot turn into a schema
        raise FrameworkError(f"tool {_name_of(fn)!r}: its parameters have no JSON Schema ({exc})") from None
    schema = _inline_refs(_strip_titles(schema))
    schema.setdefault("properties", {})
    return schema


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    import typing

    target = fn.__call__ if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and callable(fn) else fn
    return typing.get_type_hints(target, include_extras=True)


def _name_of(obj: Any) -> str:
    return getattr(obj, "__name__", None) or type(obj).__name__


def _is_pydantic_model(obj: Any) -> bool:
    return inspect.isclass(obj) and hasattr(obj, "model_json_schema") and hasattr(obj, "model_fields")


def describe(tool: Any) -> tuple[str, str, dict[str, Any], str]:
    """(name, description, JSON Schema of the arguments, source format) of any supported tool."""
    if isinstance(tool, dict):
        fn = tool.get("function") if tool.get("type", "function") == "function" else None
        fn = fn if isinstance(fn, dict) else tool  # {"name", "description", "parameters"} bare too
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise FrameworkError("a tool dict needs a 'name' (OpenAI shape: {'type': 'function', "
                                 "'function': {'name': ..., 'description': ..., 'parameters': ...}})")
        return fn["name"], fn.get("description") or "", fn.get("parameters") or dict(EMPTY_SCHEMA), "openai"
    if _is_pydantic_model(tool):
        desc, _ = _doc_parts(tool.__doc__)
        return tool.__name__, desc, _inline_refs(_strip_titles(tool.model_json_schema())), "pydantic"
    meta = getattr(tool, "metadata", None)
    if meta is not None and hasattr(meta, "get_parameters_dict") and hasattr(tool, "call"):  # LlamaIndex
        try:
            params = meta.get_parameters_dict()
        except Exception as exc:  # e.g. a fn_schema Pydantic cannot resolve (string annotations)
            raise FrameworkError(f"tool {meta.name!r}: LlamaIndex cannot build its parameters' schema ({exc})") from None
        return meta.name, meta.description or "", _strip_titles(params), "llamaindex"
    if hasattr(tool, "params_json_schema") and hasattr(tool, "on_invoke_tool"):  # OpenAI Agents SDK
        return tool.name, tool.description or "", tool.params_json_schema or dict(EMPTY_SCHEMA), "openai-agents"
    schema = getattr(tool, "inputSchema", None) or getattr(tool, "input_schema", None)
    if isinstance(schema, dict) and isinstance(getattr(tool, "name", None), str):  # MCP Tool
        return tool.name, getattr(tool, "description", None) or "", schema, "mcp"
    if any(c.__module__.startswith("langchain_core.tools") for c in type(tool).__mro__):  # LangChain BaseTool
        from .extras import require

        convert = require("langchain_core.utils.function_calling").convert_to_openai_tool
        fn = convert(tool)["function"]
        return fn["name"], fn.get("description") or "", fn.get("parameters") or dict(EMPTY_SCHEMA), "langchain"
    if callable(tool) and hasattr(tool, "__name__") or inspect.ismethod(tool):
        desc, arg_docs = _doc_parts(tool.__doc__)
        return tool.__name__, desc, function_schema(tool, arg_docs), "python"
    raise FrameworkError(f"{type(tool).__name__} is not a tool: give a Python function, a Pydantic model, an "
                         "OpenAI tool dict, or a LangChain, LlamaIndex, OpenAI Agents or MCP tool object")


def tool_record(tool: Any, namespace: str = "python") -> ApiRecord:
    """One catalog record for ``tool`` (see the module doc), id ``namespace/name``."""
    name, desc, params, kind = describe(tool)
    if not isinstance(params, dict):
        raise FrameworkError(f"tool {name!r}: its parameters are not a JSON Schema object")
    return ApiRecord(id=make_id(namespace, name), namespace=namespace, name=name, description=desc.strip(),
                     parameters=params, source_format=kind)
