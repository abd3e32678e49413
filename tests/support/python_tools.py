"""Real Python functions for the framework tests: BFCL's simple_python function docs written out as
a Python module (``def name(*, arg: type = default) -> dict:`` with a Google-style docstring), and
the same tools as an OpenAI tools JSON file, so both ways of registering one tool set can be compared.

Each function returns what it was called with (``{"tool": name, "arguments": {...}}``): an agent's
run then shows which tools it really executed. Skips without the shared BFCL data.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from tests.conftest import shared

_TYPES = {"integer": "int", "float": "float", "number": "float", "string": "str", "boolean": "bool",
          "dict": "dict", "object": "dict", "any": "Any", "tuple": "list", "array": "list"}
_JSON_TYPES = {"integer": "integer", "float": "number", "number": "number", "string": "string",
               "boolean": "boolean", "dict": "object", "object": "object", "tuple": "array", "array": "array"}


@dataclass(frozen=True)
class PythonToolSet:
    module: ModuleType          # the generated module
    functions: list             # its functions, in file order
    tools_json: Path            # the same tools as an OpenAI tools file
    queries: list[dict]         # {"id", "query", "relevant": [function name]} (BFCL's own questions)


def _one_line(text: str) -> str:
    return " ".join(str(text or "").split())


def _py_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _annotation(spec: dict) -> str:
    kind = spec.get("type", "any")
    if isinstance(spec.get("enum"), list) and spec["enum"] and all(isinstance(e, str) for e in spec["enum"]):
        return "Literal[" + ", ".join(repr(e) for e in spec["enum"]) + "]"
    if kind in ("array", "tuple") and isinstance(spec.get("items"), dict):
        return f"list[{_annotation(spec['items'])}]"
    return _TYPES.get(kind, "Any")


def _json_spec(spec: dict, description: bool = True) -> dict:
    out: dict = {}
    kind = spec.get("type", "any")
    if kind in _JSON_TYPES:
        out["type"] = _JSON_TYPES[kind]
    if description and _one_line(spec.get("description")):
        out["description"] = _one_line(spec["description"])
    if isinstance(spec.get("enum"), list) and all(isinstance(e, str) for e in spec["enum"]):
        out["enum"] = list(spec["enum"])
    if kind in ("array", "tuple") and isinstance(spec.get("items"), dict):
        out["items"] = _json_spec(spec["items"], description=False)
    return out


def _usable(fn: dict) -> bool:
    props = (fn.get("parameters") or {}).get("properties") or {}
    # a leading underscore is legal Python, but LlamaIndex cannot make a FunctionTool of it (a Pydantic field)
    return all(p.isidentifier() and not keyword.iskeyword(p) and not p.startswith("_") and isinstance(s, dict)
               for p, s in props.items())


def _source(fn: dict) -> str:
    name = _py_name(fn["name"])
    params = fn.get("parameters") or {}
    props, required = params.get("properties") or {}, set(params.get("required") or [])
    args = [f"{p}: {_annotation(s)}" + ("" if p in required else " = None") for p, s in props.items()]
    doc = [_one_line(fn.get("description"))]
    described = [(p, _one_line(s.get("description"))) for p, s in props.items() if _one_line(s.get("description"))]
    if described:
        doc += ["", "Args:"] + [f"    {p}: {d}" for p, d in described]
    body = "\n    ".join(doc).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    sig = ", ".join(["*"] + args) if args else ""
    return (f"def {name}({sig}) -> dict:\n    \"\"\"{body}\n    \"\"\"\n"
            f"    return {{\"tool\": {name!r}, \"arguments\": {{k: v for k, v in locals().items()}}}}\n")


@functools.lru_cache(maxsize=4)
def bfcl_python_tools(folder: str, limit: int | None = None) -> PythonToolSet:
    """BFCL simple_python's functions (unique names, usable parameter names) as a module in ``folder``."""
    path = shared("bfcl", "BFCL_v4_simple_python.json")
    seen: dict[str, dict] = {}
    queries: list[dict] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        fn = row["function"][0]
        name = _py_name(fn["name"])
        if not _usable(fn) or (name in seen and seen[name] != fn):
            continue
        if limit is not None and name not in seen and len(seen) >= limit:
            continue
        seen[name] = fn
        queries.append({"id": row["id"], "query": row["question"][0][-1]["content"], "relevant": [name]})
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    mod_name = "bfcl_tools"  # importable as bfcl_tools:TOOLS from ``folder``
    src = "from typing import Any, Literal\n\n\n" + "\n\n".join(_source(fn) for fn in seen.values()) \
        + "\n\nTOOLS = [" + ", ".join(seen) + "]\n"
    (out / f"{mod_name}.py").write_text(src, encoding="utf-8")
    tools = []
    for fn in seen.values():
        params = fn.get("parameters") or {}
        props = {p: _json_spec(s) for p, s in (params.get("properties") or {}).items()}
        schema = {"type": "object", "properties": props}
        if params.get("required"):
            schema["required"] = list(params["required"])
        tools.append({"type": "function", "function": {"name": _py_name(fn["name"]),
                                                       "description": _one_line(fn.get("description")),
                                                       "parameters": schema}})
    tools_json = out / "tools.json"
    tools_json.write_text(json.dumps(tools, indent=1), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(mod_name, out / f"{mod_name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not put in sys.modules: each folder's module stands alone
    functions = [getattr(module, name) for name in seen]
    return PythonToolSet(module, functions, tools_json, queries)
