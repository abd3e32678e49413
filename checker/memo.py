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

    def get(self, functions: Any, ground_truth: Any, extra: Any = None) -> T | None:
        """The value compiled from these objects, if it is still theirs."""
        hit = self._entries.get((id(functions), id(ground_truth), extra))
        if hit is not None:
            f, g, f_copy, g_copy, value = hit
            if f is functions and g is ground_truth and (f_copy is None or f == f_copy) \
                    and (g_copy is None or g == g_copy):
                return value
        return None

    def put(self, functions: Any, ground_truth: Any, extra: Any, value: T) -> T:
        if len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        self._entries[(id(functions), id(ground_truth), extra)] = \
            (functions, ground_truth, _copy(functions), _copy(ground_truth), value)
        return value

    def clear(self) -> None:
        self._entries.clear()
