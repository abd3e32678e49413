"""JavaScript values as BFCL reads them: each argument is a string of JS source.

Like the Java category, BFCL's JavaScript category decodes the source text by
the declared type (``"true"`` -> True, ``"[1, 2]"`` -> [1, 2], ``"{a: 1}"`` ->
{"a": 1}); text that does not decode stays a string. The decoder is a set of
regular expressions rather than a parser, and ``--mode bfcl`` reproduces it as
is: arrays are split on every comma (a comma inside a string element splits
it), a dict ends at its first ``}``, a quoted dict value is unquoted *before*
it is read (``"'true'"`` becomes True), and any failure inside an array or a
dict leaves the whole text as a string.
"""
from __future__ import annotations

import re
from typing import Any

from .errors import BfclInputError

# JS type name -> the Python type a decoded value must have (BFCL's table).
JS_TYPES: dict[str, type] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
    "dict": dict, "array": list, "any": str,
}
NESTED = frozenset({"array"})

# `$` (not \Z) on purpose: BFCL's patterns accept one trailing newline.
_INT = re.compile(r"-?\d+$")
_FLOAT = re.compile(r"-?\d+(?:\.\d+)?$")
_BIGINT = re.compile(r"-?\d+n$")
_ARRAY_2D = re.compile(r"\[\s*\[.*?\]\s*(?:,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(?:,\s*\[.*?\]\s*)*\)")
_ARRAY = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
_INNER = re.compile(r"\[(.*?)\]")
_DICT = re.compile(r"\{(.*?)\}")
_PAIR = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


def decode(text: str, js_type: str, item_type: str | None = None) -> Any:
    """The value BFCL reads from JavaScript source ``text`` declared as ``js_type``."""
    if js_type == "String":
        quoted = len(text) > 0 and text[0] == text[-1] and text[0] in "\"'"
        return text[1:-1] if quoted else text
    if js_type == "integer":
        return int(text) if _INT.match(text) else text
    if js_type == "float":
        return float(text) if _FLOAT.match(text) else text
    if js_type == "Bigint":
        return int(text[:-1]) if _BIGINT.match(text) else text
    if js_type == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if js_type == "dict":
        return _dict(text.strip())
    if js_type == "array":
        return _array(text.strip(), item_type)
    if js_type == "any":
        return text
    raise BfclInputError(f"{js_type!r} is not a BFCL JavaScript type (choose from: {', '.join(JS_TYPES)})")


def _array(code: str, item_type: str | None) -> Any:
    try:
        m = _ARRAY_2D.match(code)
        if m:
            rows = []
            for i, inner in enumerate(_INNER.findall(m.group(0))):
                inner = inner.strip()
                if i == 0 and inner.startswith("["):
                    inner = inner[1:]
                rows.append([literal(e.strip()) for e in inner.split(",")])
            return rows
        m = _ARRAY.match(code)
        if not m:
            return code
        body = m.group(1) if m.group(1) is not None else m.group(2)
        body = body.strip() if body is not None else ""
        parts = body.split(",") if body else []
        if not item_type:
            return [literal(p.strip()) for p in parts]
        return [decode(p.strip(), item_type, "String" if p.strip()[:1] in ("'", '"') else None)
                for p in parts]
    except (ValueError, BfclInputError):  # upstream: any failure leaves the source text
        return code


def _dict(code: str) -> Any:
    if code == "{}":
        return {}
    m = _DICT.match(code)
    if not m:
        return code
    out: dict[str, Any] = {}
    try:
        for key, value in _PAIR.findall(m.group(1)):
            key, value = key.strip().strip("'\""), value.strip()
            if value.startswith("[") and value.endswith("]"):
                out[key] = _array(value, None)
            elif value.startswith("{") and value.endswith("}"):
                out[key] = _dict(value)
            else:
                out[key] = literal(value.strip("'\""))
    except ValueError:
        return code
    return out


def literal(text: str) -> Any:
    """A JS literal whose type is not declared (array items, dict values)."""
    text = text.strip()
    if text == "true":
        return True
    if text == "false":
        return False
    if len(text) > 0 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
