"""OpenAI tool schemas: ``[{"type": "function", "function": {...}}]``, ``{"tools": [...]}``
or bare function objects ``{"name", "description", "parameters"}``.

Each record keeps the exact tool dict it came from under ``metadata["openai_tool"]`` so
the middleware can hand a model back precisely what the client sent.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import LoadError
from ..record import ApiRecord, make_id
from .common import Problems, normalize_schema, slug, tool_fields, unique_ids

FORMAT = "openai"
REQUEST = "<request>"  # the "file" named in errors about tools that came in an HTTP request


def _is_tool(item: Any) -> bool:
    """A Chat Completions tool entry, or a bare function object."""
    if not isinstance(item, dict):
        return False
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        return True
    return "name" in item and ("parameters" in item or "description" in item) and "inputSchema" not in item


def _tool_list(data: Any) -> list[Any] | None:
    """The list of tools a document holds, or None if it is not shaped like one."""
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        return data["tools"]
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and _is_tool(data):  # a single tool on its own
        return [data]
    return None


def sniff(path: Path, data: Any) -> bool:
    tools = _tool_list(data)
    return bool(tools) and all(_is_tool(t) for t in tools)


def parse(path: Path, data: Any, namespace: str | None, problems: Problems) -> list[ApiRecord]:
    tools = _tool_list(data)
    if tools is None:
        raise problems.fatal("expected a list of OpenAI tools, {\"tools\": [...]}, or function objects")
    return _records(tools, namespace or path.stem, problems)


def records_from_openai_tools(tools: list[dict[str, Any]], namespace: str) -> list[ApiRecord]:
    """Records for the ``tools`` of one Chat Completions request (raises LoadError on a bad one)."""
    if not isinstance(tools, list):
        raise LoadError(REQUEST, f"'tools' must be a list, got {type(tools).__name__}", field="tools")
    return _records(tools, namespace, Problems(REQUEST, skip_invalid=False))


def _records(tools: list[Any], ns: str, problems: Problems) -> list[ApiRecord]:
    records = []
    for i, tool in enumerate(tools):
        rec = _record(i, tool, ns, problems)
        if rec is not None:
            records.append(rec)
    return unique_ids(records)


def _record(i: int, tool: Any, ns: str, problems: Problems) -> ApiRecord | None:
    if not isinstance(tool, dict):
        problems.invalid(f"expected a tool object, got {type(tool).__name__}", record=i)
        return None
    if "function" in tool or "type" in tool:
        if tool.get("type", "function") != "function":
            problems.invalid(f"unsupported tool type {tool.get('type')!r} (only 'function')", record=i, field="type")
            return None
        fn, prefix = tool.get("function"), "function."
        if not isinstance(fn, dict):
            problems.invalid("'function' must be an object", record=i, field="function")
            return None
    elif "tools" in tool or "inputSchema" in tool:  # a server or an MCP tool, not a function object
        problems.invalid("not an OpenAI tool or function object (has 'tools' or 'inputSchema')", record=i)
        return None
    else:
        fn, prefix = tool, ""
    fields = tool_fields(fn, i, problems, schema_key="parameters", prefix=prefix)
    if fields is None:
        return None
    label, desc, params = fields
    return ApiRecord(
        id=make_id(ns, slug(label)),
        namespace=ns,
        name=label,
        description=desc,
        parameters=normalize_schema(params),
        source_format=FORMAT,
        metadata={"openai_tool": tool},
    )
