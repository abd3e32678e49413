"""What every loader shares: reading files, reporting bad records, schema checks."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import LoadError
from ..jsonl import JsonLineError, parse_lines
from ..safe_io import UnsafeDocument, format_trail, loads_json, loads_yaml, read_regular_file
from ..record import ApiRecord

_WORD = re.compile(r"[^a-zA-Z0-9_.\-]+")


class Problems:
    """Collects bad records: raises at the first one, or keeps going with ``skip_invalid``."""

    def __init__(self, path: Path | str, skip_invalid: bool = False) -> None:
        self.path = str(path)
        self.skip_invalid = skip_invalid
        self.skipped: list[LoadError] = []

    def invalid(self, message: str, *, record: str | int | None = None, field: str | None = None) -> None:
        err = LoadError(self.path, message, record=record, field=field)
        if not self.skip_invalid:
            raise err
        self.skipped.append(err)

    def fatal(self, message: str, *, record: str | int | None = None, field: str | None = None) -> LoadError:
        return LoadError(self.path, message, record=record, field=field)


@dataclass
class LoadResult:
    path: str
    format: str
    records: list[ApiRecord]
    skipped: list[LoadError] = field(default_factory=list)
    namespaces: set[str] = field(default_factory=set)


def read_source(path: Path) -> Any:
    """Parse a JSON, JSON Lines or YAML file; a bad file is a one-line LoadError.

    ``.json`` files that hold one object per line (BFCL ships those) are read as JSON Lines.
    Only regular files within the size limit are read, and every document is checked
    against the limits of `apidb.safe_io` (nesting, alias expansion, integers, Unicode)
    before any loader sees it.
    """
    try:
        raw = read_regular_file(path)
    except OSError as exc:
        raise LoadError(str(path), f"cannot read file ({exc.strerror or exc})") from None
    except ValueError as exc:  # a pipe, a device, or over the size limit
        raise LoadError(str(path), str(exc)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(str(path), f"not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise LoadError(str(path), "file is empty")
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _read_yaml(path, text)
    if suffix == ".jsonl":
        return _read_jsonl(path, text)
    try:
        return loads_json(text)
    except UnsafeDocument as exc:
        raise _unsafe(path, exc) from None
    except json.JSONDecodeError as exc:
        if _looks_like_jsonl(text):
            return _read_jsonl(path, text)
        if suffix != ".json":
            try:
                return _read_yaml(path, text)
            except LoadError:
                pass
        raise LoadError(str(path), f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _unsafe(path: Path, exc: UnsafeDocument, line: int | None = None) -> LoadError:
    """A limit broken somewhere in a document: the record is the first step of the path
    (a list index or a top-level key), the field the rest of it."""
    trail = exc.trail
    record = line - 1 if line is not None else (trail[0] if trail else None)
    field = format_trail(trail if line is not None else trail[1:]) or None
    where = f"line {line}: " if line is not None else (
        f"line {exc.lineno} column {exc.colno}: " if exc.lineno is not None else "")
    return LoadError(str(path), where + exc.reason, record=record, field=field)


def _looks_like_jsonl(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0].strip()
    if not first.startswith("{"):
        return False
    try:
        loads_json(first)
    except (json.JSONDecodeError, UnsafeDocument):
        return False
    return True


def _read_jsonl(path: Path, text: str) -> list[Any]:
    try:
        return [row for _, row in parse_lines(text, strict_unicode=True)]
    except JsonLineError as exc:
        if exc.unsafe is not None:
            raise _unsafe(path, exc.unsafe, exc.lineno) from None
        raise LoadError(str(path), f"malformed JSON on line {exc.lineno} column {exc.colno}: {exc.msg}",
                        record=exc.lineno - 1) from None


def _read_yaml(path: Path, text: str) -> Any:
    import yaml

    try:
        return loads_yaml(text)
    except UnsafeDocument as exc:
        raise _unsafe(path, exc) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        why = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc).splitlines()[0]
        raise LoadError(str(path), f"malformed YAML{where}: {why}") from None


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` is not a JSON Schema for an object of arguments, or None if it is."""
    if not isinstance(schema, dict):
        return f"expected a JSON Schema object, got {type(schema).__name__}"
    kind = schema.get("type", "object")
    if kind != "object":
        return f"expected a schema of type 'object', got type {kind!r}"
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return f"'properties' must be an object, got {type(props).__name__}"
    for pname, pschema in props.items():
        if not isinstance(pschema, dict):
            return f"property {pname!r} must be a schema object, got {type(pschema).__name__}"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "'required' must be a list of property names"
    return None


