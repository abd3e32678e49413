"""Tool names a model accepts, and unique names for tools offered together.

OpenAI (and most providers) accept a function name only if it matches ``^[a-zA-Z0-9_-]{1,64}$``.
Catalog names do not always (Gorilla's ``torch.hub.load``, MCP's ``files/read``), and two
namespaces may hold the same name, so every way in that offers catalog records to a model
names them here:

- `unique_names` names a fixed set at once (the proxy's injected tools): a name shared inside
  the set is qualified with its namespace for every record that has it, so the model sees
  no favourite; a clash left after that is numbered. Given the catalog's namesakes of each
  record, a name several catalog tools share (Gorilla's 31 ``model_id``) becomes the name plus
  the words of the record's call that tell it apart (``Densenet_densenet121``).
- `ToolNamer` names a set that grows during a run (the reference loop): a record keeps the name
  it was first shown under, and a later record whose plain name is taken is qualified, then
  numbered, so earlier turns of the conversation stay valid.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

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


_LITERAL = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
_CALLEE = re.compile(r"\s*(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\s*\(")
_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://[^/]*/?", re.I)


def _call_words(record: Any) -> list[str]:
    """The words of a record's call: the callee, then its string literals' (``torch.hub.load('pytorch/vision',
    model='densenet121')`` -> load, pytorch, vision, densenet121); a URL loses its host, a version its number."""
    call = getattr(record, "call", None) or ""
    head = _CALLEE.match(call)  # hub.load vs hub.KerasLayer of the same URL: the callee tells them apart
    words: list[str] = [head.group(1)] if head else []
    for a, b in _LITERAL.findall(call):
        for word in _HOST.sub("", a or b).split("/"):
            if word and not word.isdigit() and word not in words:
                words.append(word)
    return words


def variant_name(record: Any, siblings: Sequence[Any]) -> str | None:
    """A name for ``record`` among ``siblings`` (the catalog's records of the same name): its name and
    the words of its call that its siblings' calls do not all share (``Densenet`` -> ``Densenet_densenet121``,
    ``model_id`` -> ``model_id_inception_v3``); None when its call tells it apart by nothing."""
    mine = _call_words(record)
    common = set.intersection(*(set(_call_words(s)) for s in siblings)) if siblings else set()
    name = openai_name(record.name)
    extra = [w for w in mine if w not in common and _plain(w) not in _plain(name)]
    if not extra:
        return None
    return openai_safe("_".join([name, *extra[-3:]]))  # a path's last words are its most specific


def _plain(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def unique_names(records: Sequence[Named], siblings: Callable[[Named], Sequence[Any]] | None = None) -> list[str]:
    """One name per record, unique in the set (see the module doc). ``siblings(record)``: the catalog's
    records that share its name; a record whose name is shared there (Gorilla's 31 ``model_id`` tools,
    4 ``Densenet``) is named by what its call adds (`variant_name`), not by a number."""
    plain = [openai_name(r.name) for r in records]
    if siblings is not None:
        for i, r in enumerate(records):
            group = siblings(r)
            if len(group) > 1:
                plain[i] = variant_name(r, group) or plain[i]
    out: list[str] = []
    taken: set[str] = set()
    for r, name in zip(records, plain):
        holders = {records[i].namespace for i, p in enumerate(plain) if p == name}
        # qualified when the name is shared (across namespaces, when the catalog's siblings were asked:
        # within one namespace its prefix would only push the telling words past 64 characters)
        if len(holders) > 1 or (siblings is None and plain.count(name) > 1):
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
