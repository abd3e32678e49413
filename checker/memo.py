"""Compiled questions, remembered while the same docs and answers come back.

Both JSON-call modes compile function docs and a ground truth before checking, and an
evaluation (or a proxy) checks many outputs against the same ones. An entry is found by
the identity of the two objects and holds them (so an id is never reused for another
object while the entry lives), plus a shallow copy of each list: a list that gained,
lost or swapped items since is compiled again (the router appends a restored tool to the
list it passed). Comparing a list with its copy is cheap when nothing changed: list
equality tests identity first. A doc dict changed in place after it was checked is not
noticed: pass a new dict.
"""
from __future__ import annotations

from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _copy(obj: Any) -> Any:
    return list(obj) if type(obj) is list else None


class Memo(Generic[T]):
    """A bounded map from (functions, ground_truth, extra) to a compiled T (oldest dropped first)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: dict[Any, tuple[Any, Any, Any, Any, T]] = {}
        # the entry found last, with its extra: an evaluation checks a question's outputs in a row
        self._last: tuple[Any, tuple[Any, Any, Any, Any, T]] | None = None

    def get(self, functions: Any, ground_truth: Any, extra: Any = None) -> T | None:
        """The value compiled from these objects, if it is still theirs."""
        last = self._last
        hit = last[1] if last is not None and last[0] == extra else None
        if hit is None or hit[0] is not functions or hit[1] is not ground_truth:
            hit = self._entries.get((id(functions), id(ground_truth), extra))
            if hit is None or hit[0] is not functions or hit[1] is not ground_truth:
                return None
        f_copy, g_copy = hit[2], hit[3]
        if (f_copy is None or functions == f_copy) and (g_copy is None or ground_truth == g_copy):
            self._last = (extra, hit)
            return hit[4]
        return None

    def put(self, functions: Any, ground_truth: Any, extra: Any, value: T) -> T:
        if len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        hit = (functions, ground_truth, _copy(functions), _copy(ground_truth), value)
        self._entries[(id(functions), id(ground_truth), extra)] = hit
        self._last = (extra, hit)
        return value

    def clear(self) -> None:
        self._entries.clear()
        self._last = None