def tool_fields(tool: dict[str, Any], where: int | str, problems: "Problems", *, schema_key: str,
                prefix: str = "") -> tuple[str, str, Any] | None:
    """(name, description, schema) of an OpenAI function or MCP tool object, or None after
    reporting to ``problems`` what is wrong (the field named with ``prefix``)."""
    name = tool.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.invalid("missing or empty tool name", record=where, field=prefix + "name")
        return None
    name = name.strip()
    desc = tool.get("description")
    if desc is not None and not isinstance(desc, str):
        problems.invalid(f"description must be a string, got {type(desc).__name__}", record=name,
                         field=prefix + "description")
        return None
    schema = tool.get(schema_key)
    why = schema_problem(schema) if schema is not None else None
    if why:
        problems.invalid(why, record=name, field=prefix + schema_key)
        return None
    return name, (desc or "").strip(), schema


def normalize_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Fill the defaults a tool schema may leave out (``type``, ``properties``)."""
    out = dict(schema or {})
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def slug(text: str) -> str:
    """A readable id fragment: spaces and odd characters become '_'."""
    return _WORD.sub("_", text.strip()).strip("_") or "_"


def unique_ids(records: list[ApiRecord], key: Callable[[ApiRecord], str] | None = None) -> list[ApiRecord]:
    """Disambiguate records of one load that would share an id, deterministically.

    Every record of a clashing group gets a suffix hashed from ``key(record)`` (what
    identifies the API in its source, e.g. a Gorilla ``api_call``; default: the content
    hash), so ids depend neither on the order of the source nor, given a key, on edits
    to a description.
    """
    import hashlib
    from collections import Counter
    from dataclasses import replace

    def suffix(rec: ApiRecord) -> str:
        if key is None:
            return rec.content_hash[:8]
        return hashlib.sha256(key(rec).encode("utf-8")).hexdigest()[:8]

    counts = Counter(r.id for r in records)
    return [r if counts[r.id] == 1 else replace(r, id=f"{r.id}~{suffix(r)}") for r in records]


# the keywords of a JSON Schema node: a dict made only of these describes one value, it names no fields
_SCHEMA_WORDS = {"type", "title", "description", "enum", "required", "properties", "items", "default", "format",
                 "nullable", "allowed_values", "example", "examples", "minimum", "maximum", "pattern", "const",
                 "additionalProperties", "anyOf", "oneOf", "allOf", "$ref"}
# the type names of a ToolBench template ({"description": "str"} names a field, it is no schema)
_TEMPLATE_TYPES = {"str", "int", "float", "bool", "NoneType", "list", "dict"}
MAX_OUTPUT_FIELDS = 64
_JSON_KEY = re.compile(r'"([^"\\]{1,64})"\s*:')


def field_names(output: Any, limit: int = MAX_OUTPUT_FIELDS, depth: int = 4) -> list[str]:
    """The field names an output description carries, shallowest first, at most ``limit`` of them
    and ``depth`` levels deep. It may be a JSON Schema (MCP ``outputSchema``: ``properties``,
    ``items``), a name -> schema map (NESTful ``output_parameters``) or an example object (ToolBench
    ``template_response``); what the tool returns is what a later call can take as input."""
    if isinstance(output, str) and output.lstrip()[:1] in ("{", "[") and len(output) <= 200_000:
        try:  # some catalogs hold the example as JSON text
            output = json.loads(output)
        except (ValueError, RecursionError):  # often cut off at a length limit: its keys, in order
            return list(dict.fromkeys(_JSON_KEY.findall(output)))[:limit]
    out: dict[str, None] = {}
    level = [output]
    for _ in range(depth + 1):
        nxt: list[Any] = []
        for node in level:
            if isinstance(node, list):
                nxt.extend(node[:1])  # an example array: its first item stands for the rest
                continue
            if not isinstance(node, dict):
                continue
            template = all(isinstance(v, str) and v in _TEMPLATE_TYPES for v in node.values())
            if not template and set(node) <= _SCHEMA_WORDS and node.keys() & {"type", "description", "properties"}:
                # one schema node: its properties are fields, its items (an array's) are looked into
                props = node.get("properties")
                named = props.items() if isinstance(props, dict) else ()
                if isinstance(node.get("items"), (dict, list)):
                    nxt.append(node["items"])
            else:
                named = node.items()
            for name, sub in named:
                if isinstance(name, str) and name and len(out) < limit:
                    out.setdefault(name, None)
                    nxt.append(sub)
        level = nxt
        if not level or len(out) >= limit:
            break
    return list(out)
