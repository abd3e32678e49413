"""Request-level routing, shared by the OpenAI client wrapper and the proxy.

One Chat Completions request body goes in; out comes the body to send upstream with only
the relevant tools (the caller's exact tool dicts, in the caller's order). Checking the
answer and repairing it is `router.exchange`.

Rules (from what users of tool routers keep asking for):
- never drop a tool silently: tools the catalog does not know are ranked too (an in-memory
  router per distinct tool set), and a model calling a tool that routing left out gets it
  back on the repair turn;
- never break ``tool_choice``: a tool it names is always kept, as are pinned tools and tools
  the conversation already called (which also keeps the tool set stable across turns);
- at most 128 tools (the Chat Completions limit) and at most ``token_budget`` tokens of tools.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from apidb.names import unique_names
from apidb.record import canonical_json

from .errors import RequestError
from .request_body import ToolList

MAX_TOOLS = 128
HEADER_LIMIT = 4096  # bytes per x-toolsift-* header; proxies and servers reject huge headers


def as_dict(obj: Any) -> Any:
    """Plain JSON data from openai pydantic objects (messages, responses) or dicts."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(exclude_none=True)
    if isinstance(obj, dict):
        return {k: as_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [as_dict(v) for v in obj]
    return obj


def _description(tools: Sequence[dict], i: int) -> str:
    if isinstance(tools, ToolList):  # without decoding the whole tool
        return tools.descriptions[i]
    return ((tools[i].get("function") or {}).get("description") or "").strip()


def tool_name(tool: Any) -> str | None:
    fn = tool.get("function") if isinstance(tool, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) else None


# ------------------------------------------------------------------ validation

def validate_body(body: Any) -> list[str]:
    """The request's tool names (one pass over a possibly 2k-tool list), or a RequestError
    saying exactly what is wrong with the body."""
    if not isinstance(body, dict):
        raise RequestError(f"request body must be a JSON object, got {type(body).__name__}")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise RequestError("'messages' must be a non-empty list")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise RequestError(f"messages[{i}] must be an object with a string 'role'")
    tools = body.get("tools")
    if tools is None:
        return []
    if isinstance(tools, ToolList):  # read from the wire: each tool's shape is already checked
        return _unique(tools.names)
    if not isinstance(tools, list):
        raise RequestError(f"'tools' must be a list, got {type(tools).__name__}")
    names = []
    for i, t in enumerate(tools):
        try:
            name = t["function"]["name"]
            ok = t.get("type", "function") == "function" and isinstance(name, str) and name
        except (TypeError, KeyError, AttributeError):
            ok = False
        if not ok:
            raise RequestError(f"tools[{i}] must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}")
        names.append(name)
    return _unique(names)


def _unique(names: list[str]) -> list[str]:
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise RequestError(f"two tools are named {dup!r}; tool names must be unique in a request")
    return names


def forced_names(body: dict, pinned: Iterable[str]) -> dict[str, str]:
    """Tool names that must be offered, with why: tool_choice, pinned, already called."""
    out: dict[str, str] = {}
    for m in body.get("messages", []):
        calls = m.get("tool_calls") if m.get("role") == "assistant" else None
        for call in calls if isinstance(calls, list) else []:
            name = tool_name(call) if isinstance(call, dict) else None
            if name:
                out.setdefault(name, "history")
    for name in pinned:
        out[name] = "pinned"
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        named = [choice] if tool_name(choice) else (choice.get("allowed_tools") or {}).get("tools") or []
        for t in named:
            if tool_name(t):
                out[tool_name(t)] = "tool_choice"
    return out


# ------------------------------------------------------------------ routing

def tool_set_key(tools: Sequence[dict]) -> str:
    """Content hash of a tool list (the in-memory router cache key): of the bytes as sent for a
    `ToolList`, else of the canonical JSON. orjson (a ranx dependency) serializes a 2k-tool list
    ~5x faster than json; the hash is the same kind either way."""
    if isinstance(tools, ToolList):
        return tools.key
    try:
        import orjson

        data = orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)
    except (ImportError, TypeError):
        data = canonical_json(tools).encode()
    return hashlib.blake2b(data, digest_size=20).hexdigest()


