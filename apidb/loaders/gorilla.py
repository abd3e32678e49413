"""Gorilla APIBench API databases (``data/api/*_api.jsonl``).

Duplicates of one ``api_call`` (TF Hub repeats some calls hundreds of times) are
merged into one record that keeps every distinct description and domain.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from ..record import ApiRecord, make_id
from .common import Problems, slug, unique_ids

FORMAT = "gorilla"
_KEYS = {"api_call", "api_name", "domain"}


def sniff(path: Path, data: Any) -> bool:
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and _KEYS <= data[0].keys()


def default_namespace(path: Path) -> str:
    stem = path.stem
    return stem[: -len("_api")] if stem.endswith("_api") else stem


def parse(path: Path, data: Any, namespace: str | None, problems: Problems) -> list[ApiRecord]:
    ns = namespace or default_namespace(path)
    if not isinstance(data, list):
        raise problems.fatal("expected JSON Lines of Gorilla API records")
    groups: dict[str, list[dict[str, Any]]] = {}
    first: dict[str, int] = {}  # line of each call's first occurrence: Gorilla's scorer takes the first match
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            problems.invalid(f"expected an object, got {type(row).__name__}", record=i)
            continue
        call = row.get("api_call")
        if not isinstance(call, str) or not call.strip():
            problems.invalid("missing or empty api_call", record=i, field="api_call")
            continue
        if not isinstance(row.get("api_name"), str) or not row["api_name"].strip():
            problems.invalid("missing or empty api_name", record=i, field="api_name")
            continue
        groups.setdefault(call.strip(), []).append(row)
        first.setdefault(call.strip(), i)
    records = [_merge(ns, call, rows, first[call]) for call, rows in groups.items()]
    return unique_ids(records, key=lambda r: r.call or "")


def _distinct(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for v in values:
        if v not in seen and v not in (None, "", [], {}):
            seen.append(v)
    return seen


def _merge(ns: str, call: str, rows: list[dict[str, Any]], source_index: int) -> ApiRecord:
    first = rows[0]
    descriptions = _distinct([r.get("description") for r in rows])
    domains = _distinct([r.get("domain") for r in rows])
    metadata: dict[str, Any] = {
        "domain": first.get("domain"),
        "framework": first.get("framework"),
        "functionality": first.get("functionality"),
        "api_arguments": first.get("api_arguments"),
        "performance": first.get("performance"),
        "merged_from": len(rows),
        "call_parses": _parses(call),
        "source_index": source_index,
    }
    if len(domains) > 1:
        metadata["domains"] = domains
    if len(descriptions) > 1:
        metadata["descriptions"] = descriptions
    return ApiRecord(
        id=make_id(ns, slug(first["api_name"])),
        namespace=ns,
        name=first["api_name"].strip(),
        description=str(descriptions[0]) if descriptions else "",
        parameters=_arguments_schema(first.get("api_arguments")),
        call=call,
        source_format=FORMAT,
        metadata=metadata,
    )


def _parses(call: str) -> bool:
    """Whether the call is valid Python; some upstream calls are not (unquoted ids)."""
    try:
        ast.parse(call, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True


def _arguments_schema(args: Any) -> dict[str, Any]:
    """APIBench's free-form ``api_arguments`` as a best-effort JSON Schema."""
    props: dict[str, Any] = {}
    if isinstance(args, dict):
        for key, value in args.items():
            props[str(key)] = {"description": str(value)} if value not in (None, "") else {}
    elif isinstance(args, list):
        for item in args:
            if isinstance(item, str) and item.strip():
                props[item.strip()] = {}
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                props[item["name"]] = {"description": str(item.get("description", ""))}
    return {"type": "object", "properties": props}
