"""Strict mode, part 1: a call against its function doc (JSON Schema-ish, BFCL and Java/JS type names).

Each parameter schema is compiled once into a ``ValueRule``: ``ok(value)`` answers
"no defect?" without allocating, and only a value that fails is walked again by
``explain`` to word the defects. An evaluation checks thousands of outputs against
the same few docs, so the compiled rules are what makes strict mode fast.

Rules (docs/checker.md says why each differs from BFCL's):

* types: BFCL, Java and JavaScript names map onto JSON kinds; an int is a float
  (JSON has one number type), a bool is not an int; ``any``/unknown types accept
  anything. A string where the ground truth also has a string is accepted (BFCL's
  "variable" convention: ``"docFields"`` for an array).
* enums are a contract with the API: exact members only (``"pizza"`` is not
  ``"PIZZA"``), even when the ground truth says otherwise; on an array they
  constrain its items.
* an explicit ``null`` for a property the schema does not require is the same as
  leaving it out (OpenAI's strict tool schemas write optional arguments as null).
"""
from __future__ import annotations

import json
from typing import Any

from .suggest import suggest
from .verdict import Defect, lazy_defect, quick_defect

_STR, _INT, _FLOAT, _BOOL, _LIST, _DICT = "string", "integer", "float", "boolean", "array", "dict"
TYPE_NAMES: dict[str, str] = {
    "string": _STR, "str": _STR, "char": _STR, "character": _STR,
    "integer": _INT, "int": _INT, "long": _INT, "short": _INT, "byte": _INT, "bigint": _INT,
    "float": _FLOAT, "double": _FLOAT, "number": _FLOAT, "decimal": _FLOAT,
    "boolean": _BOOL, "bool": _BOOL,
    "array": _LIST, "list": _LIST, "arraylist": _LIST, "tuple": _LIST, "set": _LIST,
    "dict": _DICT, "object": _DICT, "hashmap": _DICT, "map": _DICT, "dictionary": _DICT,
}
# exact Python types of each kind (fast path; subclasses go through isinstance)
_EXACT = {_STR: (str,), _INT: (int,), _FLOAT: (int, float), _BOOL: (bool,), _LIST: (list, tuple), _DICT: (dict,)}
_NO_ALLOWED: list[Any] = []
_NONE: frozenset[type] = frozenset()
_BY_TYPE: dict[str, tuple[list[str] | None, frozenset[type] | None]] = {}
_MISS = object()


def kinds_of(schema: dict[str, Any]) -> list[str] | None:
    """The JSON kinds a schema's ``type`` allows; None for any/unknown/missing."""
    t = schema.get("type")
    names = t if isinstance(t, list) else [t]
    kinds = [TYPE_NAMES.get(str(n).lower()) for n in names if n not in (None, "", "any", "null")]
    if not kinds or any(k is None for k in kinds):
        return None
    return kinds  # type: ignore[return-value]


def type_ok(value: Any, kind: str) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _LIST:
        return isinstance(value, (list, tuple))
    return isinstance(value, dict)


_ENCODE = json.JSONEncoder(default=str).encode  # json.dumps(default=...) builds an encoder per call


def _dump(value: Any, limit: int) -> str:
    return _ENCODE(value)[:limit]


