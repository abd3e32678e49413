"""OpenAPI 3.x and Swagger 2.0 specs (JSON or YAML): one record per operation.

Path-level and operation-level parameters and the JSON request body are merged into
one object schema, the shape a model fills in when it calls the operation. Local
``$ref``s are inlined; a reference cycle is cut off with a stub instead of recursing.
Inlining multiplies: a 4 KB spec whose schemas each refer to the next one eight times
expands to billions of values. So the document gets a budget of values to expand to
(proportional to its own size, see apidb.safe_io) and exceeding it is a LoadError naming
the operation, not minutes of work.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..record import ApiRecord, make_id
from ..safe_io import expansion_budget
from .common import Problems, schema_problem, slug, unique_ids

FORMAT = "openapi"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_GENERIC_TITLES = {"api", "openapi", "swagger", "rest_api", "web_api", "untitled"}
_STEM_SUFFIXES = ("_oas", "-oas", "_openapi", "-openapi", ".openapi", "_swagger", "-swagger", ".swagger")
_MAX_DEPTH = 32  # deep enough for real schemas, shallow enough to stop pathological ones


def sniff(path: Path, data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("paths"), dict)
            and (str(data.get("openapi", "")).startswith("3") or str(data.get("swagger", "")).startswith("2")))


def default_namespace(path: Path, spec: dict[str, Any]) -> str:
    """slug of ``info.title`` unless it says nothing ("API"); else the file stem."""
    info = spec.get("info") if isinstance(spec.get("info"), dict) else {}
    title = slug(str(info.get("title") or "")).lower()
    if title and title != "_" and title not in _GENERIC_TITLES:
        return title
    stem = path.stem
    for suffix in _STEM_SUFFIXES:
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
            break
    return slug(stem).lower()


def operation_name(method: str, path: str) -> str:
    """``GET /movie/{movie_id}/credits`` -> ``get_movie_movie_id_credits``."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", f"{method.lower()}_{path}")).strip("_")


def parse(path: Path, data: Any, namespace: str | None, problems: Problems) -> list[ApiRecord]:
    if not sniff(path, data):
        raise problems.fatal("expected an OpenAPI 3.x or Swagger 2.0 document with 'paths'")
    ns = namespace or default_namespace(path, data)
    resolver = _Resolver(data)
    records = []
    try:
        _operations(data, ns, resolver, problems, records)
    except _OverBudget:
        raise problems.fatal(f"$ref expansion exceeds {resolver.budget:,} values (the budget for a document "
                             f"of this size); the schemas refer to each other too many times",
                             record=resolver.where, field=resolver.field) from None
    return unique_ids(records)


def _operations(data: dict[str, Any], ns: str, resolver: "_Resolver", problems: Problems,
                records: list[ApiRecord]) -> None:
    for api_path, item in data["paths"].items():
        if isinstance(item, dict) and isinstance(item.get("$ref"), str):  # rare: a shared path item
            item = resolver.lookup(item["$ref"]) if item["$ref"].startswith("#/") else None
        if not isinstance(item, dict):
            problems.invalid("path item must be an object", record=api_path)
            continue
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            endpoint = f"{method.upper()} {api_path}"
            if not isinstance(op, dict):
                problems.invalid("operation must be an object", record=endpoint)
                continue
            resolver.where = endpoint
            rec = _operation(ns, api_path, method, op, shared, resolver, problems)
            if rec is not None:
                records.append(rec)


def _operation(ns: str, api_path: str, method: str, op: dict[str, Any], shared: list[Any],
               resolver: "_Resolver", problems: Problems) -> ApiRecord | None:
    endpoint = f"{method.upper()} {api_path}"
    op_id = op.get("operationId")
    name = op_id.strip() if isinstance(op_id, str) and op_id.strip() else operation_name(method, api_path)
    resolver.field = "parameters"
    params = _merge_parameters(shared, op.get("parameters") or [], resolver)
    if isinstance(params, str):
        problems.invalid(params, record=endpoint, field="parameters")
        return None
    schema, locations = _parameters_schema(params)
    resolver.field = "requestBody"
    body = resolver.resolve(op.get("requestBody"))
    body_schema = _request_body_schema(body, resolver)
    if body_schema is not None:
        _merge_body(schema, locations, body_schema, required=bool(body.get("required")))
    why = schema_problem(schema)
    if why:
        problems.invalid(why, record=endpoint, field="parameters")
        return None
    summary = " ".join(str(op.get("summary") or "").split())
    detail = str(op.get("description") or "").strip()
    # summary + description, without repeating a summary the description starts with
    description = detail if summary and detail.startswith(summary) else "\n".join(p for p in (summary, detail) if p)
    meta: dict[str, Any] = {"method": method.upper(), "path": api_path, "endpoint": endpoint,
                            "tags": list(op.get("tags") or []), "summary": summary}
    if isinstance(op_id, str):
        meta["operation_id"] = op_id
    if locations:
        meta["parameter_locations"] = locations
    if op.get("deprecated"):
        meta["deprecated"] = True
    return ApiRecord(id=make_id(ns, slug(name)), namespace=ns, name=name, description=description,
                     parameters=schema, source_format=FORMAT, metadata=meta)


