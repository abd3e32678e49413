"""BFCL's function-level rules: one expected call, and the three category checkers.

Per call (``simple_function_checker`` upstream), in this order, first failure wins:
the name must be the doc's name (a function-calling model's name has its dots
replaced by ``_``, since OpenAI-style APIs forbid dots; a prompting model keeps
them); every ``required`` parameter of the doc must be present; each given
parameter must be both in the doc and in the possible answer and pass its
``ParamRule``; every parameter whose possible answers lack ``""`` must be present.

Per output, by category name (substring, as upstream): ``parallel`` -> same
number of calls, each expected call matched by some unused call in any order;
``multiple`` -> same number of calls, the first checked against the first
expected call's doc; otherwise (simple) exactly one call, checked against the
*first* doc and the first possible answer (its function name is not read).
"""
from __future__ import annotations

from typing import Any

from .errors import BfclInputError
from .values import SPECIAL, STRING, ParamRule, Words, standardize

UNCLEAR = "simple_function_checker:unclear"
_WRONG_NAME = "simple_function_checker:wrong_func_name"
_UNSET = object()

# (valid, error_type, message, call_index, param, cause). cause: the error type behind a
# parallel "cannot_find_match" (its closest failing call), else error_type. error_type is None on a valid parallel
# output and on a valid call of which some parameter was decided by a normalised comparison
# (upstream then returns that comparison's result object, which has no error type), else
# "simple_function_checker:unclear" on a valid call.
# The message is a str, or Words written when read.
Outcome = tuple[bool, "str | None", "str | Words", "int | None", "str | None", "str | None"]


class FunctionRule:
    """A function doc together with the possible answer of one expected call."""

    __slots__ = ("name", "fc_name", "required", "props", "answer", "needed", "language", "_rules")

    def __init__(self, doc: Any, answer: Any, language: str) -> None:
        if not isinstance(doc, dict) or not isinstance(doc.get("name"), str):
            raise BfclInputError(f"function doc {str(doc)[:60]!r} has no name")
        params = doc.get("parameters", {})
        props = params.get("properties", {}) if isinstance(params, dict) else None
        required = params.get("required", []) if isinstance(params, dict) else None
        if not isinstance(props, dict) or not isinstance(required, list):
            raise BfclInputError(f"function {doc['name']!r}: parameters need 'properties' (an object) "
                                 "and 'required' (a list)")
        if not isinstance(answer, dict) or not all(isinstance(v, list) for v in answer.values()):
            raise BfclInputError(f"possible answer for {doc['name']!r} must map each parameter to a list "
                                 "of allowed values")
        self.name = doc["name"]
        self.fc_name = self.name.replace(".", "_")
        self.required, self.props, self.answer = required, props, answer
        self.needed = [p for p, options in answer.items() if "" not in options]
        self.language = language
        self._rules: dict[str, ParamRule | None] = {}

    def rule(self, param: str) -> ParamRule | None:
        rule = self._rules.get(param, _UNSET)
        if rule is _UNSET:
            rule = None
            if param in self.props and param in self.answer:
                rule = ParamRule(param, self.props[param], self.answer[param], self.language)
            self._rules[param] = rule
        return rule  # type: ignore[return-value]

    def check(self, name: str, args: dict[str, Any], fc: bool, index: int) -> Outcome:
        expected = self.fc_name if fc else self.name
        if name != expected:
            return False, "simple_function_checker:wrong_func_name", \
                Words("calls {!r}, expected {!r}", name, expected), index, None, "simple_function_checker:wrong_func_name"
        for param in self.required:
            if param not in args:
                return False, "simple_function_checker:missing_required", \
                    f"{name}: required parameter {param!r} is missing", index, param, \
                    "simple_function_checker:missing_required"
        special = False
        rules = self._rules
        for param, value in args.items():
            rule = rules.get(param, _UNSET)
            if rule is _UNSET:
                rule = self.rule(param)
            if rule is None:
                where = "the function doc" if param not in self.props else "the possible answer"
                return False, "simple_function_checker:unexpected_param", \
                    f"{name}: parameter {param!r} is not in {where}", index, param, \
                    "simple_function_checker:unexpected_param"
            if type(value) is rule.fast:  # a plain Python scalar: decided here, without a call
                if rule.kind == STRING:
                    if standardize(value) in rule.strings:
                        special = True
                        continue
                elif value in rule.options:
                    continue
            result = rule.check(value)
            if result is None:
                continue
            if result is SPECIAL:
                special = True
                continue
            return False, result[0], Words("{}: {}", name, result[1]), index, param, result[0]
        for param in self.needed:
            if param not in args:
                return False, "simple_function_checker:missing_optional", \
                    f"{name}: parameter {param!r} is missing and the possible answer needs it", index, param, \
                    "simple_function_checker:missing_optional"
        return True, (None if special else UNCLEAR), "", index, None, None


