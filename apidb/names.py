"""Tool names a model accepts, and unique names for tools offered together.

OpenAI (and most providers) accept a function name only if it matches ``^[a-zA-Z0-9_-]{1,64}$``.
Catalog names do not always (Gorilla's ``torch.hub.load``, MCP's ``files/read``), and two
namespaces may hold the same name, so every way in that offers catalog records to a model
names them here:

- `unique_names` names a fixed set at once (the proxy's injected tools): a name shared inside
  the set is qualified with its namespace for every record that has it, so the model sees
  no favourite; a clash left after that is numbered.
- `ToolNamer` names a set that grows during a run (the reference loop): a record keeps the name
  it was first shown under, and a later record whose plain name is taken is qualified, then
  numbered, so earlier turns of the conversation stay valid.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Protocol

MAX_NAME = 64
SEPARATOR = "__"  # between a namespace and a tool name
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


class Named(Protocol):
    id: str
    namespace: str
    name: str


def openai_safe(name: str, limit: int | None = MAX_NAME) -> str:
    """``name`` with every character outside ``[a-zA-Z0-9_-]`` replaced by ``_`` (and cut to ``limit``)."""
    safe = _INVALID.sub("_", name)
    return safe if limit is None else safe[:limit]


@functools.lru_cache(maxsize=1 << 16)  # every router (and every swap of a live one) asks again for each record
def openai_name(name: str) -> str:
    """The name a model is shown for a catalog name: OpenAI-safe, 1 to 64 characters."""
    return openai_safe(name) or "tool"


def qualified_name(namespace: str, name: str) -> str:
    """``namespace__name``, OpenAI-safe."""
    return openai_safe(f"{namespace}{SEPARATOR}{name}")


def _numbered(base: str, taken: Iterable[str] | set[str]) -> str:
    taken = taken if isinstance(taken, set) else set(taken)
    name, n = base, 2
    while name in taken:
        name = f"{base[:MAX_NAME - 4]}_{n}"
        n += 1
    return name


def unique_names(records: Sequence[Named]) -> list[str]:
    """One name per record, unique in the set (see the module doc)."""
    plain = [openai_name(r.name) for r in records]
    out: list[str] = []
    taken: set[str] = set()
    for r, name in zip(records, plain):
        if plain.count(name) > 1:
            name = qualified_name(r.namespace, name)
        name = _numbered(name, taken)
        out.append(name)
        taken.add(name)
    return out


class ToolNamer:
    """Stable, unique names for a growing set of records (see the module doc)."""

    def __init__(self) -> None:
        self.by_name: dict[str, Named] = {}
        self._name_of: dict[str, str] = {}

    def name(self, record: Named) -> str:
        if record.id in self._name_of:
            return self._name_of[record.id]
        name = openai_name(record.name)
        if name in self.by_name:  # the same name from another namespace: qualify it
            name = _numbered(qualified_name(record.namespace, record.name), self.by_name.keys())
        self.by_name[name] = record
        self._name_of[record.id] = name
        return name
