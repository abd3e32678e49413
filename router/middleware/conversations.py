"""What the proxy remembers of conversations the upstream holds (issue 37): per tenant, bounded.

Two APIs let a later request lean on state the server keeps: the Responses API
(``previous_response_id``, ``conversation``) and Anthropic threads (the SDK's thread mode sends
``tools`` on the first turn only). The proxy remembers, for each conversation it saw:

- its messages (Chat Completions shape), so that a follow-up carrying only a
  ``function_call_output`` is routed on the whole conversation;
- the full tool list the caller brought, so that a later turn without ``tools`` has its calls
  checked against that list and never against zero tools.

A conversation is named by keys the request itself carries: ``("response", id)``,
``("conversation", id)``, ``("thread", hash of the system prompt and the first user turn)``. Every
key is prefixed with the tenant the request belongs to (``request.state.tenant``,
router/tenancy/gate.py), so two tenants never read each other's conversations. Everything is
LRU-bounded by entries and by size; nothing is written to disk.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Hashable, Iterable, Sequence

from .routed import as_dict
from .tool_cache import LRU

__all__ = ["Conversations", "TenantConversations", "thread_key"]

Key = tuple[str, str]


def _weight(value: Any) -> int:
    return len(json.dumps(value, default=str))


def thread_key(system: Any, messages: Sequence[dict]) -> Key | None:
    """A conversation's name when the request carries no id: its system prompt and first user
    turn (Chat Completions shape), which every later turn of it repeats."""
    first = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    if first is None:
        return None
    data = json.dumps([system, first.get("content")], sort_keys=True, default=str).encode()
    return ("thread", hashlib.blake2b(data, digest_size=16).hexdigest())


class Conversations:
    """Messages and tool lists of conversations, for every tenant (see the module doc)."""

    def __init__(self, max_entries: int = 2048, max_chars: int = 16 * 2**20, max_lists: int = 256,
                 max_list_chars: int = 64 * 2**20) -> None:
        self._messages = LRU(max_entries, max_chars, weigh=_weight)
        self._tools = LRU(max_entries * 4, float("inf"), weigh=lambda _: 0)  # (tenant, key) -> list key
        self._lists = LRU(max_lists, max_list_chars, weigh=_weight)          # list key -> tools (one copy)
        self._loaded = LRU(max_entries, max_chars, weigh=_weight)            # (tenant, response) -> loaded names

    def for_tenant(self, tenant: str | None) -> "TenantConversations":
        return TenantConversations(self, tenant or "")

    def stats(self) -> dict:
        """/metrics: remembered conversations ("responses", the name it had before threads) and tool lists."""
        return {"responses": self._messages.stats(), "conversation_tools": self._lists.stats()}


class TenantConversations:
    """One tenant's view of `Conversations`: what a request's exchange reads and writes."""

    def __init__(self, store: Conversations, tenant: str) -> None:
        self._store, self._tenant = store, tenant

    def _k(self, key: Hashable) -> tuple:
        return (self._tenant, key)

    # -- messages (what a follow-up is routed on)
    def get(self, key: Any) -> list[dict]:
        """The remembered messages of a response id (a str) or a conversation key."""
        if isinstance(key, str):
            key = ("response", key)
        if not isinstance(key, tuple):
            return []
        return list(self._store._messages.get(self._k(key)) or [])

    def remember(self, request_view: dict, response: Any, keys: Iterable[Key] = (),
                 tools: Sequence[dict] | None = None) -> None:
        """After an answer: the conversation so far under the answer's id and ``keys``, and the
        tool list in effect (``tools``) under the same names."""
        from .responses import items_to_messages

        resp = as_dict(response) or {}
        names = list(keys)
        if isinstance(resp.get("id"), str):
            names.append(("response", resp["id"]))
        if not names:
            return
        messages = [m for m in request_view.get("messages", []) if m.get("role") != "system"]
        messages += items_to_messages(resp.get("output") or [])
        for key in names:
            if key[0] != "thread":  # a thread's client sends its whole history: nothing to add
                self._store._messages.put(self._k(key), messages)
        if tools:
            self.remember_tools(names, tools)

    # -- tools loaded by the providers' tool searches (router/middleware/deferred.py)
    def loaded(self, response_id: Any) -> list[str]:
        """Tool names the searches of a conversation loaded, up to this response."""
        hit = self._store._loaded.get(self._k(("response", response_id))) if isinstance(response_id, str) else None
        return list(hit or [])

    def remember_loaded(self, response_id: Any, names: Iterable[str]) -> None:
        if isinstance(response_id, str):
            self._store._loaded.put(self._k(("response", response_id)), sorted(set(names)))

    # -- tool lists (what a tool-less turn is checked against)
    def remember_tools(self, keys: Iterable[Key], tools: Sequence[dict]) -> None:
        tools = list(tools)
        if not tools:
            return
        # keyed by the names, not the full JSON: every Messages request with tools passes here, and
        # hashing a 2k-tool list's JSON costs milliseconds; the first list of a set of names is kept
        names = "\x00".join(str((t.get("function") or {}).get("name")) for t in tools if isinstance(t, dict))
        list_key = hashlib.blake2b(names.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
        if self._store._lists.get(list_key) is None:  # weighing a list (its JSON) is paid once per list
            self._store._lists.put(list_key, tools)
        for key in keys:
            self._store._tools.put(self._k(key), list_key)

    def tools(self, keys: Iterable[Key]) -> list[dict] | None:
        """The tool list remembered under the first of ``keys`` that has one, else None."""
        for key in keys:
            list_key = self._store._tools.get(self._k(key))
            if list_key is not None:
                tools = self._store._lists.get(list_key)
                if tools is not None:
                    return list(tools)
        return None