class ValueRule:
    """One schema position (with the ground truth's allowed values there, if any)."""

    __slots__ = ("schema", "kinds", "exact", "plain", "nullable", "string_ok", "enum", "enum_items", "items",
                 "props", "required", "allowed", "per_index", "members", "_item_rules", "_prop_rules")

    def __init__(self, schema: dict[str, Any], allowed: list[Any] | None) -> None:
        # runs once per parameter of every question: kept to plain loops, locals and cached lookups
        self.schema = schema
        get = schema.get
        t = get("type")
        typed = _BY_TYPE.get(t) if type(t) is str else None
        if typed is None:
            kinds = kinds_of(schema)
            typed = (kinds, frozenset(x for k in kinds for x in _EXACT[k]) if kinds else None)
            if type(t) is str:
                _BY_TYPE[t] = typed
        self.kinds, self.exact = kinds, exact = typed
        self.nullable = bool(get("nullable")) or (type(t) is list and "null" in t)
        self.allowed = allowed = allowed or _NO_ALLOWED
        string_ok = per_index = False
        for a in allowed:
            if isinstance(a, str):
                string_ok = string_ok or a != ""
            elif isinstance(a, list):
                per_index = True  # the allowed values at item i differ per index
        self.string_ok, self.per_index = string_ok, per_index
        enum, items, props = get("enum"), get("items"), get("properties")
        self.enum = enum = enum if isinstance(enum, list) and enum else None
        self.items = items = items if isinstance(items, dict) else None
        self.props = props = props if isinstance(props, dict) else None
        required = get("required") if props is not None else None
        self.required = frozenset(r for r in required if isinstance(r, str)) if isinstance(required, list) else None
        self._item_rules: dict[int, ValueRule] | None = None
        self._prop_rules: dict[str, ValueRule] | None = None
        if enum is None:
            self.enum_items = False
            self.members = None
            # the exact types for which type(value) in plain settles it: no enum, items or properties
            self.plain = exact if exact and items is None and props is None else _NONE
            return
        # an enum on an array-typed parameter constrains its items (as BFCL docs use it)
        self.enum_items = enum_items = kinds == [_LIST] and not any(isinstance(e, list) for e in enum)
        self.plain = _NONE
        # a scalar enum: a value of an exact type that is a member settles it too
        self.members = frozenset(e for e in enum if type(e) in exact) \
            if exact and not enum_items and items is None and props is None \
            and all(type(e) in (str, int, float, bool) for e in enum) else None

    def optional(self, key: str) -> bool:
        """A property the schema does not require (an explicit null for it is left out)."""
        return self.required is None or key not in self.required

    def item_rule(self, i: int) -> ValueRule:
        key = i if self.per_index else -1
        if self._item_rules is None:
            self._item_rules = {}
        rule = self._item_rules.get(key)
        if rule is None:
            sub = [a[i] for a in self.allowed if isinstance(a, list) and i < len(a)] if key >= 0 else None
            rule = self._item_rules[key] = ValueRule(self.items, sub)  # type: ignore[arg-type]
        return rule

    def prop_rule(self, key: str) -> ValueRule | None:
        if self._prop_rules is None:
            self._prop_rules = {}
        rule = self._prop_rules.get(key)
        if rule is None:
            sub_schema = self.props[key]  # type: ignore[index]
            if not isinstance(sub_schema, dict):
                return None
            sub = [o for a in self.allowed if isinstance(a, dict)
                   for o in (a.get(key) if isinstance(a.get(key), list) else [a.get(key)])]
            rule = self._prop_rules[key] = ValueRule(sub_schema, sub)
        return rule

    def ok(self, value: Any) -> bool:
        """True when ``explain`` would find nothing."""
        if value is None and self.nullable:
            return True
        exact = self.exact
        if exact is not None and type(value) not in exact \
                and not any(type_ok(value, k) for k in self.kinds):  # type: ignore[union-attr]
            return isinstance(value, str) and self.string_ok
        enum = self.enum
        if enum is not None:
            if self.enum_items and isinstance(value, (list, tuple)):
                if any(v not in enum for v in value):
                    return False
            elif value not in enum:
                return False
        if self.items is not None and isinstance(value, (list, tuple)):
            shared = self._item_rules.get(-1) if self._item_rules else None
            for i, item in enumerate(value):
                rule = shared or self.item_rule(i)
                if type(item) not in rule.plain and not rule.ok(item):
                    return False
        if self.props is not None and isinstance(value, dict):
            for key in self.props:
                if key in value:
                    sub = value[key]
                    if sub is None and self.optional(key):
                        continue  # null = left out
                    rule = self.prop_rule(key)
                    if rule is not None and not rule.ok(sub):
                        return False
        return True

    def explain(self, value: Any, where: str, out: list[tuple[Any, ...]]) -> None:
        """Append a fact (kind, where, ...) for each type or enum problem of ``value``; ``word``
        turns a fact into a message when someone reads it."""
        if value is None and self.nullable:
            return
        kinds, exact = self.kinds, self.exact
        if kinds is not None and type(value) not in exact and not any(type_ok(value, k) for k in kinds):  # type: ignore
            if not (isinstance(value, str) and self.string_ok):
                out.append(("type_error", where, kinds, value))
            return
        enum = self.enum
        if enum is not None:
            per_item = self.enum_items and isinstance(value, (list, tuple))
            bad = [v for v in value if v not in enum] if per_item else ([] if value in enum else [value])
            if bad:
                out.append(("enum_violation", where + (" item" if per_item else ""), enum, bad[0]))
        if self.items is not None and isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                self.item_rule(i).explain(item, f"{where}[{i}]", out)
        if self.props is not None and isinstance(value, dict):
            for key in self.props:
                if key in value and not (value[key] is None and self.optional(key)):
                    rule = self.prop_rule(key)
                    if rule is not None:
                        rule.explain(value[key], f"{where}.{key}", out)


