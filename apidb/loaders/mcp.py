"""MCP tool lists: a ``tools/list`` result and the LiveMCPBench many-servers file.

* ``{"tools": [{"name", "description", "inputSchema"}, ...]}`` (also wrapped in a
  JSON-RPC response ``{"result": {...}}``, or a bare list of tools): one namespace,
  the file stem unless ``--namespace`` is given.
* LiveMCPBench ``tools.json``: a list of servers, each with
  ``"tools": {server_key: {"server_name", "tools": [...]}}``: one namespace per
  server key. With ``--namespace`` every server shares it, and a tool name that
  several servers define is qualified with its server key so ids stay unique and
  do not depend on the tools' content.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Callable

from ..record import ApiRecord, make_id
from .common import Problems, normalize_schema, slug, tool_fields, unique_ids

FORMAT = "mcp"


def _is_mcp_tool(item: Any) -> bool:
    return isinstance(item, dict) and "name" in item and "inputSchema" in item


def _tools_list(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("result"), dict):  # JSON-RPC envelope
        data = data["result"]
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        return data["tools"]
    if isinstance(data, list) and data and all(_is_mcp_tool(t) for t in data):
        return data
    return None


def _is_server_list(data: Any) -> bool:
    return (isinstance(data, list) and bool(data) and isinstance(data[0], dict)
            and isinstance(data[0].get("tools"), dict)
            and all(isinstance(v, dict) and isinstance(v.get("tools"), list) for v in data[0]["tools"].values()))


def sniff(path: Path, data: Any) -> bool:
    if _is_server_list(data):
        return True
    tools = _tools_list(data)
    return bool(tools) and any(_is_mcp_tool(t) for t in tools)


def parse(path: Path, data: Any, namespace: str | None, problems: Problems) -> list[ApiRecord]:
    if _is_server_list(data):
        return _parse_servers(data, namespace, problems)
    tools = _tools_list(data)
    if tools is None:
        raise problems.fatal("expected an MCP tools/list result {\"tools\": [...]} or a list of servers")
    ns = namespace or path.stem
    records = [_record(i, tool, ns, slug, {}, problems) for i, tool in enumerate(tools)]
    return unique_ids([r for r in records if r is not None])


def records_from_mcp_tools(server: str, tools: Sequence[dict[str, Any]]) -> tuple[list[ApiRecord], list[str]]:
    """A live server's ``tools/list`` items as records of namespace ``server`` (the MCP gateway's
    case). Invalid tools are skipped, not fatal: returns the records and one line per skipped tool."""
    problems = Problems(f"mcp server {server!r}", skip_invalid=True)
    records = parse(Path(server), {"tools": list(tools)}, server, problems)
    return records, [str(err) for err in problems.skipped]


def _parse_servers(servers: list[Any], namespace: str | None, problems: Problems) -> list[ApiRecord]:
    # (server index, server entry, server key, server block) for every server block
    blocks = []
    for i, server in enumerate(servers):
        if not isinstance(server, dict) or not isinstance(server.get("tools"), dict):
            problems.invalid("expected a server object with a 'tools' mapping", record=i, field="tools")
            continue
        for key, block in server["tools"].items():
            if not isinstance(block, dict) or not isinstance(block.get("tools"), list):
                problems.invalid("expected {server_name, tools: [...]}", record=f"{i}:{key}", field=f"tools.{key}")
                continue
            blocks.append((i, server, key, block))
    clashes: Counter[str] = Counter()
    if namespace:  # names several servers define must be qualified within the one namespace
        for _, _, _, block in blocks:
            # (only string names: anything else is reported as an invalid tool below)
            clashes.update({t["name"] for t in block["tools"] if isinstance(t, dict) and isinstance(t.get("name"), str)})
    records = []
    for i, server, key, block in blocks:
        ns = namespace or slug(key)
        meta = _server_metadata(server, key, block)
        def local(name: str, key: str = key) -> str:
            return f"{slug(key)}.{slug(name)}" if clashes[name] > 1 else slug(name)

        for j, tool in enumerate(block["tools"]):
            rec = _record(f"{key}[{j}]", tool, ns, local, meta, problems)
            if rec is not None:
                records.append(rec)
    return unique_ids(records)


def _server_metadata(server: dict[str, Any], key: str, block: dict[str, Any]) -> dict[str, Any]:
    meta = {
        "server": block.get("server_name") or key,
        "server_key": key,
        "server_title": server.get("name"),
        "server_description": server.get("description"),
        "category": server.get("category"),
        "organization": server.get("organization"),
        "web": server.get("web"),
        "server_version": block.get("version"),
    }
    return {k: v for k, v in meta.items() if v is not None}


def _record(where: int | str, tool: Any, ns: str, local: Callable[[str], str], server_meta: dict[str, Any],
            problems: Problems) -> ApiRecord | None:
    if not isinstance(tool, dict):
        problems.invalid(f"expected a tool object, got {type(tool).__name__}", record=where)
        return None
    fields = tool_fields(tool, where, problems, schema_key="inputSchema")
    if fields is None:
        return None
    name, desc, schema = fields
    meta = dict(server_meta)
    for key, out in (("annotations", "annotations"), ("title", "title"), ("outputSchema", "output_schema")):
        if tool.get(key) is not None:
            meta[out] = tool[key]
    return ApiRecord(
        id=make_id(ns, local(name)),
        namespace=ns,
        name=name,
        description=desc,
        parameters=normalize_schema(schema),
        source_format=FORMAT,
        metadata=meta,
    )
