"""JSON tool calls (OpenAI / BFCL style) checked against function docs and ground truth.

Every defect is reported; the verdict is the most severe one
(unparsable > hallucinated_tool > hallucinated_param > missing_required >
type_error > enum_violation > wrong_call), else ``correct`` (with ground truth) or
``valid`` (without). Tool names are compared exactly; a near miss is still a
hallucinated tool, with the nearest real names as suggestions.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from apidb.record import ApiRecord

from .budget import OverBudget, admit_calls, deadline
from .suggest import suggest
from .verdict import Defect, Verdict, make, most_severe

# BFCL, Java and JavaScript type names -> the Python types a JSON value may have.
_STR, _INT, _FLOAT, _BOOL, _LIST, _DICT = "string", "integer", "float", "boolean", "array", "dict"
TYPE_NAMES: dict[str, str] = {
    "string": _STR, "str": _STR, "char": _STR, "character": _STR,
    "integer": _INT, "int": _INT, "long": _INT, "short": _INT, "byte": _INT, "bigint": _INT,
    "float": _FLOAT, "double": _FLOAT, "number": _FLOAT, "decimal": _FLOAT,
    "boolean": _BOOL, "bool": _BOOL,
    "array": _LIST, "list": _LIST, "arraylist": _LIST, "tuple": _LIST, "set": _LIST,
    "dict": _DICT, "object": _DICT, "hashmap": _DICT, "map": _DICT, "dictionary": _DICT,
}
_OPENAI_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_BFCL_STRIP = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]


def openai_name(name: str) -> str:
    """The form a dotted function name takes under OpenAI's name rules (BFCL does the same)."""
    return _OPENAI_NAME.sub("_", name)


# -- input normalization ---------------------------------------------------------------
def _function_docs(functions: Any) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """name -> function doc (also under its OpenAI-safe spelling); name -> record id."""
    docs: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = {}
    if functions is None:
        return docs, ids
    if isinstance(functions, (dict, ApiRecord)):
        functions = [functions]
    if not isinstance(functions, (list, tuple)):
        functions = []  # not function docs at all: no tool exists
    for fn in functions:
        if isinstance(fn, ApiRecord):
            doc = {"name": fn.name, "parameters": fn.parameters, "description": fn.description}
            ids[fn.name] = ids[fn.openai_name()] = fn.id
        elif isinstance(fn, dict):
            doc = fn.get("function") if isinstance(fn.get("function"), dict) else fn
        else:
            continue
        name = doc.get("name")
        if isinstance(name, str) and name:
            docs[name] = doc
    for name, doc in list(docs.items()):
        docs.setdefault(openai_name(name), doc)
    return docs, ids


def _calls(calls: Any) -> tuple[list[ParsedCall | None], list[Defect]]:
    """Model calls in any accepted shape; an undecodable call is None plus a defect."""
    defects: list[Defect] = []
    if isinstance(calls, (bytes, bytearray)):
        calls = bytes(calls).decode("utf-8", errors="replace")
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except json.JSONDecodeError as exc:
            return [None], [Defect("unparsable", f"calls are not JSON ({exc.msg} at column {exc.colno})")]
    if isinstance(calls, dict) and isinstance(calls.get("tool_calls"), list):
        calls = calls["tool_calls"]  # an assistant message
    if isinstance(calls, dict):
        calls = [calls]
    if not isinstance(calls, list):
        return [None], [Defect("unparsable", f"expected a list of calls, got {type(calls).__name__}")]
    out: list[ParsedCall | None] = []
    for i, item in enumerate(calls):
        parsed, why = _one_call(item)
        if parsed is None:
            defects.append(Defect("unparsable", why, call_index=i))
        out.append(parsed)
    return out, defects


def _one_call(item: Any) -> tuple[ParsedCall | None, str]:
    if not isinstance(item, dict):
        return None, f"a call must be an object, got {type(item).__name__}"
    if isinstance(item.get("function"), dict):
        item = item["function"]  # OpenAI tool_calls item
    if "name" in item:
        name, args = item.get("name"), item.get("arguments", item.get("parameters", {}))
    elif len(item) == 1:  # BFCL's decoded form {func_name: {param: value}}
        name, args = next(iter(item.items()))
    else:
        return None, "a call needs a 'name' and 'arguments'"
    if not isinstance(name, str) or not name:
        return None, "the call's name is not a non-empty string"
    if isinstance(args, str):
        if not args.strip():
            args = {}
        else:
            try:
                args = json.loads(args)
            except json.JSONDecodeError as exc:
                return None, f"arguments of {name!r} are not JSON ({exc.msg} at column {exc.colno})"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, f"arguments of {name!r} are not a JSON object (got {type(args).__name__})"
    return ParsedCall(name, args), ""


# -- schema checks --------------------------------------------------------------------
def _kind(schema: dict[str, Any]) -> list[str] | None:
    t = schema.get("type")
    names = t if isinstance(t, list) else [t]
    kinds = [TYPE_NAMES.get(str(n).lower()) for n in names if n not in (None, "", "any", "null")]
    if not kinds or any(k is None for k in kinds):
        return None  # 'any', unknown or missing type: anything goes
    return kinds  # type: ignore[return-value]


