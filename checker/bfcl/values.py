"""One parameter under BFCL's rules: decode, type-check, compare with the possible answer.

The official checker (``ast_checker.py`` of bfcl-eval) decides a parameter in this
order, and the first failure is the verdict:

1. Java/JavaScript: the value must be a string of source text (else
   ``type_error:java``/``type_error:js``), decoded by the declared type.
   Python: an int given for a ``float`` becomes a float (top level only, so an int
   inside a list of floats still fails).
2. Type: the value's exact type must be the declared one (a bool is not an int),
   or the type of the first non-``""`` possible answer. The second case is BFCL's
   "variable" rule (the answer is a variable name written as a string); it also
   switches off the normalised comparisons below. Lists are checked one level deep
   against each possible answer in turn (``type_error:nested``).
3. Value: strings compare after ``standardize`` (no spaces or ``,./-_*^``, lower
   case, ``'`` read as ``"``); lists compare element-wise with their string items
   standardised; dicts compare key by key against each possible answer (a key whose
   answers include ``""`` may be left out); anything else must be ``in`` the
   possible answers, with Python's ``==`` (so 1 == 1.0 == True).

Enums are never read. Everything that depends only on the doc and the possible
answer is computed once per rule (BFCL recomputes it for every output), which is
most of why this is faster than the reference.
"""
from __future__ import annotations

from typing import Any

from . import java, javascript
from .errors import BfclInputError

PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool,
                                 "array": list, "tuple": list, "dict": dict, "any": str}
PYTHON_NESTED = frozenset({"array", "tuple"})
_TABLES = {"python": (PYTHON_TYPES, PYTHON_NESTED), "java": (java.JAVA_TYPES, java.NESTED),
           "javascript": (javascript.JS_TYPES, javascript.NESTED)}
_DECODERS = {"java": java.decode, "javascript": javascript.decode}
_SOURCE_TYPE_ERROR = {"java": "type_error:java", "javascript": "type_error:js"}

_DROP = str.maketrans("", "", " ,./-_*^")
SPECIAL = "special"  # check() result: valid, and decided by a normalised comparison
CRASH = "toolsift:reference_crash"  # a value the official checker raises on
_UNSET = object()
_NO_STRINGS: frozenset[str] = frozenset()
_DICT, _LIST_DICT, STRING, _LIST, _OTHER = range(5)


_SEEN: dict[str, str] = {}  # model strings recur across outputs of a question: remember a few


