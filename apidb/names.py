"""Tool names a model accepts, and unique names for tools offered together.

OpenAI (and most providers) accept a function name only if it matches ``^[a-zA-Z0-9_-]{1,64}$``.
Catalog names do not always (Gorilla's ``torch.hub.load``, MCP's ``files/read``), and two
namespaces may hold the same name, so every way in that offers catalog records to a model
names them here:

- `unique_names` names a fixed set at once (the proxy's injected tools): a name shared inside
  the set is qualified with its namespace for every record that has it, so the model sees
  no favourite; a clash left after that is numbered. Given the catalog's namesakes of each
  record, a name several catalog tools share (Gorilla's 31 ``model_id``) becomes the name plus
  the words of the record's call that tell it apart (``Densenet_densenet121``); namesakes whose
  call words are the same, or which have none, are told apart by the rest of the call (a version:
  ``movenet_v3``, a callee, a keyword) or by their descriptions, and numbered only when nothing
  differs.
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


_CALLEES = re.compile(r"([A-Za-z_]\w*)\s*\(")
_KEYWORDS = re.compile(r"[(,]\s*([A-Za-z_]\w*)\s*=(?!=)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
# words that tell no tool from another: articles, and the verbs catalog descriptions open with
_COMMON = frozenset("""a an and any api are as at be by can for from how in into is it its model models of on
or pre that the this to trained use used using which with you your also allows available based been designed
has have provides such was were""".split())
MAX_EXTRA = 3  # words a told-apart name adds at most


def _detail_words(record: Any) -> list[str]:
    """Everything a call says, for telling namesakes with the same call words apart: its callees, its
    keyword names, its literals' path segments with a version number as ``v4``."""
    call = getattr(record, "call", None) or ""
    words: list[str] = []
    for word in [*_CALLEES.findall(call), *_KEYWORDS.findall(call)]:
        if word not in words:
            words.append(word)
    for a, b in _LITERAL.findall(call):
        for part in _HOST.sub("", a or b).split("/"):
            word = f"v{part}" if part.isdigit() else part
            if word and word not in words:
                words.append(word)
    return words


def _description_words(record: Any) -> list[str]:
    seen: list[str] = []
    for word in _WORD.findall(getattr(record, "description", None) or ""):
        word = word.lower()
        if word not in _COMMON and word not in seen:
            seen.append(word)
    return seen


def _apart(mine: list[str], others: list[set[str]], name: str, budget: int) -> list[str]:
    """Words of ``mine`` (in order) that rule out ``others`` one after another, at most ``budget``."""
    picked: list[str] = []
    left = list(others)
    for word in mine:
        if not left or len(picked) == budget:
            break
        if _plain(word) in _plain(name) or all(word in o for o in left):
            continue
        picked.append(word)
        left = [o for o in left if word in o]
    return picked


def _first_names(siblings: Sequence[Any]) -> dict[str, str]:
    return {s.id: variant_name(s, siblings) or openai_name(s.name) for s in siblings}


def told_apart(record: Any, siblings: Sequence[Any], first: dict[str, str] | None = None) -> str | None:
    """`variant_name`, and when that still leaves ``record`` with the name of some of its siblings (their
    calls' words are the same, or there are none: ``hub.KerasLayer(model_id)``), the name plus what tells
    it apart from those: the rest of its call (callees, keywords, a version as ``v4``), else words of
    its description; a record whose call names nothing is named by its description. Only namesakes in
    its own namespace count: the others differ by namespace. None when nothing tells it apart (true
    duplicates keep the plain name, then get a number)."""
    first = first if first is not None else _first_names(siblings)
    name = first.get(record.id) or variant_name(record, siblings) or openai_name(record.name)
    # namesakes in other namespaces are told apart by their namespace (`unique_names` qualifies them)
    same = [s for s in siblings if s.id != record.id and s.namespace == record.namespace]
    clash = [s for s in same if first.get(s.id) == name]
    extra: list[str] = []
    if same and not _LITERAL.search(getattr(record, "call", None) or ""):
        # a call that names nothing (``hub.KerasLayer(model_id)``), or none at all: its description tells
        name = openai_name(record.name)
        extra = _apart(_description_words(record), [set(_description_words(s)) for s in same], name, MAX_EXTRA)
    elif clash:
        extra = _apart(_detail_words(record), [set(_detail_words(s)) for s in clash], name, MAX_EXTRA)
        if not extra:
            extra = _apart(_description_words(record), [set(_description_words(s)) for s in clash], name,
                           MAX_EXTRA)
    if not extra:
        return name if name != openai_name(record.name) else None
    suffix = openai_safe("_".join(extra), None)[:MAX_NAME - 2]
    return f"{name[:MAX_NAME - len(suffix) - 1]}_{suffix}"


def unique_names(records: Sequence[Named], siblings: Callable[[Named], Sequence[Any]] | None = None) -> list[str]:
    """One name per record, unique in the set (see the module doc). ``siblings(record)``: the catalog's
    records that share its name; a record whose name is shared there (Gorilla's 31 ``model_id`` tools,
    4 ``Densenet``) is named by what its call adds (`variant_name`), not by a number."""
    plain = [openai_name(r.name) for r in records]
    if siblings is not None:
        firsts: dict[tuple[str, ...], dict[str, str]] = {}  # per namesake group: its `variant_name`s
        for i, r in enumerate(records):
            group = siblings(r)
            if len(group) > 1:
                ids = tuple(s.id for s in group)
                if ids not in firsts:
                    firsts[ids] = _first_names(group)
                plain[i] = told_apart(r, group, firsts[ids]) or plain[i]
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