def _type_ok(value: Any, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _FLOAT:  # BFCL leniency: an int is accepted for a float
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _LIST:  # tuples are lists
        return isinstance(value, (list, tuple))
    return isinstance(value, dict)


def _check_value(value: Any, schema: dict[str, Any], where: str, out: list[tuple[str, str]],
                 allowed: list[Any] | None = None) -> None:
    """Type and enum problems of one value, recursing into items and nested properties.

    ``allowed``: the ground truth's allowed values at this position, if known. BFCL
    writes a variable reference (``"docFields"``, ``"data['sales']"``) as a string
    where the doc declares an array/dict/number; a string is then accepted when the
    ground truth also has a string there (BFCL's "variable" rule).
    """
    if not isinstance(schema, dict):
        return
    kinds = _kind(schema)
    if value is None and (schema.get("nullable") or (isinstance(schema.get("type"), list) and "null" in schema["type"])):
        return
    if kinds is not None and not any(_type_ok(value, k) for k in kinds):
        if isinstance(value, str) and any(isinstance(a, str) and a != "" for a in allowed or ()):
            return
        out.append(("type_error", f"{where} should be {'/'.join(str(k) for k in kinds)}, "
                    f"got {type(value).__name__} {json.dumps(value, default=str)[:80]}"))
        return
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        # an enum on an array-typed parameter constrains its items (as BFCL docs use it)
        per_item = isinstance(value, (list, tuple)) and kinds == [_LIST] and \
            not any(isinstance(e, list) for e in enum)
        bad = [v for v in value if v not in enum] if per_item else ([] if value in enum else [value])
        if bad:
            out.append(("enum_violation", f"{where}{' item' if per_item else ''} = "
                        f"{json.dumps(bad[0], default=str)[:80]} is not one of {json.dumps(enum, default=str)[:200]}"))
    if isinstance(value, (list, tuple)) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            sub_allowed = [a[i] for a in allowed or () if isinstance(a, list) and i < len(a)]
            _check_value(item, schema["items"], f"{where}[{i}]", out, sub_allowed)
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        for key, sub in schema["properties"].items():
            if key in value:
                sub_allowed = [o for a in allowed or () if isinstance(a, dict)
                               for o in (a.get(key) if isinstance(a.get(key), list) else [a.get(key)])]
                _check_value(value[key], sub, f"{where}.{key}", out, sub_allowed)


def _schema_defects(i: int, call: ParsedCall, doc: dict[str, Any],
                    expected: dict[str, list[Any]] | None = None) -> list[Defect]:
    params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
    required = [r for r in params.get("required") or [] if isinstance(r, str)] \
        if isinstance(params.get("required"), list) else []
    defects = []
    for arg in call.arguments:
        if arg not in props:
            defects.append(Defect("hallucinated_param", f"{call.name} has no parameter {arg!r}",
                                  call_index=i, name=call.name, param=arg,
                                  suggestions=tuple(suggest(arg, props))))
    for req in required:
        if req not in call.arguments:
            defects.append(Defect("missing_required", f"{call.name} needs {req!r}", call_index=i,
                                  name=call.name, param=req))
    for arg, value in call.arguments.items():
        if arg in props:
            found: list[tuple[str, str]] = []
            options = (expected or {}).get(arg)
            _check_value(value, props[arg], arg, found, options if isinstance(options, list) else None)
            defects += [Defect(kind, f"{call.name}: {msg}", call_index=i, name=call.name, param=arg)
                        for kind, msg in found]
    return defects


# -- ground truth (BFCL possible answers) ---------------------------------------------
def bfcl_normalize(value: str) -> str:
    """BFCL's string comparison: case-insensitive, without spaces and ,./-_*^."""
    return _BFCL_STRIP.sub("", value).lower()


def value_matches(value: Any, allowed: Any) -> bool:
    """Whether a model value equals one allowed value (BFCL rules)."""
    if isinstance(allowed, str):
        return isinstance(value, str) and bfcl_normalize(value) == bfcl_normalize(allowed)
    if isinstance(allowed, bool) or isinstance(value, bool):
        return type(value) is type(allowed) and value == allowed
    if isinstance(allowed, (int, float)):
        return isinstance(value, (int, float)) and value == allowed
    if isinstance(allowed, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(allowed)
                and all(value_matches(v, a) for v, a in zip(value, allowed)))
    if isinstance(allowed, dict):
        return isinstance(value, dict) and _dict_matches(value, allowed)
    return value == allowed


def _dict_matches(value: dict[str, Any], allowed: dict[str, Any]) -> bool:
    """Nested dicts: each key of the possible answer holds a list of allowed values."""
    if any(k not in allowed for k in value):
        return False
    for key, options in allowed.items():
        options = options if isinstance(options, list) else [options]
        if key in value:
            if not any(value_matches(value[key], o) for o in options):
                return False
        elif "" not in options and None not in options:
            return False
    return True


def _same_name(model: str, expected: str) -> bool:
    return model == expected or model == openai_name(expected)


def _why_not(call: ParsedCall, fname: str, params: dict[str, list[Any]]) -> str | None:
    """None if the call satisfies this expected call, else the first reason it does not."""
    if not _same_name(call.name, fname):
        return f"calls {call.name}, expected {fname}"
    for arg in call.arguments:
        if arg not in params:
            return f"{fname}: argument {arg!r} is not in the expected call"
    for pname, options in params.items():
        options = options if isinstance(options, list) else [options]
        if pname in call.arguments:
            if not any(value_matches(call.arguments[pname], o) for o in options if o != ""):
                shown = json.dumps([o for o in options if o != ""], default=str)[:160]
                return (f"{fname}: {pname} = {json.dumps(call.arguments[pname], default=str)[:80]} "
                        f"is not an allowed value ({shown})")
        elif "" not in options and None not in options:
            return f"{fname}: expected argument {pname!r} is missing"
    return None


def _ground_truth_defects(calls: list[ParsedCall], ground_truth: Any) -> list[Defect]:
    expected = ground_truth if isinstance(ground_truth, list) else [ground_truth]
    expected = [e for e in expected if isinstance(e, dict) and len(e) == 1]
    defects: list[Defect] = []
    used: set[int] = set()
    for gi, exp in enumerate(expected):
        fname, params = next(iter(exp.items()))
        params = params if isinstance(params, dict) else {}
        reasons: list[str] = []
        for ci, call in enumerate(calls):
            if ci in used:
                continue
            why = _why_not(call, fname, params)
            if why is None:
                used.add(ci)
                break
            reasons.append(why)
        else:
            same = [r for r in reasons if not r.startswith("calls ")]
            defects.append(Defect("wrong_call", same[0] if same else
                                  f"no call to {fname} (expected call {gi + 1} of {len(expected)})",
                                  name=fname))
    for ci, call in enumerate(calls):
        if ci not in used:
            defects.append(Defect("wrong_call", f"unexpected call {call.name} (expected "
                                  f"{len(expected)} call{'s' if len(expected) != 1 else ''})",
                                  call_index=ci, name=call.name))
    return defects


def _expected_params(ground_truth: Any, fname: str) -> dict[str, list[Any]]:
    """Allowed values per parameter of the ground truth's calls to ``fname`` (merged)."""
    out: dict[str, list[Any]] = {}
    for exp in ground_truth if isinstance(ground_truth, list) else [ground_truth] if ground_truth else []:
        if isinstance(exp, dict) and isinstance(fname, str) and isinstance(exp.get(fname), dict):
            for pname, options in exp[fname].items():
                out.setdefault(pname, []).extend(options if isinstance(options, list) else [options])
    return out


# -- entry point ----------------------------------------------------------------------
def check_calls(calls: Any, functions: Any = None, ground_truth: Any = None) -> Verdict:
    """Check JSON tool calls against function docs and an optional BFCL-style ground truth.
    Never raises on bad input: what is over the limits of `checker.budget` (nesting,
    size, integers too long to print, time) is ``unparsable`` with the reason."""
    calls, why = admit_calls(calls, functions, ground_truth)
    if why:
        return make("unparsable", defects=[Defect("unparsable", why)])
    try:
        with deadline():
            return _check(calls, functions, ground_truth)
    except RecursionError:
        return make("unparsable", defects=[Defect("unparsable", "calls nest too deeply to check")])
    except OverBudget as exc:
        return make("unparsable", defects=[Defect("unparsable", str(exc))])


def _check(calls: Any, functions: Any, ground_truth: Any) -> Verdict:
    parsed, defects = _calls(calls)
    docs, ids = _function_docs(functions)
    good = [c for c in parsed if c is not None]
    suggestions: list[str] = []
    real_names = [n for n, d in docs.items() if d.get("name") == n]
    for i, call in enumerate(parsed):
        if call is None:
            continue
        if functions is not None:
            doc = docs.get(call.name)
            if doc is None:
                near = suggest(call.name, real_names)
                suggestions += near
                hint = f"; did you mean {', '.join(near)}?" if near else ""
                defects.append(Defect("hallucinated_tool", f"no tool named {call.name!r}{hint}",
                                      call_index=i, name=call.name, suggestions=tuple(near)))
                continue
            defects += _schema_defects(i, call, doc, _expected_params(ground_truth, call.name)
                                       or _expected_params(ground_truth, doc.get("name")))
    if ground_truth is not None and not any(d.kind == "unparsable" and d.call_index is None for d in defects):
        defects += _ground_truth_defects(good, ground_truth)
    verdict = most_severe([d.kind for d in defects], "correct" if ground_truth is not None else "valid")
    first = good[0].name if good else None
    api = ids.get(first) if first in ids else (first if first in docs else None)
    return make(verdict, api=api, defects=defects, suggestions=list(dict.fromkeys(suggestions)),
                details={"calls": len(parsed)})