def _merge_parameters(shared: list[Any], own: list[Any], resolver: "_Resolver") -> list[dict[str, Any]] | str:
    """Path-level then operation-level parameters; the operation's win on (name, in)."""
    if not isinstance(shared, list) or not isinstance(own, list):
        return "'parameters' must be a list"
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*shared, *own]:
        param = resolver.resolve(raw)
        if not isinstance(param, dict) or not isinstance(param.get("name"), str):
            return f"parameter without a name: {str(raw)[:80]}"
        merged[(param["name"], str(param.get("in", "query")))] = param
    return list(merged.values())


def _parameters_schema(params: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, str]]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    required: list[str] = []
    locations: dict[str, str] = {}
    for param in params:
        where = str(param.get("in", "query"))
        if where == "body":  # Swagger 2.0 body parameter: its schema is the request body
            body = param.get("schema")
            if isinstance(body, dict):
                _merge_body(schema, locations, body, required=bool(param.get("required")))
            continue
        name = param["name"]
        if name in schema["properties"]:  # same name in two locations: the first keeps it
            continue
        prop = _param_schema(param)
        schema["properties"][name] = prop
        locations[name] = where
        if param.get("required") or where == "path":
            required.append(name)
    if required:
        schema["required"] = required + [r for r in schema.get("required", []) if r not in required]
    return schema, locations


def _param_schema(param: dict[str, Any]) -> dict[str, Any]:
    if isinstance(param.get("schema"), dict):
        prop = dict(param["schema"])
    elif isinstance(param.get("content"), dict) and param["content"]:
        media = next(iter(param["content"].values()))
        prop = dict(media.get("schema") or {}) if isinstance(media, dict) else {}
    else:  # Swagger 2.0 keeps the schema keywords on the parameter itself
        keys = ("type", "format", "items", "enum", "default", "minimum", "maximum", "pattern")
        prop = {k: param[k] for k in keys if k in param}
        if prop.get("type") == "file":
            prop["type"] = "string"
    if param.get("description") and "description" not in prop:
        prop["description"] = str(param["description"]).strip()
    return prop


def _request_body_schema(body: Any, resolver: "_Resolver") -> dict[str, Any] | None:
    if not isinstance(body, dict) or not isinstance(body.get("content"), dict) or not body["content"]:
        return None
    content = body["content"]
    for media in ("application/json", *[m for m in content if m.endswith("+json")],
                  "application/x-www-form-urlencoded", "multipart/form-data"):
        if media in content:
            chosen = content[media]
            break
    else:
        chosen = next(iter(content.values()))
    schema = chosen.get("schema") if isinstance(chosen, dict) else None
    return resolver.resolve(schema) if isinstance(schema, dict) else None


def _merge_body(schema: dict[str, Any], locations: dict[str, str], body: dict[str, Any], required: bool) -> None:
    """An object body's fields become top-level arguments; any other body is ``body``."""
    props = body.get("properties")
    if body.get("type", "object") == "object" and isinstance(props, dict) and props:
        for name, prop in props.items():
            if name not in schema["properties"]:
                schema["properties"][name] = prop
                locations[name] = "body"
        # only fields that did become body arguments (a query parameter of the same name wins)
        body_required = [r for r in body.get("required", []) if isinstance(r, str) and locations.get(r) == "body"]
        schema["required"] = schema.get("required", []) + [r for r in body_required
                                                           if r not in schema.get("required", [])]
        if not schema["required"]:
            del schema["required"]
        return
    schema["properties"].setdefault("body", body)
    locations.setdefault("body", "body")
    if required:
        schema.setdefault("required", []).append("body")


class _OverBudget(Exception):
    """The document's expansion budget ran out (the resolver knows where)."""


def _count(value: Any) -> int:
    n, stack = 0, [value]
    while stack:
        node = stack.pop()
        n += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return n


class _Resolver:
    """Inlines local ``#/...`` references, cutting cycles with a stub, within a budget of
    values for the whole document (the same rule as YAML alias expansion)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.budget = expansion_budget(_count(spec))
        self.left = self.budget
        self.where: str | None = None  # the operation and field being resolved, for the error
        self.field: str | None = None

    def lookup(self, ref: str) -> Any:
        node: Any = self.spec
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def resolve(self, node: Any, stack: tuple[str, ...] = (), depth: int = 0) -> Any:
        self.left -= 1
        if self.left < 0:
            raise _OverBudget()
        if depth > _MAX_DEPTH:
            return {"description": "(schema nested too deeply; truncated)"}
        if isinstance(node, list):
            return [self.resolve(v, stack, depth + 1) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith("#/"):
                return {"description": f"(external reference {ref} not resolved)"}
            if ref in stack:
                return {"type": "object", "description": f"(recursive reference to {ref.rsplit('/', 1)[-1]})"}
            target = self.lookup(ref)
            if target is None:
                return {"description": f"(unresolved reference {ref})"}
            resolved = self.resolve(target, stack + (ref,), depth + 1)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**resolved, **self.resolve(siblings, stack, depth + 1)} if siblings and isinstance(resolved, dict) else resolved
        return {k: self.resolve(v, stack, depth + 1) for k, v in node.items()}
