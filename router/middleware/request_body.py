"""Reading a Chat Completions request body without materializing its tool list.

A request that carries a whole catalog (2k tools, ~1 MB of JSON) becomes ~100k Python
objects when parsed the usual way; building them, collecting them and freeing them was
most of the proxy's CPU per request. Routing only needs each tool's name and description
(and the full schema of the few tools it keeps), so `read_request` keeps every tool as its
raw JSON bytes (msgspec still checks their syntax) and decodes a tool in full only when
something asks for it.

An agent sends the same tools with every turn: a tool list already read (same bytes, by
sha256) reuses its split and names (`_SEEN`, a few lists), saving the two passes over ~1 MB.
"""
from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from typing import Any, Iterator, Literal, overload

import msgspec

from .errors import WireError
from .tool_cache import LRU


class _FunctionHead(msgspec.Struct):
    name: str
    description: Any = None  # the router reads it when it is a string; a request may send anything


class _ToolHead(msgspec.Struct):
    function: _FunctionHead
    type: Literal["function"] = "function"


_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_HEADS = msgspec.json.Decoder(list[_ToolHead])
_HEAD = msgspec.json.Decoder(_ToolHead)
_SEEN_LISTS = 8  # each holds the views of one list's bytes (~1 MB for 2k tools)
_SEEN = LRU(_SEEN_LISTS, float("inf"), lambda _: 0)  # sha256 of a tool list -> its first ToolList
_TOOL_SHAPE = '{"type": "function", "function": {"name": ...}}'


class ToolList(Sequence):
    """The request's tools: names and descriptions up front, full dicts decoded on access."""

    def __init__(self, raws: list[msgspec.Raw], heads: list[_ToolHead], key: str) -> None:
        self._raws, self._heads = raws, heads
        self._full: list[dict | None] = [None] * len(raws)
        self.names: list[str] = [h.function.name for h in heads]  # type: ignore[union-attr]
        self.descriptions: list[str] = [d.strip() if isinstance(d := h.function.description, str) else ""  # type: ignore[union-attr]
                                        for h in heads]
        # content hash of the tools exactly as sent (sha256, ~3x faster than blake2b on 1 MB here):
        # the key of `_SEEN` and of the in-memory router cache
        self.key = key

    def _again(self) -> "ToolList":
        """The same tools for another request: shared split, names and descriptions; its own
        decoded-tool slots."""
        again = copy.copy(self)
        again._full = [None] * len(self._raws)
        return again

    def __len__(self) -> int:
        return len(self._raws)

    @overload
    def __getitem__(self, i: int) -> dict: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...

    def __getitem__(self, i: int | slice) -> dict | list[dict]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self._full[i] is None:
            self._full[i] = msgspec.json.decode(self._raws[i])
        return self._full[i]  # type: ignore[return-value]

    def __iter__(self) -> Iterator[dict]:
        return (self[i] for i in range(len(self)))


def read_request(raw: bytes, max_tools: int | None = None) -> dict:
    """The body as a dict whose ``tools`` (when a non-empty list of tools) is a `ToolList`.

    Raises ValueError for bytes that are not JSON, WireError for a tool list of the wrong shape
    (the same messages the router's own validation gives for parsed bodies) or of more than
    ``max_tools`` tools (counted before any tool is looked at).
    """
    try:
        top = _TOP.decode(raw)
    except msgspec.ValidationError:  # JSON, but not an object: the router's validation says so
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ValueError(str(exc)) from None
    body = {k: msgspec.json.decode(v) for k, v in top.items() if k != "tools"}
    if "tools" in top:
        body["tools"] = _tools(bytes(top["tools"]), max_tools)
    return body


def _tools(raw: bytes, max_tools: int | None = None) -> Any:
    key = hashlib.sha256(raw).hexdigest()  # ~0.6 ms for 1 MB, a third of one decode pass
    seen = _SEEN.get(key)
    if seen is not None:
        _check_count(len(seen), max_tools)
        return seen._again()
    try:
        raws = _RAW_LIST.decode(raw)
    except msgspec.ValidationError:  # not a list: the router's validation says so
        return msgspec.json.decode(raw)
    if not raws:
        return []
    _check_count(len(raws), max_tools)
    try:  # one typed pass checks every tool's shape; only a bad list is walked again, for the index
        heads = _HEADS.decode(raw)
    except msgspec.ValidationError:
        heads = []
    if len(heads) != len(raws) or not all(h.function.name for h in heads):
        raise WireError(f"tools[{_first_bad(raws)}] must be {_TOOL_SHAPE}")
    tools = ToolList(raws, heads, key)
    _SEEN.put(key, tools)  # only lists that passed every check are remembered
    return tools._again()


def _check_count(n: int, max_tools: int | None) -> None:
    """Counted before any tool is looked at."""
    if max_tools is not None and n > max_tools:
        raise WireError(f"the request brings {n:,} tools; at most {max_tools:,} are accepted per request")


def _first_bad(raws: list[msgspec.Raw]) -> int:
    for i, r in enumerate(raws):
        try:
            if not _HEAD.decode(r).function.name:
                return i
        except msgspec.ValidationError:
            return i
    return 0
