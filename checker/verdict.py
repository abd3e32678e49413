"""The result types every checker returns: a `Verdict` holding `Defect`s."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Most severe first. A verdict is the most severe defect kind found, so one list
# orders both the JSON-call and the code-style vocabularies.
CALL_SEVERITY = ("unparsable", "hallucinated_tool", "hallucinated_param", "missing_required",
                 "type_error", "enum_violation", "wrong_call")
CODE_VERDICTS = ("unparsable", "hallucinated", "wrong_api", "correct", "valid")
OK_VERDICTS = frozenset({"correct", "valid"})


@dataclass(frozen=True)
class Defect:
    """One thing wrong with a call (or, for code, one unmatched call)."""

    kind: str
    message: str
    call_index: int | None = None
    name: str | None = None
    param: str | None = None
    suggestions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "message": self.message}
        for key in ("call_index", "name", "param"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.suggestions:
            out["suggestions"] = list(self.suggestions)
        return out


@dataclass(frozen=True)
class Verdict:
    """What the checker concluded about one model output.

    ``api`` is the matched catalog record id (for hallucinations: the nearest one,
    also named in ``nearest``); ``details`` holds mode-specific extras (the call
    text checked, what differs from the nearest API, the Gorilla domain, ...).
    """

    verdict: str
    ok: bool
    api: str | None = None
    defects: tuple[Defect, ...] = ()
    suggestions: tuple[str, ...] = ()
    nearest: str | None = None
    call: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "ok": self.ok}
        if self.api is not None:
            out["api"] = self.api
        if self.nearest is not None:
            out["nearest"] = self.nearest
        if self.call is not None:
            out["call"] = self.call
        out["defects"] = [d.to_dict() for d in self.defects]
        if self.suggestions:
            out["suggestions"] = list(self.suggestions)
        out.update({k: v for k, v in self.details.items() if k not in out})
        return out


def make(verdict: str, **kwargs: Any) -> Verdict:
    """A Verdict whose ``ok`` follows from its name; lists become tuples (frozen)."""
    kwargs["defects"] = tuple(kwargs.get("defects", ()))
    kwargs["suggestions"] = tuple(kwargs.get("suggestions", ()))
    return Verdict(verdict=verdict, ok=verdict in OK_VERDICTS, **kwargs)


def most_severe(kinds: list[str], default: str) -> str:
    """The most severe of ``kinds`` by CALL_SEVERITY, or ``default`` if none counts."""
    ranked = [k for k in CALL_SEVERITY if k in kinds]
    return ranked[0] if ranked else default


# The generated __init__ of a frozen dataclass sets each field with object.__setattr__,
# which costs more than a whole checked parameter (~2 µs per object on the project's
# machines). The checkers build one Verdict per output, so they fill __dict__ directly,
# with only the fields that differ from their class defaults (a field left out reads the
# default); the objects are the same (frozen, equal, same repr) as the constructor's.
_new = object.__new__


def quick_verdict(verdict: str, ok: bool, api: str | None, defects: tuple[Defect, ...],
                  details: dict[str, Any], suggestions: tuple[str, ...] = ()) -> Verdict:
    """``Verdict(verdict, ok, api, defects, suggestions, details=details)``, faster."""
    v = _new(Verdict)
    d = v.__dict__
    d["verdict"] = verdict
    d["ok"] = ok
    d["details"] = details
    if api is not None:
        d["api"] = api
    if defects:
        d["defects"] = defects
    if suggestions:
        d["suggestions"] = suggestions
    return v


def quick_defect(kind: str, message: str, call_index: int | None = None, name: str | None = None,
                 param: str | None = None, suggestions: tuple[str, ...] = ()) -> Defect:
    """``Defect(kind, message, call_index, name, param, suggestions)``, faster."""
    d = _new(Defect)
    d.__dict__.update(kind=kind, message=message, call_index=call_index, name=name, param=param,
                      suggestions=suggestions)
    return d


# Spelling suggestions cost more than checking a call (difflib over the doc's names),
# and most consumers only read the verdict. Strict mode therefore attaches them as a
# closure, run on first read of ``message``/``suggestions`` (to_dict, repr, ==, the CLI
# all read them). The objects are otherwise the frozen dataclasses above; copied or
# pickled, they become plain ones (``__reduce__``) with everything worked out.
class LazyDefect(Defect):
    """A Defect whose message and suggestions are worked out when first read."""

    def _words(self) -> tuple[str, tuple[str, ...]]:
        words = self.__dict__.get("_said")
        if words is None:  # two threads may both work them out: the same words
            words = self.__dict__["_said"] = self.__dict__["_explain"]()
        return words

    @property  # type: ignore[override]
    def message(self) -> str:
        return self._words()[0]

    @property  # type: ignore[override]
    def suggestions(self) -> tuple[str, ...]:
        return self._words()[1]

    def __reduce__(self) -> tuple[Any, ...]:
        return Defect, (self.kind, self.message, self.call_index, self.name, self.param, self.suggestions)


def lazy_defect(kind: str, explain: Any, call_index: int | None = None, name: str | None = None,
                param: str | None = None) -> Defect:
    """A Defect whose (message, suggestions) come from ``explain()`` on first read."""
    d = _new(LazyDefect)
    d.__dict__.update(kind=kind, call_index=call_index, name=name, param=param, _explain=explain)
    return d


class LazyVerdict(Verdict):
    """A Verdict whose suggestions (those of its hallucinated-tool defects, in order, once
    each) are gathered when first read; and, when strict mode decided the verdict without
    building its defects (checker/strict_plan.py), whose defects are found when first read."""

    @property  # type: ignore[override]
    def defects(self) -> tuple[Defect, ...]:
        found = self.__dict__.get("_defects")
        if found is None:
            found = self.__dict__["_defects"] = tuple(self.__dict__["_find"]())
        return found

    @property  # type: ignore[override]
    def suggestions(self) -> tuple[str, ...]:
        cached = self.__dict__.get("_suggestions")
        if cached is None:
            cached = self.__dict__["_suggestions"] = tuple(dict.fromkeys(
                s for d in self.defects if d.kind == "hallucinated_tool" for s in d.suggestions))
        return cached

    def __reduce__(self) -> tuple[Any, ...]:
        return Verdict, (self.verdict, self.ok, self.api, self.defects, self.suggestions, self.nearest, self.call,
                         self.details)


def lazy_verdict(verdict: str, ok: bool, api: str | None, defects: tuple[Defect, ...] | None,
                 details: dict[str, Any], find: Any = None) -> Verdict:
    """``quick_verdict`` whose suggestions are gathered from its defects when first read;
    with ``defects=None``, the defects are ``find()``'s, called on first read."""
    v = _new(LazyVerdict)
    d = v.__dict__
    d["verdict"] = verdict
    d["ok"] = ok
    d["details"] = details
    if api is not None:
        d["api"] = api
    if defects is None:
        d["_find"] = find
    else:
        d["_defects"] = defects
    return v
