"""Java values as BFCL reads them: the model writes each argument as Java source text.

BFCL's Java category asks for every argument as a *string* of Java source
(``"50L"``, ``"true"``, ``"new int[]{1, 2}"``) and decodes it by the declared
Java type before comparing with the possible answer. Text that does not parse
as the declared type stays a string, which then fails the type check unless the
possible answer itself is a string (BFCL's "variable" rule). We reproduce that
grammar, including its quirks, because agreement with the official verdicts is
the point of ``--mode bfcl``:

* literals are matched with Python's ``$``, which also accepts one trailing
  newline (``"5\\n"`` is the integer 5);
* ``char`` never decodes (BFCL's pattern for it cannot match), so a char stays
  the raw text;
* an ``Array`` of ``String`` keeps the quotes of each element
  (``new String[]{"a"}`` -> ``['"a"']``), an ``ArrayList`` of ``String`` drops them;
* ``Set``, ``Hashtable``, ``Queue`` and ``Stack`` are declared but not
  implemented upstream: the official checker raises, so we refuse the input.
"""
from __future__ import annotations

import re
from typing import Any

from .errors import BfclInputError

# Java type name -> the Python type a decoded value must have (BFCL's table).
JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "long": int,
    "float": float, "double": float, "boolean": bool, "char": str,
    "Array": list, "ArrayList": list, "Set": set, "HashMap": dict, "Hashtable": dict,
    "Queue": list, "Stack": list, "String": str, "any": str,
}
NESTED = frozenset({"Array", "ArrayList"})
_UNIMPLEMENTED = frozenset({"Set", "Hashtable", "Queue", "Stack"})

# `$` (not \Z) on purpose: see the module docstring.
_INT = re.compile(r"-?\d+$")
_FLOAT_F = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[fF]$")
_DOUBLE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$")
_LONG = re.compile(r"-?\d+[lL]$")
_SUFFIX_F = re.compile(r"[fF]$")
_SUFFIX_L = re.compile(r"[lL]$")
_AS_LIST = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
_ADD_BLOCK = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL)
_ADD = re.compile(r"add\((.+?)\)")
_EMPTY_LIST = re.compile(r"new\s+ArrayList<\w*>\(\)")
_ARRAY = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
_MAP_BLOCK = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL)
_PUT = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
_EMPTY_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)")


def decode(text: str, java_type: str, item_type: str | None = None) -> Any:
    """The value BFCL reads from Java source ``text`` declared as ``java_type``."""
    if java_type in ("integer", "short", "byte"):
        return int(text) if _INT.match(text) else text
    if java_type == "long":
        return int(_SUFFIX_L.sub("", text)) if _LONG.match(text) else text
    if java_type == "float":
        return float(_SUFFIX_F.sub("", text)) if _FLOAT_F.match(text) else text
    if java_type == "double":
        return float(text) if _DOUBLE.match(text) else text
    if java_type == "boolean":
        return text == "true" if text in ("true", "false") else text
    if java_type in ("String", "any", "char"):
        return text
    if java_type == "ArrayList":
        return _array_list(text, item_type)
    if java_type == "Array":
        return _array(text, item_type)
    if java_type == "HashMap":
        return _hash_map(text)
    if java_type in _UNIMPLEMENTED:
        raise BfclInputError(f"Java type {java_type!r} cannot be checked: the official checker does not "
                             "implement it (it raises)")
    raise BfclInputError(f"{java_type!r} is not a BFCL Java type (choose from: {', '.join(JAVA_TYPES)})")


def _element(text: str, item_type: str | None) -> Any:
    if item_type in ("char", "String"):
        return text[1:-1]  # the quotes come off, whatever they are
    return decode(text, item_type) if item_type else literal(text)


def _array_list(text: str, item_type: str | None) -> Any:
    m = _AS_LIST.search(text)
    if m:
        return [_element(part.strip(), item_type) for part in m.group(1).split(",")]
    m = _ADD_BLOCK.search(text)
    if m:
        return [_element(part.strip(), item_type) for part in _ADD.findall(m.group(1))]
    return [] if _EMPTY_LIST.search(text) else text


def _array(text: str, item_type: str | None) -> Any:
    m = _ARRAY.search(text)
    if not m:
        return text
    parts = [p.strip() for p in m.group(1).split(",")]
    return [decode(p, item_type) if item_type else literal(p) for p in parts if p]


def _hash_map(text: str) -> Any:
    m = _MAP_BLOCK.search(text)
    if m:
        body = m.group(1)
        return {key: literal(val.strip()) for key, val in _PUT.findall(body)} if body.strip() else {}
    return {} if _EMPTY_MAP.search(text) else text


def literal(text: str) -> Any:
    """A Java literal whose type is not declared (collection items, map values)."""
    if text == "true":
        return True
    if text == "false":
        return False
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _LONG.match(text):
        return int(text[:-1])
    if _FLOAT_F.match(text):
        return float(_SUFFIX_F.sub("", text))
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
