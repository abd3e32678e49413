"""A router seen through some namespaces only: what one tenant may be offered (issue 17).

`ScopedRouter(router, namespaces)` answers like the router it wraps, but every selection is
made among the records of those namespaces: the namespace filter goes into `Router.select`,
which applies it *before* ranking, so another namespace's tool can never be ranked, pinned,
explained or counted. Pins and candidates outside the scope are dropped (never an error: an
error would name them), and a namespace the catalog does not hold is simply not there (the
engine's "unknown namespace" error lists the catalog's namespaces, which would tell one
tenant the others' names).

It shares the wrapped router's indexes: nothing is copied but the list of visible records.
"""
from __future__ import annotations

from typing import Any, Collection, Iterable

from ..ranking.selection import SelectionList


class ScopedRouter:
    """``router`` restricted to ``namespaces`` (None: all of them, i.e. no restriction)."""

    def __init__(self, router: Any, namespaces: Iterable[str] | None) -> None:
        self.base = router
        known = router.namespaces()
        wanted = None if namespaces is None else set(namespaces)
        self.allowed: list[str] = [n for n in known if wanted is None or n in wanted]
        self.unrestricted = len(self.allowed) == len(known)
        visible = set(self.allowed)
        self.records = router.records if self.unrestricted else [r for r in router.records if r.namespace in visible]
        self._ids = {r.id for r in self.records}
        self._by_name: dict[str, list[str]] = {}
        self._base_names: set[str] | None = None
        for r in self.records:
            for key in {r.name, r.openai_name()}:
                self._by_name.setdefault(key, []).append(r.id)

    def __getattr__(self, name: str) -> Any:  # model_id, config, warnings, embedder, dense_index ...
        if name == "base":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.base, name)

    def __len__(self) -> int:
        return len(self.records)

    def namespaces(self) -> list[str]:
        return list(self.allowed)

    def get(self, record_id: str) -> Any:
        return self.base.get(record_id) if record_id in self._ids else None

    def select(self, query_or_messages: Any, k: int = 5, *, pinned: Collection[str] = (),
               include_namespaces: Collection[str] | None = None,
               exclude_namespaces: Collection[str] | None = None,
               candidates: Collection[str] | None = None, **options: Any) -> SelectionList:
        """`Router.select` among this scope's records (the same options)."""
        spaces = list(self.allowed)
        if include_namespaces is not None:
            wanted = {include_namespaces} if isinstance(include_namespaces, str) else set(include_namespaces)
            spaces = [n for n in spaces if n in wanted]
        if exclude_namespaces is not None:
            dropped = {exclude_namespaces} if isinstance(exclude_namespaces, str) else set(exclude_namespaces)
            spaces = [n for n in spaces if n not in dropped]
        if candidates is not None:
            candidates = [c for c in ([candidates] if isinstance(candidates, str) else candidates) if c in self._ids]
        if not spaces or candidates == []:
            return SelectionList([])
        pins = [rid for p in ([pinned] if isinstance(pinned, str) else pinned) for rid in self._pin_ids(p)]
        full = self.unrestricted and len(spaces) == len(self.allowed)
        return self.base.select(query_or_messages, k, pinned=list(dict.fromkeys(pins)),
                                include_namespaces=None if full else spaces, candidates=candidates, **options)

    def foreign(self, pin: str) -> bool:
        """Whether ``pin`` (an id or a tool name) names only catalog tools outside this scope: a
        proxy-wide pin of another tenant's tool, which must mean nothing here (not even when a
        request brings a tool of that name: ``"reason": "pinned"`` would confirm it)."""
        if self.unrestricted or self._pin_ids(pin):
            return False
        if self._base_names is None:
            self._base_names = {key for r in self.base.records for key in (r.id, r.name, r.openai_name())}
        return pin in self._base_names

    def _pin_ids(self, pin: str) -> list[str]:
        """The record ids a pin (an id or a tool name) means inside this scope."""
        return [pin] if pin in self._ids else self._by_name.get(pin, [])
