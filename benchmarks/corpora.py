"""Benchmark corpora as `ApiRecord`s, built by the project's own loaders.

The record ids are the labels of the benchmark, and the router indexes the same
records, so every corpus goes through `apidb.loaders.load` when the format's loader
exists. Until a loader lands, a minimal builder here produces records with the same
shape (and the same keys the datasets resolve labels by); the loaded path wins as
soon as the loader module is importable.
"""
from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path
from typing import Any

from apidb.loaders import load
from apidb.loaders.common import slug, unique_ids
from apidb.record import ApiRecord, canonical_json, make_id

_HTTP = ("get", "post", "put", "delete", "patch", "head", "options")


def _root() -> Path:
    from .datasets import data_root

    return data_root()


def _has_loader(fmt: str) -> bool:
    try:
        importlib.import_module(f"apidb.loaders.{fmt}")
    except ModuleNotFoundError:
        return False
    return True


def _read(rel: str) -> Any:
    path = _root() / rel
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl" or (path.suffix == ".json" and text.lstrip().startswith("{") and "\n{" in text):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


@functools.lru_cache(maxsize=None)
def _gorilla(hub: str) -> tuple[ApiRecord, ...]:
    return tuple(load(_root() / f"gorilla/api/{hub}_api.jsonl", format="gorilla").records)


def gorilla(hub: str) -> list[ApiRecord]:
    return list(_gorilla(hub))


# --- ToolBench / StableToolBench ------------------------------------------------------------

def toolbench_key(record: ApiRecord) -> tuple[str, str]:
    """(tool_name, api_name) of a ToolBench endpoint record: what the gold labels name."""
    md = record.metadata
    return (md.get("tool_name") or md.get("tool") or record.namespace, md.get("api_name") or record.name)


@functools.lru_cache(maxsize=None)
def _stabletoolbench(files: tuple[str, ...]) -> tuple[ApiRecord, ...]:
    by_id: dict[str, ApiRecord] = {}
    if _has_loader("toolbench"):
        for rel in files:
            for r in load(_root() / rel, format="toolbench").records:
                by_id.setdefault(r.id, r)
        return tuple(by_id.values())
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for rel in files:
        for q in _read(rel):
            for a in q["api_list"]:
                seen.setdefault((a["category_name"], a["tool_name"], a["api_name"]), a)
    return tuple(unique_ids([_toolbench_record(a) for a in seen.values()]))


def stabletoolbench(files: tuple[str, ...]) -> list[ApiRecord]:
    return list(_stabletoolbench(files))


def _toolbench_record(a: dict[str, Any]) -> ApiRecord:
    props, required = {}, []
    for group in ("required_parameters", "optional_parameters"):
        for p in a.get(group) or []:
            props[p["name"]] = {"type": str(p.get("type", "string")).lower(), "description": p.get("description", "")}
            if group == "required_parameters":
                required.append(p["name"])
    ns = slug(a["tool_name"])
    return ApiRecord(id=make_id(ns, slug(a["api_name"])), namespace=ns, name=a["api_name"],
                     description=a.get("api_description") or "",
                     parameters={"type": "object", "properties": props, "required": required},
                     source_format="toolbench",
                     metadata={"category": a["category_name"], "tool_name": a["tool_name"],
                               "api_name": a["api_name"], "method": a.get("method")})


# --- MetaTool (name -> description only) ------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _metatool() -> tuple[ApiRecord, ...]:
    des = _read("metatool/plugin_des.json")
    return tuple(ApiRecord(id=make_id("metatool", slug(n)), namespace="metatool", name=n, description=d,
                           source_format="metatool") for n, d in des.items())


def metatool() -> list[ApiRecord]:
    return list(_metatool())


# --- OpenAPI (RestBench) ----------------------------------------------------------------------

def openapi_key(record: ApiRecord) -> tuple[str, str]:
    """(METHOD, /path) of an operation record."""
    md = record.metadata
    return (str(md.get("method", "")).upper(), md.get("path", ""))


@functools.lru_cache(maxsize=None)
def _openapi(rel: str, namespace: str) -> tuple[ApiRecord, ...]:
    if _has_loader("openapi"):
        return tuple(load(_root() / rel, format="openapi", namespace=namespace).records)
    spec = _read(rel)
    out = []
    for path, item in spec.get("paths", {}).items():
        for method, op in item.items():
            if method.lower() not in _HTTP:
                continue
            name = op.get("operationId") or f"{method.upper()}_{path}"
            out.append(ApiRecord(id=make_id(namespace, slug(name)), namespace=namespace, name=name,
                                 description=op.get("summary") or op.get("description") or "",
                                 source_format="openapi",
                                 metadata={"method": method.upper(), "path": path}))
    return tuple(unique_ids(out))


def openapi(rel: str, namespace: str) -> list[ApiRecord]:
    return list(_openapi(rel, namespace))


# --- MCP (LiveMCPBench) -------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _mcp(rel: str) -> tuple[ApiRecord, ...]:
    if _has_loader("mcp"):
        return tuple(load(_root() / rel, format="mcp").records)
    out = []
    for server in _read(rel):
        for key, block in (server.get("tools") or {}).items():
            ns = slug(key)
            for t in block.get("tools") or []:
                out.append(ApiRecord(id=make_id(ns, slug(t["name"])), namespace=ns, name=t["name"],
                                     description=t.get("description") or "",
                                     parameters=t.get("inputSchema") or {"type": "object", "properties": {}},
                                     source_format="mcp",
                                     metadata={"server": server.get("name"), "category": server.get("category")}))
    return tuple(unique_ids(out))


def mcp(rel: str) -> list[ApiRecord]:
    return list(_mcp(rel))


# --- Seal-Tools ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _seal_tools() -> tuple[ApiRecord, ...]:
    out = []
    for t in _read("seal_tools/tool.jsonl"):
        props = {k: {"type": v.get("type", "string"), "description": v.get("description", "")}
                 for k, v in (t.get("parameters") or {}).items()}
        out.append(ApiRecord(id=make_id("seal_tools", slug(t["api_name"])), namespace="seal_tools",
                             name=t["api_name"], description=t.get("api_description") or "",
                             parameters={"type": "object", "properties": props, "required": t.get("required") or []},
                             source_format="seal_tools", metadata={"field": t.get("field")}))
    return tuple(out)


def seal_tools() -> list[ApiRecord]:
    return list(_seal_tools())


# --- BFCL ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _bfcl(rel: str) -> tuple[tuple[ApiRecord, ...], dict[tuple[str, str], str]]:
    """Records of every function doc in a BFCL question file, exact duplicates merged,
    and (entry id, function name) -> record id for label resolution."""
    if _has_loader("bfcl"):
        recs = load(_root() / rel, format="bfcl").records
        where = {(e, r.name): r.id for r in recs for e in r.metadata.get("entries", [])}
        return tuple(recs), where
    docs: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for row in _read(rel):
        for f in row["function"]:
            docs.setdefault(canonical_json(f), (f, []))[1].append(row["id"])
    ns = Path(rel).stem
    out = []
    for f, entries in docs.values():
        params = dict(f.get("parameters") or {})
        if params.get("type") == "dict":
            params["type"] = "object"
        out.append(ApiRecord(id=make_id(ns, slug(f["name"])), namespace=ns, name=f["name"],
                             description=f.get("description") or "", parameters=params,
                             source_format="bfcl", metadata={"entries": entries}))
    recs = unique_ids(out)
    return tuple(recs), {(e, r.name): r.id for r in recs for e in r.metadata["entries"]}


def bfcl(rel: str) -> tuple[list[ApiRecord], dict[tuple[str, str], str]]:
    recs, where = _bfcl(rel)
    return list(recs), dict(where)
