"""Strict mode's compiled question, and its verdict on the common output without building defects.

A ``Plan`` is one question's function docs and ground truth compiled once (the doc rules of
strict_schema.py per call name, the expected calls of strict_truth.py) and reused while the
same objects come back (memo.py). ``Plan.judge`` decides the verdict of an output in one
pass, admission included, and allocates nothing but the (name, arguments) pairs:

* the calls are admitted as `checker.budget.admit_calls` would (nesting, integers Python
  can print, the number of values and calls): leaves are judged in the loop, only
  containers are walked;
* the verdict is the most severe defect kind the full check (calls.py ``_check``) would
  report: a call to no documented tool is the most severe a decodable output can have,
  so the pass stops there; a call that breaks its doc is asked for its worst kind only;
  the ground truth is matched only when no call breaks its doc (``wrong_call`` is the
  least severe kind);
* any shape it does not know (text, OpenAI items with JSON-text arguments, an undecodable
  call, a value over a limit, many calls against many expected ones) is left to the full
  check: ``judge`` returns None.

The defects themselves (and their words and suggestions) are found by the full check when
someone first reads them (verdict.py ``LazyVerdict``). That both paths reach the same
verdict is tested on every officially labelled BFCL output and on the fuzz corpus.
"""
from __future__ import annotations

from typing import Any

from apidb.record import ApiRecord
from apidb.safe_io import MAX_INT_DIGITS, quick_count

from .budget import MAX_CALLS, MAX_DEPTH, MAX_VALUES
from .memo import Memo
from .strict_schema import DocRule
from .strict_truth import Truth, openai_name
from .suggest import suggest

_MAX_INT_BITS = int(MAX_INT_DIGITS * 3.3219280948873626)  # log2(10): certainly printable below this
MAX_PAIRS = 64  # calls x expected calls matched in one pass; more go to the full check (and its deadline)
_MISS = object()
_NO_IDS: dict[str, str] = {}  # shared, never written


def function_docs(functions: Any) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """name -> function doc (also under its OpenAI-safe spelling); name -> record id."""
    docs: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = _NO_IDS  # a dict of its own only for ApiRecords (most docs are plain dicts)
    if functions is None:
        return docs, ids
    if isinstance(functions, (dict, ApiRecord)):
        functions = [functions]
    if not isinstance(functions, (list, tuple)):
        functions = []  # not function docs at all: no tool exists
    for fn in functions:
        if isinstance(fn, ApiRecord):
            doc = {"name": fn.name, "parameters": fn.parameters, "description": fn.description}
            if ids is _NO_IDS:
                ids = {}
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


class Plan:
    """One question compiled for strict mode."""

    __slots__ = ("has_docs", "docs", "ids", "truth", "rules", "_near")

    def __init__(self, functions: Any, ground_truth: Any) -> None:
        self.has_docs = functions is not None
        self.docs, self.ids = function_docs(functions)
        self.truth = Truth(ground_truth) if ground_truth is not None else None
        self.rules: dict[str, DocRule | None] = {}  # by call name, filled by rule()
        self._near: dict[str, list[str]] | None = None  # suggestions by unknown name, on first read

    def rule(self, name: str) -> DocRule | None:
        """The doc rule for a call's name, with the ground truth's values for that function."""
        rule = self.rules.get(name)
        if rule is None and name not in self.rules:
            doc = self.docs.get(name)
            if doc is not None:
                truth = self.truth
                allowed = (truth.allowed(name) or truth.allowed(doc.get("name"))) if truth else {}
                rule = DocRule(doc, allowed)
            self.rules[name] = rule
        return rule

    def api(self, first: str | None) -> str | None:
        """The record id (else the doc name) of an output's first call."""
        if first is None:
            return None
        return self.ids.get(first, first if first in self.docs else None)

    def near(self, name: str) -> list[str]:
        """The real tool names nearest to an unknown one (remembered: outputs repeat their mistakes)."""
        if self._near is None:
            self._near = {}
        hit = self._near.get(name)
        if hit is None:
            if len(self._near) >= 1024:  # unknown names are the model's: keep a bounded few
                self._near.clear()
            real = [n for n, d in self.docs.items() if d.get("name") == n]  # not the OpenAI-safe aliases
            hit = self._near[name] = suggest(name, real)
        return hit

    def no_tool(self, name: str) -> Any:
        """The words of a hallucinated-tool defect, suggestions included (run on first read)."""
        def explain() -> tuple[str, tuple[str, ...]]:
            near = self.near(name)
            return f"no tool named {name!r}{'; did you mean ' + ', '.join(near) + '?' if near else ''}", tuple(near)
        return explain

    def judge(self, calls: list[Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]] | None:
        """(verdict, the decoded calls) of a list of calls, or None: the full check decides."""
        if len(calls) > MAX_CALLS:
            return None
        parsed = []
        count = 1 + len(calls)  # values as budget.admit_calls counts them: the list, its items ...
        for item in calls:
            if type(item) is not dict:
                return None
            if len(item) == 1:  # BFCL's decoded form {func_name: {param: value}}
                (name, args), = item.items()
                if type(args) is not dict or type(name) is not str or not name or name == "name" \
                        or name == "function":
                    return None
            else:  # {"name": ..., "arguments": {...}} with decoded arguments
                name = item.get("name")
                args = item.get("arguments", item.get("parameters", _MISS))
                if type(name) is not str or not name or type(args) is not dict or type(item.get("function")) is dict:
                    return None
                for value in item.values():  # the item's other fields are admitted too
                    if value is not args:
                        k = quick_count(value, 2, MAX_DEPTH, False)
                        if k < 0:
                            return None
                        count += k
            count += 1 + len(args)  # ... each one's arguments object and its values
            for value in args.values():
                t = type(value)
                if t is int:
                    if value.bit_length() > _MAX_INT_BITS:
                        return None
                elif not (t is str or t is float or t is bool or value is None):
                    k = quick_count(value, 3, MAX_DEPTH, False)
                    if k < 0:
                        return None
                    count += k - 1
            parsed.append((name, args))
        if count > MAX_VALUES:
            return None
        if self.has_docs:
            worst = None
            rules = self.rules
            for name, args in parsed:
                rule = rules.get(name, _MISS)
                if rule is _MISS:
                    rule = self.rule(name)
                if rule is None:
                    return "hallucinated_tool", parsed
                if not rule.ok(args):
                    kind = rule.worst(args)
                    if kind is not None and (worst is None or _RANK[kind] < _RANK[worst]):
                        worst = kind
            if worst is not None:
                return worst, parsed
        truth = self.truth
        if truth is None:
            return "valid", parsed
        if len(parsed) * len(truth.expected) > MAX_PAIRS:
            return None
        return ("correct" if truth.matched(parsed) else "wrong_call"), parsed


_RANK = {"hallucinated_param": 0, "missing_required": 1, "type_error": 2, "enum_violation": 3}
PLANS: Memo[Plan] = Memo(4096)


def plan_for(functions: Any, ground_truth: Any) -> Plan:
    """The compiled question (compiled now if these objects were not seen)."""
    plan = PLANS.get(functions, ground_truth)
    return plan if plan is not None else PLANS.put(functions, ground_truth, None, Plan(functions, ground_truth))
