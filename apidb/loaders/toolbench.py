"""ToolBench / StableToolBench RapidAPI endpoints: one record per (category, tool, api).

Accepts query files (a list of queries, each with its candidate ``api_list``; the
``stabletoolbench_solvable/test_instruction/*.json`` shape), a plain list of
``api_list`` entries, and a RapidAPI tool file (``{"tool_name", "api_list": [...]}``).
Endpoints repeated across queries are one record. Every file shares the namespace
``toolbench`` by default, so adding several files at once yields their union.

``name`` is the function name ToolBench models emit: ``<api>_for_<tool>``, each part
lower-cased with other characters turned into ``_`` (a leading digit gets ``get_``, a
reserved word ``is_``), keeping the last 64 characters.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..record import ApiRecord, make_id
from .common import Problems, field_names, schema_problem, slug, unique_ids

FORMAT = "toolbench"
DEFAULT_NAMESPACE = "toolbench"
_RESERVED = {"from", "class", "return", "false", "true", "id", "and"}
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_\u4e00-\u9fa5]")
# RapidAPI parameter type -> JSON Schema fragment
_TYPES: dict[str, dict[str, Any]] = {
    "STRING": {"type": "string"}, "NUMBER": {"type": "number"}, "INTEGER": {"type": "integer"},
    "BOOLEAN": {"type": "boolean"}, "ENUM": {"type": "string"}, "ARRAY": {"type": "array"},
    "OBJECT": {"type": "object"}, "BINARY": {"type": "string", "format": "binary"},
    "FILE": {"type": "string", "format": "binary"}, "GEOPOINT (LATITUDE, LONGITUDE)": {"type": "string"},
    "DATE (YYYY-MM-DD)": {"type": "string", "format": "date"}, "TIME (24-hour HH:MM)": {"type": "string", "format": "time"},
}


def standardize(text: str) -> str:
    """ToolBench's name normalization of one tool or api name."""
    out = re.sub(r"_+", "_", _NOT_NAME.sub("_", text)).lower().strip("_")
    return f"get_{out}" if out[:1].isdigit() else out


def function_name(tool_name: str, api_name: str) -> str:
    api = standardize(api_name)
    api = f"is_{api}" if api in _RESERVED else api
    return f"{api}_for_{standardize(tool_name)}"[-64:]


def _is_api(item: Any) -> bool:
    return isinstance(item, dict) and "tool_name" in item and "api_name" in item


def sniff(path: Path, data: Any) -> bool:
    if isinstance(data, dict):
        return isinstance(data.get("api_list"), list) and "tool_name" in data
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return False
    first = data[0]
    return (isinstance(first.get("api_list"), list) and ("query" in first or "query_id" in first)) or _is_api(first)


def _entries(data: Any, problems: Problems):
    """(record label, api entry) for every endpoint the file lists."""
    if isinstance(data, dict):  # one RapidAPI tool file: entries carry "name", not tool/api names
        for j, api in enumerate(data.get("api_list", [])):
            if isinstance(api, dict):
                api = {"tool_name": data.get("tool_name"), "category_name": data.get("category_name", ""),
                       "api_name": api.get("api_name", api.get("name")), "api_description": api.get("description", ""),
                       **{k: v for k, v in api.items() if k not in ("name", "description")}}
            yield f"api_list[{j}]", api
        return
    if not isinstance(data, list):
        raise problems.fatal("expected a list of ToolBench queries or api_list entries")
    for i, item in enumerate(data):
        if isinstance(item, dict) and isinstance(item.get("api_list"), list):
            qid = item.get("query_id", i)
            for j, api in enumerate(item["api_list"]):
                yield f"query {qid} api_list[{j}]", api
        else:
            yield i, item


def parse(path: Path, data: Any, namespace: str | None, problems: Problems) -> list[ApiRecord]:
    ns = namespace or DEFAULT_NAMESPACE
    seen: dict[tuple[str, str, str], ApiRecord] = {}
    for where, api in _entries(data, problems):
        if not isinstance(api, dict):
            problems.invalid(f"expected an api_list entry, got {type(api).__name__}", record=where)
            continue
        key = _key(where, api, problems)
        if key is None or key in seen:  # the same endpoint listed by another query: one record
            continue
        rec = _record(ns, where, key, api, problems)
        if rec is not None:
            seen[key] = rec
    return unique_ids(list(seen.values()))


def _key(where: Any, api: dict[str, Any], problems: Problems) -> tuple[str, str, str] | None:
    for field in ("tool_name", "api_name"):
        if not isinstance(api.get(field), str) or not api[field].strip():
            problems.invalid(f"missing or empty {field}", record=where, field=field)
            return None
    category = api.get("category_name")
    return (category.strip() if isinstance(category, str) else "", api["tool_name"].strip(), api["api_name"].strip())


def _record(ns: str, where: Any, key: tuple[str, str, str], api: dict[str, Any],
            problems: Problems) -> ApiRecord | None:
    category, tool, api_name = key
    label = f"{tool}/{api_name}"
    schema = _schema(api, label, problems)
    if schema is None:
        return None
    desc = api.get("api_description")
    meta: dict[str, Any] = {"category_name": category, "tool_name": tool, "api_name": api_name,
                            "method": str(api.get("method") or "GET").upper()}
    if api.get("url"):
        meta["url"] = api["url"]
    returns = field_names(api.get("template_response"))
    if returns:  # what the endpoint returns: the fields a later call can take (apidb.relations)
        meta["output_fields"] = returns
    local = ".".join(slug(part) for part in (category or "_", tool, api_name))
    return ApiRecord(id=make_id(ns, local), namespace=ns, name=function_name(tool, api_name),
                     description=desc.strip() if isinstance(desc, str) else "",
                     parameters=schema, source_format=FORMAT, metadata=meta)


def _schema(api: dict[str, Any], label: str, problems: Problems) -> dict[str, Any] | None:
    props: dict[str, Any] = {}
    required: list[str] = []
    for field in ("required_parameters", "optional_parameters"):
        params = api.get(field) or []
        if not isinstance(params, list):
            problems.invalid(f"{field} must be a list, got {type(params).__name__}", record=label, field=field)
            return None
        for j, param in enumerate(params):
            if not isinstance(param, dict) or not isinstance(param.get("name"), str) or not param["name"].strip():
                problems.invalid("parameter without a name", record=label, field=f"{field}[{j}].name")
                return None
            name = param["name"].strip()
            props[name] = _param(param)
            if field == "required_parameters" and name not in required:
                required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    why = schema_problem(schema)
    if why:
        problems.invalid(why, record=label, field="required_parameters")
        return None
    return schema


def _param(param: dict[str, Any]) -> dict[str, Any]:
    original = str(param.get("type") or "")
    prop = dict(_TYPES.get(original.strip().upper(), {}))
    if original:
        prop["x-toolbench-type"] = original
    if isinstance(param.get("description"), str) and param["description"].strip():
        prop["description"] = param["description"].strip()
    if param.get("default") not in (None, ""):  # RapidAPI fills "" for "no example"
        prop["default"] = param["default"]
    return prop