class _Words:
    """A schema defect's message, written when first read."""

    __slots__ = ("name", "fact")

    def __init__(self, name: str, fact: tuple[Any, ...]) -> None:
        self.name, self.fact = name, fact

    def __call__(self) -> tuple[str, tuple[str, ...]]:
        kind, where, expected, value = self.fact
        if kind == "type_error":
            return (f"{self.name}: {where} should be {'/'.join(expected)}, got {type(value).__name__} "
                    f"{_dump(value, 80)}"), ()
        return f"{self.name}: {where} = {_dump(value, 80)} is not one of {_dump(expected, 200)}", ()


class _NoParam:
    """The words of a hallucinated-parameter defect, suggestions included (run on first read)."""

    __slots__ = ("name", "arg", "doc")

    def __init__(self, name: str, arg: str, doc: DocRule) -> None:
        self.name, self.arg, self.doc = name, arg, doc

    def __call__(self) -> tuple[str, tuple[str, ...]]:
        return f"{self.name} has no parameter {self.arg!r}", self.doc.near(self.arg)


class DocRule:
    """A function doc compiled with the ground truth's allowed values per parameter."""

    __slots__ = ("props", "required", "required_set", "allowed", "_rules", "_near")

    def __init__(self, doc: dict[str, Any], allowed: dict[str, list[Any]]) -> None:
        params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
        props = params.get("properties") if isinstance(params.get("properties"), dict) else {}
        required = params.get("required")
        self.props = props
        self.required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        self.required_set = frozenset(self.required)
        self.allowed = allowed
        self._rules: dict[str, ValueRule | None] = {}  # compiled on first use
        self._near: dict[str, tuple[str, ...]] | None = None

    def near(self, arg: str) -> tuple[str, ...]:
        """The doc's parameters nearest to an unknown one (remembered: outputs repeat their mistakes)."""
        if self._near is None:
            self._near = {}
        hit = self._near.get(arg)
        if hit is None:
            if len(self._near) >= 1024:  # unknown names are the model's: keep a bounded few
                self._near.clear()
            hit = self._near[arg] = tuple(suggest(arg, self.props))
        return hit

    def rule(self, arg: str) -> ValueRule | None:
        """The compiled rule of a parameter the doc has (None: its schema is not an object)."""
        try:
            return self._rules[arg]
        except KeyError:
            schema, options = self.props[arg], self.allowed.get(arg)
            rule = self._rules[arg] = ValueRule(schema, options if isinstance(options, list) else None) \
                if isinstance(schema, dict) else None
            return rule

    def ok(self, args: dict[str, Any]) -> bool:
        rules = self._rules
        for arg, value in args.items():
            rule = rules.get(arg, _MISS)
            if rule is _MISS:
                if arg not in self.props:
                    return False
                rule = self.rule(arg)
            if rule is None or type(value) in rule.plain:
                continue
            members = rule.members
            if members is not None and type(value) in rule.exact and value in members:
                continue
            if not (value is None and arg not in self.required_set) and not rule.ok(value):
                return False
        for req in self.required:
            if req not in args:
                return False
        return True

    def worst(self, args: dict[str, Any]) -> str | None:
        """The most severe kind among ``defects(..., args)``, without building them (the
        same checks in the same order; strict_plan.py decides verdicts with it)."""
        props = self.props
        for arg in args:
            if arg not in props:
                return "hallucinated_param"
        for req in self.required:
            if req not in args:
                return "missing_required"
        found: list[tuple[Any, ...]] = []
        for arg, value in args.items():
            rule = self.rule(arg)
            if rule is not None and not (value is None and arg not in self.required_set):
                rule.explain(value, arg, found)
        if not found:
            return None
        return "type_error" if any(fact[0] == "type_error" for fact in found) else "enum_violation"

    def defects(self, i: int, name: str, args: dict[str, Any]) -> list[Defect]:
        """Every schema defect of one call: unknown, missing, mistyped or out-of-enum arguments."""
        out = [lazy_defect("hallucinated_param", _NoParam(name, arg, self), i, name, arg)
               for arg in args if arg not in self.props]
        out += [quick_defect("missing_required", f"{name} needs {req!r}", i, name, req)
                for req in self.required if req not in args]  # cheap words: written now
        for arg, value in args.items():
            rule = self.rule(arg) if arg in self.props else None
            if rule is None or (value is None and arg not in self.required_set):
                continue
            found: list[tuple[Any, ...]] = []
            rule.explain(value, arg, found)
            out += [lazy_defect(fact[0], _Words(name, fact), i, name, arg) for fact in found]
        return out
