"""Strict mode, part 2: calls against a BFCL-style ground truth (possible answers).

Each expected call ``{name: {param: [allowed values]}}`` is compiled once: strings are
normalised ahead (BFCL's normalisation: no spaces or ``,./-_*^``, any case, ``'`` read
as ``"``) and numbers and booleans go into sets, so matching a call is a few lookups.
Rules, and where they differ from BFCL (docs/checker.md):

* calls match expected calls in any order (BFCL: only in ``parallel`` categories; a
  reordered answer is not a wrong answer), each call used once; extra calls are wrong.
* strings compare normalised at every depth, in lists and dicts too (BFCL only at
  the top level of a value).
* an int equals the same float at every depth (BFCL: only at the top level).
* a bool is never a number (True is not 1).
* an explicit ``null`` is the same as leaving the parameter out: fine when the
  possible answers allow that (``""``) or list ``null`` itself.
* a dotted name may be written with ``_`` (as function-calling APIs must).
"""
from __future__ import annotations

import json
from typing import Any

from apidb.names import openai_safe

from .bfcl.values import standardize as normalize
from .budget import check_time
from .verdict import Defect, lazy_defect, quick_defect

_PLAIN = (str, int, float, bool)


_ALIASES: dict[str, str] = {}  # the same function names come back question after question


def openai_name(name: str) -> str:
    """The form a dotted function name takes under OpenAI's name rules (BFCL does the same)."""
    alias = _ALIASES.get(name)
    if alias is None:
        if len(_ALIASES) >= 65536:
            _ALIASES.clear()
        alias = _ALIASES[name] = openai_safe(name, limit=None)
    return alias


_ENCODE = json.JSONEncoder(default=str).encode  # json.dumps(default=...) builds an encoder per call


def value_matches(value: Any, allowed: Any) -> bool:
    """Whether a model value equals one allowed value (strict's rules above)."""
    if isinstance(allowed, str):
        return isinstance(value, str) and normalize(value) == normalize(allowed)
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
    if any(k not in allowed and v is not None for k, v in value.items()):
        return False
    for key, options in allowed.items():
        options = options if isinstance(options, list) else [options]
        if key in value and value[key] is not None:
            if not any(value_matches(value[key], o) for o in options):
                return False
        elif "" not in options and None not in options:
            return False
    return True


_TRUE, _FALSE = object(), object()  # stand-ins: True must not equal 1 in a key
_FEW = 4  # at most this many allowed values are kept in a tuple, more in a set


def _keys(items: Any) -> tuple[Any, ...] | None:
    """A hashable stand-in for a list of plain values with value_matches' equality (strings
    normalised, 1 == 1.0, True != 1), or None if an item is not plain."""
    out = []
    for x in items:
        t = type(x)
        if t is str:
            out.append(normalize(x))
        elif t is bool:
            out.append(_TRUE if x else _FALSE)
        elif (t is int or t is float) and x == x:
            out.append(x)
        else:
            return None
    return tuple(out)


class Options:
    """The allowed values of one expected parameter.

    One set holds every plain option by value_matches' equality: strings normalised,
    numbers as they are (1 == 1.0), booleans as stand-ins (True is not 1), lists of plain
    values as tuples of those; no two kinds can be equal, so one lookup answers."""

    __slots__ = ("shown", "omissible", "keys", "lists", "others")

    def __init__(self, options: Any) -> None:
        options = options if isinstance(options, list) else [options]
        omissible = lists = False
        keys: Any = set()
        shown: list[Any] = []
        others: list[Any] = []
        for o in options:  # one pass: this runs for every parameter of every question
            t = type(o)
            if t is str:
                if not o:
                    omissible = True  # "" = may be left out; it is no value to match
                    continue
                keys.add(normalize(o))
            elif t is bool:
                keys.add(_TRUE if o else _FALSE)
            elif t is int or t is float:
                if o == o:  # NaN equals nothing
                    keys.add(o)
            elif t is list and (k := _keys(o)) is not None:
                keys.add(k)
                lists = True
            elif o is None:
                omissible = True
                others.append(o)
            elif isinstance(o, str):
                if o == "":
                    omissible = True
                    continue
                keys.add(normalize(o))
            elif isinstance(o, bool):
                keys.add(_TRUE if o else _FALSE)
            elif isinstance(o, (int, float)):
                if o == o:
                    keys.add(o)
            else:
                others.append(o)
            shown.append(o)
        # the ground truth's own list when nothing was left out, and no list for no others: these
        # run once per expected parameter of every question, and the lists they would allocate
        # were a fifth of a cold evaluation's new objects (each one also brings the next GC pass nearer)
        if len(shown) == len(options) and type(options) is list:
            shown = options
        self.shown, self.omissible, self.lists = shown, omissible, lists
        # a few keys as a tuple: the same membership (hash-equal items are ==-equal), a quarter of
        # a set's memory; most expected parameters allow one to three values
        self.keys = tuple(keys) if len(keys) <= _FEW else keys
        self.others = others or ()

    def match(self, value: Any) -> bool:
        t = type(value)
        if t is str:
            return normalize(value) in self.keys
        if t is int or t is float:
            return value in self.keys
        if t is bool:
            return (_TRUE if value else _FALSE) in self.keys
        if t is list and self.lists:
            keys = _keys(value)
            if keys is not None and keys in self.keys:
                return True
        # lists, dicts, null; a subclass of a plain type compares with every option
        return any(value_matches(value, o) for o in (self.shown if isinstance(value, _PLAIN) else self.others))