@dataclass
class RoutedRequest:
    body: dict                      # what goes upstream
    offered: list[dict]             # the tools offered (exact dicts)
    original: Sequence[dict]        # the caller's tools (empty when injected)
    selected: list[dict]            # [{"name", "reason", "score"[, "id"]}] in rank order
    tools_in: int
    tools_out: int
    injected: bool = False
    budget_exceeded: bool = False

    def header(self) -> str:
        return capped_json(self.selected, lambda s: s["name"])


def capped_json(items: list[dict], short: Any) -> str:
    """JSON of ``items`` under HEADER_LIMIT bytes: full, else short forms, else truncated + a count."""
    text = json.dumps(items, ensure_ascii=True, separators=(",", ":"))
    if len(text) <= HEADER_LIMIT:
        return text
    shorts = [short(i) for i in items]
    for n in range(len(shorts), -1, -1):
        text = json.dumps(shorts[:n] + ([f"+{len(shorts) - n} more"] if n < len(shorts) else []),
                          ensure_ascii=True, separators=(",", ":"))
        if len(text) <= HEADER_LIMIT:
            return text
    return "[]"


class RequestRouter:
    """Selects tools for one request. ``router`` (a catalog `router.Router`) is optional:
    with it, tool-less requests get the top-k catalog tools injected."""

    def __init__(self, router: Any = None, *, k: int = 5, pinned: Iterable[str] = (), token_budget: int | None = None,
                 method: str = "hybrid", model: str | None = None, cache_dir: str | None = None,
                 max_tools: int = MAX_TOOLS, inject: bool = True, cache_size: int = 16) -> None:
        if k < 1:
            raise RequestError(f"k must be at least 1, got {k}")
        self.router, self.k, self.pinned = router, k, tuple(pinned)
        self.token_budget, self.method, self.model, self.cache_dir = token_budget, method, model, cache_dir
        self.max_tools, self.inject = min(max_tools, MAX_TOOLS), inject
        self._cache: OrderedDict[str, tuple[Any, dict[str, int]]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._building: dict[str, threading.Lock] = {}
        self._names: dict[str, set[str]] | None = None

    # -- public
    def route(self, body: Any) -> RoutedRequest:
        names = validate_body(body)
        tools = body.get("tools") or []
        if not tools:
            return self._inject(body)
        forced = forced_names(body, self.pinned)
        keep: dict[int, dict] = {i: {"name": n, "reason": forced[n]} for i, n in enumerate(names) if n in forced}
        if len(tools) <= self.k and len(tools) <= self.max_tools:
            ranked = [(i, None) for i in range(len(tools)) if i not in keep]
        else:
            ranked = [(i, s) for i, s in self._rank(tools, names, body["messages"], self.k + len(keep))
                      if i not in keep]
        if len(ranked) < self.k:  # nothing matched (BM25 on "do it"): fill in caller order, never offer 0
            seen = {i for i, _ in ranked}
            ranked += [(i, None) for i in range(len(tools)) if i not in keep and i not in seen][: self.k - len(ranked)]
        for i, sel in ranked[: self.k]:
            keep[i] = {"name": names[i], "reason": "ranked" if sel else "all",
                       **({"score": round(float(sel.score), 4)} if sel else {})}
        chosen, over = self._fit(keep, tools)
        offered = [tools[i] for i in sorted(chosen)]
        out = dict(body, tools=offered)
        return RoutedRequest(out, offered, tools, [keep[i] for i in chosen], len(tools), len(offered),
                             budget_exceeded=over)

    # -- internals
    def _fit(self, keep: dict[int, dict], tools: list[dict]) -> tuple[list[int], bool]:
        """Forced tools first (always), then ranked ones while under 128 tools and the token budget."""
        from router.tokens import tool_tokens

        # must-keep (pinned, tool_choice), then tools already called (history), then ranked ones
        order = sorted(keep, key=lambda i: {"pinned": 0, "tool_choice": 0, "history": 1}.get(keep[i]["reason"], 2))
        chosen, used, over = [], 0, False
        for i in order:
            forced = keep[i]["reason"] in ("pinned", "tool_choice")
            cost = tool_tokens(tools[i]) if self.token_budget is not None else 0
            if forced:
                if len(chosen) >= MAX_TOOLS:
                    raise RequestError(f"more than {MAX_TOOLS} tools are pinned or named by tool_choice")
            elif len(chosen) >= self.max_tools or (self.token_budget is not None and used + cost > self.token_budget):
                continue
            chosen.append(i)
            used += cost
        if self.token_budget is not None and used > self.token_budget:
            over = True  # only forced tools can push past the budget
        return chosen, over

    def _inject(self, body: dict) -> RoutedRequest:
        if not (self.inject and self.router is not None) or body.get("tool_choice") == "none":
            return RoutedRequest(body, [], [], [], 0, 0)
        self._catalog_ids([], [])  # builds the name map
        pins = [p for p in self.pinned if p in self._names or self.router.get(p) is not None]
        sels = self.router.select(body["messages"], k=min(self.k, self.max_tools),
                                  method=self.method, pinned=pins, token_budget=self.token_budget)
        sels = sels[: self.max_tools]
        offered, selected = [], []
        for s, name in zip(sels, unique_names([s.record for s in sels])):
            offered.append(s.record.to_openai_tool(name=name))
            selected.append({"name": name, "id": s.record.id, "reason": s.reason, "score": round(float(s.score), 4)})
        out = dict(body, tools=offered) if offered else body
        return RoutedRequest(out, offered, [], selected, 0, len(offered), injected=bool(offered))

    def _rank(self, tools: list[dict], names: list[str], messages: list[dict], n: int) -> list[tuple[int, Any]]:
        query, k = messages, min(n, len(tools))
        ids = self._catalog_ids(tools, names)
        if ids is not None:  # every tool is a catalog tool: rank with the catalog's persisted indexes
            pos = {rid: i for i, rid in enumerate(ids)}
            sels = self.router.select(query, k=k, method=self.method, candidates=list(pos))
            return [(pos[s.record.id], s) for s in sels]
        router, index = self._tool_router(tools)
        sels = router.select(query, k=k, method=self.method)
        return [(index[s.record.id], s) for s in sels if s.record.id in index]

    def _catalog_ids(self, tools: list[dict], names: list[str]) -> list[str] | None:
        """Catalog record ids of the request's tools, by name; None unless each name is known and unique."""
        if self.router is None:
            return None
        with self._lock:
            if self._names is None:
                by_name: dict[str, set[str]] = {}
                for r in self.router.records:  # the name a model sees (what to_openai_tool emits)
                    by_name.setdefault(r.openai_name(), set()).add(r.id)
                self._names = by_name
        ids = []
        for i, name in enumerate(names):
            hit = self._names.get(name, ())
            if len(hit) > 1:  # same name in several namespaces: the description decides
                desc = _description(tools, i)
                hit = sorted(rid for rid in hit if self.router.get(rid).description == desc)[:1]
            if len(hit) != 1:
                return None
            ids.append(next(iter(hit)))
        return ids if len(set(ids)) == len(ids) else None

    def _tool_router(self, tools: Sequence[dict]) -> tuple[Any, dict[str, int]]:
        """An in-memory router over exactly this tool set, built once per distinct set (LRU)."""
        key = tool_set_key(tools)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            build_lock = self._building.setdefault(key, threading.Lock())
        with build_lock:  # concurrent first requests with one tool set build it once
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
            entry = self._build(tools)
            with self._lock:
                self._cache[key] = entry
                self._building.pop(key, None)
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return entry

    def _build(self, tools: Sequence[dict]) -> tuple[Any, dict[str, int]]:
        from apidb.errors import LoadError
        from apidb.loaders.openai import records_from_openai_tools

        from router.engine import Router

        try:
            records = records_from_openai_tools(list(tools), namespace="request")
        except LoadError as exc:
            raise RequestError(str(exc)) from exc
        index = {r.id: i for i, r in enumerate(records)}
        if self.router is not None and not (self.model or self.cache_dir):
            return self.router.with_records(records), index  # the catalog's model and embedding cache
        kwargs = {"cache_dir": self.cache_dir} if self.cache_dir else {}
        return Router.from_records(records, model=self.model, **kwargs), index