def standardize(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lower-case, ``'`` -> ``"``."""
    out = _SEEN.get(text)
    if out is None:
        out = text.translate(_DROP).lower().replace("'", '"')
        if len(_SEEN) >= 65536:
            _SEEN.clear()
        _SEEN[text] = out
    return out


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Words:
    """A failure's message, written when first read: ``template`` formatted with ``args``, where
    a ``Shown`` arg is a value's short repr and a Words arg another message. Most failures are
    counted, not read, and writing them (reprs of model values) cost a tenth of a check.
    Called, it gives (message, no suggestions), as verdict.lazy_defect wants."""

    __slots__ = ("template", "args")

    def __init__(self, template: str, *args: Any) -> None:
        self.template, self.args = template, args

    def __str__(self) -> str:
        return self.template.format(*self.args)

    def __call__(self) -> tuple[str, tuple[str, ...]]:
        return str(self), ()


class Shown:
    """A value in a message: its repr, cut at 80 characters."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        return _short(self.value)


class ParamRule:
    """A parameter's declared type and possible answers, prepared for many checks."""

    __slots__ = ("param", "declared", "conv", "item_declared", "item_conv", "options", "answer_type",
                 "variable", "kind", "language", "int_to_float", "strings", "fast", "_lists", "_dicts", "_item_plan")

    def __init__(self, param: str, schema: Any, options: list[Any], language: str) -> None:
        table, nested = _TABLES[language]
        if not isinstance(schema, dict) or "type" not in schema:
            raise BfclInputError(f"parameter {param!r}: its doc has no 'type'")
        declared = schema["type"]
        conv = table.get(declared) if isinstance(declared, str) else None
        if conv is None:
            raise BfclInputError(f"parameter {param!r}: type {declared!r} is not a BFCL {language} type "
                                 f"(choose from: {', '.join(table)})")
        item_declared = item_conv = None
        if declared in nested:
            items = schema.get("items")
            item_declared = items.get("type") if isinstance(items, dict) else None
            item_conv = table.get(item_declared) if isinstance(item_declared, str) else None
            if item_conv is None:
                raise BfclInputError(f"parameter {param!r}: a {declared} needs items.type, one of "
                                     f"{', '.join(table)} (got {item_declared!r})")
        self.param, self.declared, self.conv = param, declared, conv
        self.item_declared, self.item_conv = item_declared, item_conv
        self.options, self.language = options, language
        self.int_to_float = language == "python" and declared == "float"
        # the type of the first answer that is not "" (may be omitted) stands for a variable
        self.answer_type = None
        for o in options:
            if o != "":
                self.answer_type = type(o)
                break
        self.variable = self.answer_type is not None and self.answer_type is not conv
        if conv is dict:
            self.kind = _DICT
        elif conv is list:
            self.kind = _LIST_DICT if item_conv is dict else _LIST
        else:
            self.kind = STRING if conv is str else _OTHER
        # only a string parameter compares normalised strings (this runs for every parameter)
        self.strings = frozenset([standardize(o) for o in options if type(o) is str]) if conv is str else _NO_STRINGS
        # the type whose values need no decoding, conversion or nested check: callers may
        # decide those inline (FunctionRule.check); None matches no value's type
        plain = language == "python" and item_conv is None and not self.variable and self.kind in (STRING, _OTHER)
        self.fast = conv if plain else None
        self._lists: list[list[Any]] | None = None
        self._dicts: dict[int, tuple[dict[Any, list[Any]], list[Any]]] | None = None
        # per possible answer: None (not a list: any items pass) or the type its items stand for
        self._item_plan = [next((type(x) for x in o if x != ""), _UNSET) if type(o) is list else None
                           for o in options] if item_conv is not None else []

    # -- the check ----------------------------------------------------------------------
    def check(self, value: Any) -> tuple[str, Words] | str | None:
        """None (valid), SPECIAL (valid by a normalised comparison) or (error_type, message)."""
        language = self.language
        if language == "python":
            if self.int_to_float and type(value) is int:
                try:
                    value = float(value)
                except OverflowError:
                    return CRASH, Words("{}: {} is too large for a float (BFCL raises)", self.param, Shown(value))
            elif type(value) is tuple and self.declared == "tuple":
                value = list(value)
        else:
            if type(value) is not str:
                return (_SOURCE_TYPE_ERROR[language], Words("{}: a {} value is written as a string of source text, "
                        "got {} {}", self.param, language, type(value).__name__, Shown(value)))
            try:
                value = _DECODERS[language](value, self.declared, self.item_declared)
            except BfclInputError:
                raise
            except (ValueError, OverflowError):
                return CRASH, Words("{}: {} cannot be decoded as {} (BFCL raises)", self.param, Shown(value),
                                    self.declared)
        t = type(value)
        if t is self.conv:
            if self.item_conv is not None and not self._items_ok(value):
                kind = "type_error:nested" if t is self.answer_type else "type_error:simple"
                return kind, Words("{}: items of {} should be {} (or the possible answer's item type)", self.param,
                                   Shown(value), self.item_conv.__name__)
            variable = self.variable
        elif t is self.answer_type:
            variable = True
        else:
            return "type_error:simple", Words("{} should be {}, got {} {}", self.param, self.declared, t.__name__,
                                              Shown(value))
        if not variable:
            kind = self.kind
            if kind == STRING:
                if standardize(value) in self.strings:
                    return SPECIAL
                return "value_error:string", self._not_allowed(value, "after normalisation")
            if kind == _LIST:
                if [_std(x) for x in value] in self._std_lists():
                    return SPECIAL
                return "value_error:list/tuple", self._not_allowed(value, "item by item, strings normalised")
            if kind == _DICT:
                error = self._dict_error(value, self.options)
                return SPECIAL if error is None else (error, self._not_allowed(value, "key by key"))
            if kind == _LIST_DICT:
                error = self._list_dict_error(value)
                return SPECIAL if error is None else (error, self._not_allowed(value, "dict by dict"))
        if value in self.options:
            return None
        return "value_error:others", self._not_allowed(value, "exactly")

    def _not_allowed(self, value: Any, how: str) -> Words:
        return Words("{} = {} is not an allowed value ({}): {}", self.param, Shown(value), how,
                     Shown([o for o in self.options if o != ""]))

    def _items_ok(self, value: list[Any]) -> bool:
        conv = self.item_conv
        for item_type in self._item_plan:
            if item_type is None:
                return True  # upstream passes any possible answer that is not a list
            for item in value:
                t = type(item)
                if t is not conv and t is not item_type:
                    break
            else:
                return True
        return False

    # -- lists and dicts: possible answers prepared on first use (and only if reached, as
    #    upstream: an answer of an unusable shape only matters when a value gets that far)
    def _std_lists(self) -> list[list[Any]]:
        if self._lists is None:
            lists = []
            for o in self.options:
                if not isinstance(o, (list, str)) and o != {}:
                    raise BfclInputError(f"possible answer for {self.param!r}: {_short(o)} is not a list "
                                         "(the official checker raises)")
                lists.append([_std(x) for x in o])
            self._lists = lists
        return self._lists

    def _dict_answer(self, answer: Any) -> tuple[dict[Any, list[Any]], list[Any]]:
        key = id(answer)
        if self._dicts is None:
            self._dicts = {}
        prepared = self._dicts.get(key)
        if prepared is None:
            if not isinstance(answer, dict) or not all(isinstance(v, (list, str)) for v in answer.values()):
                raise BfclInputError(f"possible answer for {self.param!r}: {_short(answer)} is not a dict "
                                     "of allowed-value lists (the official checker raises)")
            prepared = ({k: [_std(x) for x in v] for k, v in answer.items()},
                        [k for k, v in answer.items() if "" not in v])
            self._dicts[key] = prepared
        return prepared

    def _dict_error(self, value: Any, answers: list[Any]) -> str | None:
        """BFCL's dict rule; None if ``value`` matches one of ``answers``, else the error type."""
        error = "dict_checker:unclear"
        for answer in answers:
            if answer == "":
                continue
            if type(value) is not dict:
                return CRASH  # upstream calls .items() on it
            allowed, needed = self._dict_answer(answer)
            error = None
            for key, v in value.items():
                options = allowed.get(key, _UNSET)
                if options is _UNSET:
                    error = "value_error:dict_key"
                    break
                if _std(v) not in options:
                    error = "value_error:dict_value"
                    break
            for key in needed:  # runs even after a failure, and its error wins
                if key not in value:
                    error = "value_error:dict_key"
                    break
            if error is None:
                return None
        return error

    def _list_dict_error(self, value: list[Any]) -> str | None:
        error = "list_dict_checker:unclear"
        for answer in self.options:
            if not isinstance(answer, (list, str)):
                raise BfclInputError(f"possible answer for {self.param!r}: {_short(answer)} is not a list "
                                     "of dicts (the official checker raises)")
            if len(value) != len(answer):
                error = "value_error:list_dict_count"
                continue
            for item, item_answer in zip(value, answer):
                error = self._dict_error(item, [item_answer])
                if error is not None:
                    break
            else:
                return None
        return error