class ExpectedCall:
    __slots__ = ("name", "alias", "params")

    def __init__(self, name: str, params: Any) -> None:
        self.name, self.alias = name, openai_name(name)
        self.params = {p: Options(o) for p, o in params.items()} if isinstance(params, dict) else {}

    def satisfied_by(self, args: dict[str, Any]) -> bool:
        """Whether arguments (of a call with this name) satisfy this expected call."""
        params = self.params
        for arg, value in args.items():
            if arg not in params and value is not None:
                return False
        for pname, options in params.items():
            value = args.get(pname)
            if value is None:
                if not options.omissible:
                    return False
            elif type(value) is str:
                if normalize(value) not in options.keys:
                    return False
            elif not options.match(value):
                return False
        return True

    def why_not(self, args: dict[str, Any]) -> str:
        """The first reason arguments of a call with this name do not satisfy it."""
        params = self.params
        for arg, value in args.items():
            if arg not in params and value is not None:
                return f"{self.name}: argument {arg!r} is not in the expected call"
        for pname, options in params.items():
            value = args.get(pname)
            if value is not None:
                if not options.match(value):
                    return (f"{self.name}: {pname} = {_ENCODE(value)[:80]} is not an allowed "
                            f"value ({_ENCODE(options.shown)[:160]})")
            elif not options.omissible:
                return f"{self.name}: expected argument {pname!r} is missing"
        return ""


class _WhyNot:
    __slots__ = ("exp", "args")

    def __init__(self, exp: ExpectedCall, args: dict[str, Any]) -> None:
        self.exp, self.args = exp, args

    def __call__(self) -> tuple[str, tuple[str, ...]]:
        return self.exp.why_not(self.args), ()


class Truth:
    """A compiled ground truth: a list of expected calls (``[]``: no call expected)."""

    __slots__ = ("expected", "_allowed")

    def __init__(self, ground_truth: Any) -> None:
        items = ground_truth if isinstance(ground_truth, list) else [ground_truth]
        self.expected = [ExpectedCall(*next(iter(e.items()))) for e in items
                         if isinstance(e, dict) and len(e) == 1 and isinstance(next(iter(e)), str)]
        self._allowed: dict[Any, dict[str, list[Any]]] = {}

    def allowed(self, fname: Any) -> dict[str, list[Any]]:
        """Allowed values per parameter of the expected calls to ``fname`` (merged), for the
        schema check's "variable" rule."""
        out = self._allowed.get(fname)
        if out is None:
            named = [exp for exp in self.expected if exp.name == fname]
            if len(named) == 1:  # the common case: that call's own lists, not copies
                out = {pname: options.shown for pname, options in named[0].params.items()}
            else:
                out = {}
                for exp in named:
                    for pname, options in exp.params.items():
                        out.setdefault(pname, []).extend(options.shown)
            self._allowed[fname] = out
        return out

    def matched(self, calls: list[tuple[str, dict[str, Any]]]) -> bool:
        """Whether ``defects(calls)`` is empty: the same greedy matching, nothing built."""
        expected = self.expected
        if len(expected) != len(calls):
            return False  # an expected call without a call, or a call left over
        if len(expected) == 1:
            exp, (cname, args) = expected[0], calls[0]
            return (cname == exp.name or cname == exp.alias) and exp.satisfied_by(args)
        used: set[int] = set()
        for exp in expected:
            name, alias = exp.name, exp.alias
            for ci, (cname, args) in enumerate(calls):
                if (cname == name or cname == alias) and ci not in used and exp.satisfied_by(args):
                    used.add(ci)
                    break
            else:
                return False
        return True

    def defects(self, calls: list[tuple[str, dict[str, Any]]]) -> list[Defect]:
        """wrong_call defects: expected calls no call satisfies (greedily, in order, each call
        used once), and calls left over."""
        expected = self.expected
        if len(expected) == 1 and len(calls) == 1:  # the common shape, without the loops
            exp, (cname, args) = expected[0], calls[0]
            if cname == exp.name or cname == exp.alias:
                if exp.satisfied_by(args):
                    return []
                first = lazy_defect("wrong_call", _WhyNot(exp, args), None, exp.name)
            else:
                first = quick_defect("wrong_call", f"no call to {exp.name} (expected call 1 of 1)", None, exp.name)
            return [first, quick_defect("wrong_call", f"unexpected call {cname} (expected 1 call)", 0, cname)]
        used: set[int] = set()
        defects: list[Defect] = []
        for gi, exp in enumerate(expected):
            check_time()  # up to 256 x 256 pairs, each as long as its arguments: within the check's deadline
            name, alias = exp.name, exp.alias
            for ci, (cname, args) in enumerate(calls):
                if (cname == name or cname == alias) and ci not in used and exp.satisfied_by(args):
                    used.add(ci)
                    break
            else:  # worded against the first unused call of that name, if any
                same = next((args for ci, (cname, args) in enumerate(calls)
                             if ci not in used and (cname == name or cname == alias)), None)
                if same is not None:  # worded when read
                    defects.append(lazy_defect("wrong_call", _WhyNot(exp, same), None, name))
                else:
                    defects.append(quick_defect("wrong_call", f"no call to {name} (expected call {gi + 1} of "
                                                f"{len(expected)})", None, name))
        if len(used) < len(calls):
            plural = "s" if len(expected) != 1 else ""
            defects += [quick_defect("wrong_call", f"unexpected call {name} (expected {len(expected)} call{plural})",
                                     ci, name) for ci, (name, _) in enumerate(calls) if ci not in used]
        return defects
