"""Benchmark corpora as `ApiRecord`s, built by the project's own loaders.

The record ids are the labels of the benchmark, and the router indexes the same
records, so every corpus with a loader format (gorilla, toolbench, openapi, mcp, bfcl)
goes through `apidb.loaders.load`: the ids are exactly the ones `toolsift catalog add`
gives. MetaTool (name -> description only) and Seal-Tools have no loader format; their
records are built here with ids ``metatool/<name>`` and ``seal_tools/<api_name>``.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from apidb.loaders import load
from apidb.loaders.common import slug
from apidb.record import ApiRecord, make_id

from .shared_data import data_root, read_jsonl


def _root() -> Path:
    return data_root()


def _cached(fn):
    """Memoize per (data root, arguments): loading is cheap, but 4 datasets share one corpus,
    and a changed TOOLSIFT_SHARED_DATA must not serve another root's records."""
    memo: dict[tuple, Any] = {}

    @functools.wraps(fn)
    def wrapper(*args):
        key = (str(_root()), *args)
        if key not in memo:
            memo[key] = fn(*args)
        return memo[key]

    return wrapper


def _read(rel: str) -> Any:
    path = _root() / rel
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl" or (path.suffix == ".json" and text.lstrip().startswith("{") and "\n{" in text):
        return read_jsonl(path)
    return json.loads(text)


@_cached
def _gorilla(hub: str) -> tuple[ApiRecord, ...]:
    return tuple(load(_root() / f"gorilla/api/{hub}_api.jsonl", format="gorilla").records)


def gorilla(hub: str) -> list[ApiRecord]:
    return list(_gorilla(hub))


# --- ToolBench / StableToolBench ------------------------------------------------------------

def toolbench_key(record: ApiRecord) -> tuple[str, str]:
    """(tool_name, api_name) of a ToolBench endpoint record: what the gold labels name."""
    md = record.metadata
    return (md.get("tool_name") or md.get("tool") or record.namespace, md.get("api_name") or record.name)


@_cached
def _stabletoolbench(files: tuple[str, ...]) -> tuple[ApiRecord, ...]:
    by_id: dict[str, ApiRecord] = {}
    for rel in files:  # every file shares the "toolbench" namespace: the union, one record per endpoint
        for r in load(_root() / rel, format="toolbench").records:
            by_id.setdefault(r.id, r)
    return tuple(by_id.values())


def stabletoolbench(files: tuple[str, ...]) -> list[ApiRecord]:
    return list(_stabletoolbench(files))


# --- MetaTool (name -> description only) ------------------------------------------------------

@_cached
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


@_cached
def _openapi(rel: str, namespace: str) -> tuple[ApiRecord, ...]:
    return tuple(load(_root() / rel, format="openapi", namespace=namespace).records)


def openapi(rel: str, namespace: str) -> list[ApiRecord]:
    return list(_openapi(rel, namespace))


# --- MCP (LiveMCPBench) -------------------------------------------------------------------------

@_cached
def _mcp(rel: str) -> tuple[ApiRecord, ...]:
    return tuple(load(_root() / rel, format="mcp").records)  # one namespace per server key


def mcp(rel: str) -> list[ApiRecord]:
    return list(_mcp(rel))


# --- Seal-Tools ---------------------------------------------------------------------------------

@_cached
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

@_cached
def _bfcl(rel: str) -> tuple[tuple[ApiRecord, ...], dict[tuple[str, str], str]]:
    """Records of every function doc in a BFCL question file (the loader merges exact
    duplicates and lists the entries each doc appears in), and (entry id, function name)
    -> record id for label resolution."""
    recs = load(_root() / rel, format="bfcl").records
    where = {(e, r.name): r.id for r in recs for e in r.metadata.get("entries", [])}
    return tuple(recs), where


def bfcl(rel: str) -> tuple[list[ApiRecord], dict[tuple[str, str], str]]:
    recs, where = _bfcl(rel)
    return list(recs), dict(where)
