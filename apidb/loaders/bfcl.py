"""BFCL function docs: question files (JSON Lines of ``{"id", "question", "function"}``)
and plain lists of function docs.

BFCL writes Python-ish and Java/JavaScript type names (``dict``, ``float``, ``tuple``,
``any``, ``String``, ``HashMap``, ``long`` ...); they become JSON Schema types, and each
property whose type changed keeps the original as ``x-bfcl-type``. The same doc repeated
across entries is one record; one name with different docs gets one record per doc.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..record import ApiRecord, canonical_json, make_id
from .common import Problems, schema_problem, slug, unique_ids

FORMAT = "bfcl"

# lower-cased BFCL / Java / JavaScript type name -> JSON Schema type (None: any value)
_TYPES: dict[str, str | None] = {
    "dict": "object", "object": "object", "hashmap": "object", "map": "object", "treemap": "object",
    "float": "number", "double": "number", "number": "number", "bigdecimal": "number",
    "integer": "integer", "int": "integer", "long": "integer", "short": "integer", "byte": "integer",
    "biginteger": "integer",
    "string": "string", "str": "string", "char": "string", "character": "string",
    "boolean": "boolean", "bool": "boolean",
    "array": "array", "list": "array", "tuple": "array", "arraylist": "array", "set": "array",
    "hashset": "array", "linkedlist": "array",
    "null": "null",
    "any": None, "": None,
}


def _is_doc(item: Any) -> bool:
    return isinstance(item, dict) and "name" in item and isinstance(item.get("parameters"), dict)


def _is_entry(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("function"), list) and "question" in item


def sniff(path: Path, data: Any) -> bool:
    if not isinstance(data, list) or not data:
        return False
    if _is_entry(data[0]):
        return True
    # a plain list of docs: BFCL's own marker is the top-level "type": "dict"
    return all(_is_doc(d) for d in data) and any(d["parameters"].get("type") == "dict" for d in data)


def convert_schema(schema: Any) -> Any:
    """A BFCL parameter schema as JSON Schema (a new dict; the input is not modified)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if "type" in out and isinstance(out["type"], str):
        original = out["type"]
        mapped = _TYPES.get(original.strip().lower(), None)
        if mapped is None:
            del out["type"]  # "any", "" or an unknown class name: no constraint
        else:
            out["type"] = mapped
        if mapped != original:
            out["x-bfcl-type"] = original
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: convert_schema(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = convert_schema(out["items"])
    elif isinstance(out.get("items"), list):
        out["items"] = [convert_schema(v) for v in out["items"]]
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = convert_schema(out["additionalProperties"])
    return out


def _language(path: Path) -> str | None:
    stem = path.stem.lower()
    if stem.endswith("javascript"):
        return "javascript"
    if stem.endswith("java"):
        return "java"
    return None


def parse(path: Path, data: Any, namespace: str | None, problems: Problems) -> list[ApiRecord]:
    if not isinstance(data, list):
        raise problems.fatal("expected BFCL question entries (JSON Lines) or a list of function docs")
    ns = namespace or path.stem
    # canonical doc -> (doc, where it was first seen, entry ids it appears in)
    groups: dict[str, tuple[dict[str, Any], str | int, list[str]]] = {}
    for where, field, doc, entry_id in _docs(data, problems):
        label = doc.get("name").strip() if isinstance(doc.get("name"), str) and doc["name"].strip() else None
        if label is None:
            problems.invalid("missing or empty function name", record=where, field=f"{field}name")
            continue
        if not isinstance(doc.get("parameters", {}), dict):
            problems.invalid(schema_problem(doc["parameters"]) or "not a schema", record=label, field=f"{field}parameters")
            continue
        key = canonical_json(doc)
        if key not in groups:
            groups[key] = (doc, label, [])
        if entry_id is not None:
            groups[key][2].append(entry_id)
    records = []
    for doc, label, entries in groups.values():
        rec = _record(ns, label, doc, entries, _language(path), problems)
        if rec is not None:
            records.append(rec)
    return unique_ids(records)


def _docs(data: list[Any], problems: Problems):
    """(record label, field prefix, doc, entry id) for every function doc in the file."""
    for i, item in enumerate(data):
        if _is_entry(item):
            entry_id = str(item.get("id", i))
            for j, doc in enumerate(item["function"]):
                if not isinstance(doc, dict):
                    problems.invalid(f"expected a function doc, got {type(doc).__name__}",
                                     record=entry_id, field=f"function[{j}]")
                    continue
                yield entry_id, f"function[{j}].", doc, entry_id
        elif isinstance(item, dict) and "parameters" in item:  # BFCL docs always carry parameters
            yield i, "", item, None
        else:
            problems.invalid("expected a BFCL entry {id, question, function} or a function doc", record=i)


def _record(ns: str, name: str, doc: dict[str, Any], entries: list[str], language: str | None,
            problems: Problems) -> ApiRecord | None:
    where = f"{entries[0]}:{name}" if entries else name
    params = convert_schema(doc.get("parameters") or {"type": "object", "properties": {}})
    why = schema_problem(params)
    if why:
        problems.invalid(why, record=where, field="parameters")
        return None
    params.setdefault("properties", {})
    desc = doc.get("description")
    meta: dict[str, Any] = {}
    if entries:
        meta["entries"] = entries
    if language:
        meta["language"] = language
    return ApiRecord(id=make_id(ns, slug(name)), namespace=ns, name=name,
                     description=desc.strip() if isinstance(desc, str) else "",
                     parameters=params, source_format=FORMAT, metadata=meta)