def _find(functions: list[Any], name: Any) -> Any:
    for doc in functions:
        if not isinstance(doc, dict) or "name" not in doc:
            raise BfclInputError("every function doc needs a 'name'")
        if doc["name"] == name:
            return doc
    raise BfclInputError(f"ground_truth names {name!r}, which no function doc defines (the official "
                         "checker raises)")


class Question:
    """A BFCL question (function docs + possible answer) compiled for one category and language."""

    __slots__ = ("functions", "ground_truth", "checker", "language", "_rules", "_names")

    def __init__(self, functions: Any, ground_truth: Any, category: str, language: str) -> None:
        if isinstance(functions, dict):
            functions = [functions]
        if not isinstance(functions, list) or not functions:
            raise BfclInputError("functions must be a non-empty list of function docs")
        if not isinstance(ground_truth, list) or not all(isinstance(g, dict) and len(g) == 1
                                                         for g in ground_truth):
            raise BfclInputError("ground_truth must be a list of {function name: {param: [allowed values]}}")
        self.functions, self.ground_truth, self.language = functions, ground_truth, language
        self.checker = "parallel" if "parallel" in category else "multiple" if "multiple" in category else "simple"
        self._rules: list[FunctionRule | None] = [None] * len(ground_truth)
        self._names: dict[bool, dict[str, Any]] = {}

    def doc_named(self, name: str, fc: bool) -> Any:
        """The doc a call's name refers to (as the model type writes names), or None."""
        names = self._names.get(fc)
        if names is None:
            names = self._names[fc] = {}
            for d in self.functions:
                if isinstance(d, dict) and isinstance(d.get("name"), str):
                    names.setdefault(d["name"].replace(".", "_") if fc else d["name"], d)
        return names.get(name)

    def rule(self, i: int) -> FunctionRule:
        """The rule of expected call ``i``, built on first use (upstream only reads what it uses)."""
        rule = self._rules[i]
        if rule is None:
            (name, answer), = self.ground_truth[i].items()
            doc = self.functions[0] if self.checker == "simple" else _find(self.functions, name)
            rule = self._rules[i] = FunctionRule(doc, answer, self.language)
        return rule

    def check(self, calls: list[tuple[str, dict[str, Any]]], fc: bool) -> Outcome:
        n, want = len(calls), len(self.ground_truth)
        if self.checker == "simple":
            if n != 1:
                return False, "simple_function_checker:wrong_count", f"{n} calls, expected exactly 1", None, None, \
                    "simple_function_checker:wrong_count"
            if not want:
                raise BfclInputError("ground_truth is empty")
            return self.rule(0).check(calls[0][0], calls[0][1], fc, 0)
        if n != want:
            error = f"{self.checker}_function_checker{'_no_order' if self.checker == 'parallel' else ''}:wrong_count"
            return False, error, f"{n} calls, expected {want}", None, None, error
        if self.checker == "multiple":
            if not want:
                raise BfclInputError("ground_truth is empty")
            return self.rule(0).check(calls[0][0], calls[0][1], fc, 0)
        return self._parallel(calls, fc)

    def _parallel(self, calls: list[tuple[str, dict[str, Any]]], fc: bool) -> Outcome:
        used: set[int] = set()
        for i in range(len(self.ground_truth)):
            rule = self.rule(i)
            first_failure: Outcome | None = None
            for j, (name, args) in enumerate(calls):
                if j in used:
                    continue
                outcome = rule.check(name, args, fc, j)
                if outcome[0]:
                    used.add(j)
                    break
                # the message names the first failure, preferring a call of the expected name
                if first_failure is None or (first_failure[5] == _WRONG_NAME and outcome[5] != _WRONG_NAME):
                    first_failure = outcome
            else:
                closest = Words(" (closest: {})", first_failure[2]) if first_failure else ""
                return False, "parallel_function_checker_no_order:cannot_find_match", \
                    Words("no call matches expected call {} of {}, {}{}", i + 1, len(self.ground_truth), rule.name,
                          closest), \
                    *(first_failure[3:] if first_failure else (None, None, None))
        return True, None, "", None, None, None
