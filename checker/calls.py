"""JSON tool calls (OpenAI / BFCL style) checked against function docs and ground truth.

Two modes. ``strict`` (the default) judges a call by the contract its doc states:
every defect is reported; the verdict is the most severe one
(unparsable > hallucinated_tool > hallucinated_param > missing_required >
type_error > enum_violation > wrong_call), else ``correct`` (with ground truth) or
``valid`` (without). Tool names are compared exactly (a dotted name may be written
with ``_``); a near miss is still a hallucinated tool, with the nearest real names
as suggestions. The doc rules are in strict_schema.py, the ground-truth rules in
strict_truth.py. ``bfcl`` reproduces the leaderboard's own checker (bfcl/).

Docs and ground truth are compiled once (strict_plan.py) and reused while the same doc and
answer objects come back, as in an evaluation run or a proxy's requests (memo.py). The
verdict of a common output is decided in one pass (``Plan.judge``); its defects are then
found by the full check below when first read, from the calls as they are at that moment.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .bfcl import check_bfcl
from .bfcl.values import standardize
from .budget import OverBudget, admit_calls, admit_question, deadline
from .strict_plan import PLANS, Plan, plan_for
from .strict_schema import TYPE_NAMES
from .strict_truth import openai_name, value_matches
from .verdict import (
    CALL_SEVERITY,
    Defect,
    Verdict,
    lazy_defect,
    lazy_verdict,
    make,
    quick_verdict,
)

MODES = ("strict", "bfcl")
__all__ = ["MODES", "TYPE_NAMES", "ParsedCall", "bfcl_normalize", "check_calls", "openai_name", "value_matches"]


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]


def bfcl_normalize(value: str) -> str:
    """BFCL's string comparison: case-insensitive, without spaces and ,./-_*^, ' read as "."""
    return standardize(value)


# -- input normalization ---------------------------------------------------------------
Call = tuple[str, dict[str, Any]]
_MISS = object()


def _calls(calls: Any) -> tuple[list[Call | None], list[Defect]]:
    """Model calls in any accepted shape; an undecodable call is None plus a defect."""
    defects: list[Defect] = []
    if type(calls) is not list:
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
    out: list[Call | None] = []
    for i, item in enumerate(calls):
        if type(item) is dict and len(item) == 1:  # BFCL's decoded form {func_name: {param: value}}
            (name, args), = item.items()
            if type(args) is dict and type(name) is str and name and name != "name" and name != "function":
                out.append((name, args))
                continue
        parsed, why = _one_call(item)
        if parsed is None:
            defects.append(Defect("unparsable", why, call_index=i))
        out.append(parsed)
    return out, defects


def _one_call(item: Any) -> tuple[Call | None, str]:
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
    return (name, args), ""


# -- entry point ----------------------------------------------------------------------
def check_calls(calls: Any, functions: Any = None, ground_truth: Any = None, mode: str = "strict", *,
                category: str | None = None, language: str | None = None, fc: bool = False) -> Verdict:
    """Check JSON tool calls against function docs and an optional BFCL-style ground truth.
    Strict mode never raises on bad input: what is over the limits of `checker.budget` (nesting,
    size, integers too long to print, time) is ``unparsable`` with the reason.

    ``mode="bfcl"``: the leaderboard's own rules (needs ``functions`` and ``ground_truth``;
    ``category`` picks BFCL's checker and ``language`` its value decoding, both inferred
    when absent; ``fc``: judge names as for a function-calling model). Raises
    ``BfclInputError`` (a ValueError) for input BFCL's rules cannot check."""
    if mode == "bfcl":
        return check_bfcl(calls, functions, ground_truth, category=category, language=language, fc=fc)
    if mode != "strict":
        raise ValueError(f"unknown mode {mode!r} (choose from: {', '.join(MODES)})")
    if type(calls) is list:  # the common case: decided in one pass when nothing is unusual
        plan = PLANS.get(functions, ground_truth)
        if plan is None and admit_question(functions, ground_truth) is None:
            plan = PLANS.put(functions, ground_truth, None, Plan(functions, ground_truth))
        judged = plan.judge(calls) if plan is not None else None
        if judged is not None:
            verdict, parsed = judged
            api = plan.api(parsed[0][0] if parsed else None)  # type: ignore[union-attr]
            if verdict == "correct" or verdict == "valid":
                return quick_verdict(verdict, True, api, (), {"calls": len(parsed)})
            return lazy_verdict(verdict, False, api, None, {"calls": len(parsed)}, _Defects(calls, plan))
    calls, why = admit_calls(calls)
    plan = None
    if why is None:
        plan = PLANS.get(functions, ground_truth)
        if plan is None:  # a question not compiled yet: its docs are admitted once (admit_question)
            why = admit_question(functions, ground_truth)
    if why:
        return make("unparsable", defects=[Defect("unparsable", why)])
    return _checked(calls, plan or plan_for(functions, ground_truth))


def _checked(calls: Any, plan: Plan) -> Verdict:
    """The full check of admitted calls, within the time budget."""
    try:
        with deadline():
            return _check(calls, plan)
    except RecursionError:
        return make("unparsable", defects=[Defect("unparsable", "calls nest too deeply to check")])
    except OverBudget as exc:
        return make("unparsable", defects=[Defect("unparsable", str(exc))])


class _Defects:
    """The defects of an output whose verdict ``Plan.judge`` decided: the full check's."""

    __slots__ = ("calls", "plan")

    def __init__(self, calls: list[Any], plan: Plan) -> None:
        self.calls, self.plan = calls, plan

    def __call__(self) -> tuple[Defect, ...]:
        return _checked(self.calls, self.plan).defects


def _check(calls: Any, plan: Plan) -> Verdict:
    parsed, defects = _calls(calls)
    broken = bool(defects)  # only undecodable calls so far
    if plan.has_docs:
        rules = plan.rules
        for i, call in enumerate(parsed):
            if call is None:
                continue
            name, args = call
            rule = rules.get(name, _MISS)
            if rule is _MISS:
                rule = plan.rule(name)
            if rule is None:  # suggestions are worked out if someone reads them
                defects.append(lazy_defect("hallucinated_tool", plan.no_tool(name), i, name))
            elif not rule.ok(args):
                defects += rule.defects(i, name, args)
    truth = plan.truth
    good: list[Call] = [c for c in parsed if c is not None] if broken else parsed  # type: ignore
    if truth is not None and not (defects and defects[0].call_index is None and defects[0].kind == "unparsable"):
        defects += truth.defects(good)
    api = plan.api(good[0][0] if good else None)
    default = "correct" if truth is not None else "valid"
    if not defects:
        return quick_verdict(default, True, api, (), {"calls": len(parsed)})
    kinds = {d.kind for d in defects}
    for verdict in CALL_SEVERITY:
        if verdict in kinds:
            break
    return lazy_verdict(verdict, False, api, tuple(defects), {"calls": len(parsed)})
