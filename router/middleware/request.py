"""Request-level routing, shared by the OpenAI client wrapper and the proxy.

One Chat Completions request body goes in; out comes the body to send upstream with only
the relevant tools (the caller's exact tool dicts, in the caller's order). Checking the
answer and repairing it is `router.exchange`.

Rules (from what users of tool routers keep asking for, and issue 13's four frameworks):
- never add a tool the request did not bring, unless asked (``inject=True``): an agent that
  gets a catalog tool it never defined fails on the call (openai-agents, pydantic-ai, LangChain);
- never drop a tool the agent needs to finish: a tool ``tool_choice`` names, pinned tools, tools
  the conversation already called (which also keeps the tool set stable across turns), tools the
  request marks itself (``x-toolsift-keep``), and the frameworks' control tools (`CONTROL_TOOLS`:
  smolagents' ``final_answer`` ends its loop, pydantic-ai's ``final_result*`` carries the output);
- a request with at most k tools gets them all; a request with more gets them ranked, and tools
  the catalog does not know are ranked too (an in-memory router per distinct tool set); a model
  calling a tool that routing left out gets it back on the repair turn;
- at most 128 tools (the Chat Completions limit) and at most ``token_budget`` tokens of tools;
- every decision is said: ``RoutedRequest.status`` / ``route_header()``, and a reason per tool.
"""
from __future__ import annotations

import copy
import hashlib
import json
import threading
from typing import Any, Iterable, Sequence

from apidb.names import MAX_NAME, unique_names
from apidb.record import canonical_json

from router.errors import RouterError

from .budget import fit, search_reserve
from .errors import RequestError
from .list_routers import BM25_SUFFIX, INLINE_MAX, ListRouters
from .policy import (CONTROL_TOOLS, MAX_REQUEST_TOOLS, check_tool_count, forced_names, loop_tools,
                     rankable_messages, tool_name, validate_body)
from .request_body import ToolList
from .routed import RoutedRequest, without_tools
from .tool_cache import LRU, RouterCache, VectorCache

__all__ = ["CONTROL_TOOLS", "MAX_TOOLS", "RequestRouter", "tool_name", "validate_body", "forced_names"]

MAX_TOOLS = 128
ON_ABSTAIN = ("flag", "strip")  # what the proxy does when no tool fits: say so (header), or also strip


def _description(tools: Sequence[dict], i: int) -> str:
    if isinstance(tools, ToolList):  # without decoding the whole tool
        return tools.descriptions[i]
    return ((tools[i].get("function") or {}).get("description") or "").strip()


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


def catalog_health(router: Any) -> dict | None:
    """A live catalog router's sync state (router.ranking.watch.LiveRouter.health), else None."""
    health = getattr(router, "health", None) if router is not None else None
    return health() if callable(health) else None


IDS_CACHE = 64  # tool lists whose catalog ids are remembered (see RequestRouter._catalog_ids)


class RequestRouter:
    """Selects tools for one request. ``router`` (a catalog `router.Router`) is optional: with
    it, requests whose tools are all catalog tools are ranked with the catalog's indexes, and
    (only with ``inject=True``) tool-less requests get the top-k catalog tools added."""

    def __init__(self, router: Any = None, *, k: int = 5, pinned: Iterable[str] = (), token_budget: int | None = None,
                 method: str = "hybrid", model: str | None = None, cache_dir: str | None = None,
                 max_tools: int = MAX_TOOLS, inject: bool = False, cache_size: int = 16,
                 control_tools: Sequence[str] = CONTROL_TOOLS, max_request_tools: int = MAX_REQUEST_TOOLS,
                 cache_tools: int = 50_000, vector_cache_mb: float = 64.0, adaptive: bool = False,
                 on_abstain: str = "flag", tool_search: bool = False, max_searches: int = 2,
                 embed_inline: int = INLINE_MAX) -> None:
        if k < 1:
            raise RequestError(f"k must be at least 1, got {k}")
        if on_abstain not in ON_ABSTAIN:
            raise RequestError(f"on_abstain must be one of {', '.join(ON_ABSTAIN)}, got {on_abstain!r}")
        # adaptive: k is the ceiling of adaptive k (router.ranking.adaptive_k); on_abstain "strip": a request
        # whose ranking abstains keeps only the tools it must keep (docs/routing.md: off by default)
        self.adaptive, self.on_abstain = adaptive, on_abstain
        # tool_search: offer the model a search over the tools routing left out (router/middleware/search.py)
        self.tool_search, self.max_searches = tool_search, max_searches
        self.router, self.k, self.pinned = router, k, tuple(pinned)
        self.token_budget, self.method, self.model, self.cache_dir = token_budget, method, model, cache_dir
        self.max_tools, self.inject = min(max_tools, MAX_TOOLS), inject
        self.control_tools, self.max_request_tools = tuple(control_tools), max_request_tools
        self.routers = RouterCache(cache_size, cache_tools)
        self.vectors = VectorCache(int(vector_cache_mb * 2**20))
        # embed_inline: a new tool list with more tools to embed than this is ranked by BM25 while they
        # are embedded in the background (router/middleware/list_routers.py)
        self.lists = ListRouters(self.routers, self.vectors, self._embedder, inline_max=embed_inline)
        self._lock = threading.Lock()
        self._names: dict[str, set[str]] | None = None
        self._names_of: Any = None  # the records list _names was built from
        self._ids = LRU(IDS_CACHE, float("inf"), lambda _: 0)  # ToolList.key -> (records, catalog ids)
        self._loops = LRU(IDS_CACHE, float("inf"), lambda _: 0)  # ToolList.key -> its hand-off / output tools
        self._embedders: dict[str, Any] = {}

    # -- public
    def route(self, body: Any, keep: Iterable[str] = ()) -> RoutedRequest:
        """The body to send upstream and what was kept and why. ``keep``: tool names the request
        itself marks as needed (the proxy's ``x-toolsift-keep`` header)."""
        if isinstance(body, dict) and isinstance(body.get("tools"), Sequence):
            check_tool_count(len(body["tools"]), self.max_request_tools)  # before any per-tool work
        names = validate_body(body)
        tools = body.get("tools") or []
        if not tools:
            return self._inject(body)
        forced = forced_names(body, self.pinned, names, self.control_tools, keep, self._loop_tools(tools, names))
        keep_at: dict[int, dict] = {i: {"name": n, "reason": forced[n]} for i, n in enumerate(names) if n in forced}
        status, abstention, ids, notes = "routed", None, {}, {}
        if len(tools) <= self.k and len(tools) <= self.max_tools:
            ranked, status = [(i, None) for i in range(len(tools)) if i not in keep_at], "all"
        elif len(tools) - len(keep_at) <= self.k:  # nothing left to cut once the kept tools are set aside
            ranked, status = [(i, None) for i in range(len(tools)) if i not in keep_at], "all"
        else:
            rankable_messages(body["messages"])
            notes: dict[str, str] = {}
            pairs, abstention, ids = self._rank(tools, names, body["messages"], self.k + len(keep_at), notes)
            ranked = [(i, s) for i, s in pairs if i not in keep_at]
        stripped = abstention is not None and abstention.abstained and self.on_abstain == "strip"
        if stripped:
            ranked = []
        elif len(ranked) < self.k and not (self.adaptive and ranked):
            # nothing matched (BM25 on "do it"): fill in caller order, never offer 0
            seen = {i for i, _ in ranked}
            ranked += [(i, None) for i in range(len(tools)) if i not in keep_at and i not in seen][: self.k - len(ranked)]
        for i, sel in ranked[: self.k]:
            keep_at[i] = {"name": names[i], "reason": "ranked" if sel else "all",
                          **({"score": round(float(sel.score), 4)} if sel else {})}
        reserve = search_reserve(self) if status == "routed" else 0  # room for the search tool
        chosen, over, used = fit(keep_at, tools, self.max_tools, MAX_TOOLS, self.token_budget, reserve)
        offered = [tools[i] for i in sorted(chosen)]
        out = dict(body, tools=offered)
        if not offered:  # stripped by abstention: a body with "tools": [] is refused by the APIs
            out = without_tools(body)
        if status == "routed" and len(offered) == len(tools):
            status = "all"
        return RoutedRequest(out, offered, tools, [keep_at[i] for i in chosen], len(tools), len(offered),
                             budget_exceeded=over, status=status, k=self.k, abstention=abstention,
                             extra={**notes, **({"abstain": "stripped"} if stripped else {})}, ids=ids,
                             budget=self.token_budget, budget_used=used)

    def warm(self, body: Any) -> bool:
        """Whether `route` would build nothing for this body: no in-memory router, no vectors,
        no catalog name map, only a ranking with what is remembered. The proxy routes a warm
        request on its event loop and a cold one in a worker thread (router/middleware/proxy.py).
        A catalog swap between this answer and the routing makes one request pay the name map
        (tens of ms at 20k tools) where it was not expected; nothing else changes."""
        if not isinstance(body, dict):
            return False
        tools = body.get("tools")
        if not tools:
            return not (self.inject and self.router is not None) or self._names_of is self.router.records
        if not isinstance(tools, ToolList):  # only a list as sent has its key without hashing it
            return len(tools) <= self.k
        if len(tools) <= self.k:
            return True
        if self.router is not None:
            known = self._ids.peek(tools.key)
            if known is not None and known[0] is self.router.records:
                return known[1] is not None or tools.key in self.routers
            return False
        # a big list whose embeddings are being built is ranked by its cached BM25 router; one that is
        # not being built may build (or queue) now: a worker thread's job
        return tools.key in self.routers or (tools.key + BM25_SUFFIX in self.routers
                                             and self.lists.background.building(tools.key))

    def scoped(self, router: Any) -> "RequestRouter":
        """The same settings over another view of the catalog (a tenant's namespaces,
        `router.tenancy.scope.ScopedRouter`). The caches of request tool lists are shared: they hold only
        tools that requests brought, never catalog tools. Pins naming only catalog tools outside
        the view are dropped from it."""
        clone = copy.copy(self)
        clone.router, clone._names, clone._lock = router, None, threading.Lock()
        foreign = getattr(router, "foreign", None)
        if foreign is not None:  # a pin of a catalog tool outside the view means nothing in it
            clone.pinned = tuple(p for p in self.pinned if not foreign(p))
        return clone

    def pass_through(self, body: dict, reason: str) -> RoutedRequest:
        """Every tool as sent, saying why the request was not routed (``x-toolsift-route: unrouted``)."""
        tools = body.get("tools") or []
        names = validate_body(body)
        selected = [{"name": n, "reason": "all"} for n in names]
        return RoutedRequest(body, list(tools), tools, selected, len(tools), len(tools), status="unrouted", k=self.k,
                             extra={"reason": json.dumps(reason)})

    def search(self, tools: Sequence[dict], query: str, exclude: set[str], n: int) -> list[str]:
        """The names of the ``n`` best tools of ``tools`` for ``query``, leaving out ``exclude``
        (the model's tool search: router/middleware/search.py)."""
        names = tools.names if isinstance(tools, ToolList) else [tool_name(t) for t in tools]
        if not names:
            return []
        pairs, _, _ = self._rank(tools, names, [{"role": "user", "content": query}],
                                 min(len(names), n + len(exclude)))
        return [names[i] for i, _ in pairs if names[i] not in exclude][:n]

    def catalog_names(self) -> list[str]:
        """The names the catalog's tools reach a model under (empty without a catalog)."""
        if self.router is None:
            return []
        self._catalog_ids([], [])  # builds (or reuses) the name map of the current records
        return list(self._names or ())

    def catalog_tools(self, records: Sequence[Any], taken: Iterable[str] = ()) -> list[tuple[str, dict]]:
        """(name, Chat Completions tool) per catalog record, named as injected tools are: by what tells
        a record from its namesakes in the catalog (31 `model_id`s), numbered only past ``taken``."""
        self._catalog_ids([], [])  # builds (or reuses) the name map of the current records
        by_name, taken = self._names or {}, set(taken)

        def siblings(record: Any) -> list[Any]:
            found = (self.router.get(rid) for rid in sorted(by_name.get(record.openai_name(), ())))
            return [r for r in found if r is not None]

        out = []
        for record, name in zip(records, unique_names(list(records), siblings)):
            base, n = name, 1
            while name in taken:  # an offered tool holds the name already
                n += 1
                name = f"{base[:MAX_NAME - 4]}_{n}"
            taken.add(name)
            out.append((name, record.to_openai_tool(name=name)))
        return out

    def held(self, body: dict, tools: Sequence[dict], reason: str) -> RoutedRequest:
        """A request without tools in a conversation whose tools the upstream holds: sent as it
        came, its calls checked against ``tools`` (the list remembered for the conversation), or
        not checked at all when ``tools`` is None (``x-toolsift-route: unrouted; reason=...``)."""
        known = list(tools or [])
        return RoutedRequest(body, known, known, [], 0, 0, status="unrouted", k=self.k, checked=tools is not None,
                             extra={"reason": json.dumps(reason)})

    def cache_stats(self) -> dict[str, dict]:
        """Hit / miss / size counters of the per-tool-list caches (the proxy's /metrics)."""
        return {"routers": self.routers.stats(), "vectors": self.vectors.stats(), "embedding": {"pending": self.lists.stats()["pending"]}}

    # -- internals
    def _loop_tools(self, tools: Sequence[dict], names: list[str]) -> set[str]:
        """`policy.loop_tools`, remembered per tool list (two regexes per tool: 16 ms at 2,211 tools):
        by the list as sent, or, for the Responses / Messages views, by its names (0.3 ms to hash)."""
        key = tools.key if isinstance(tools, ToolList) else \
            hashlib.blake2b("\x00".join(names).encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
        found = self._loops.get(key)
        if found is None:
            found = loop_tools(names, lambda i: _description(tools, i))
            self._loops.put(key, found)
        return found

    def _inject(self, body: dict) -> RoutedRequest:
        none = RoutedRequest(body, [], [], [], 0, 0, status="none", k=self.k)
        if not (self.inject and self.router is not None) or body.get("tool_choice") == "none":
            return none
        rankable_messages(body["messages"])
        self._catalog_ids([], [])  # builds the name map
        pins = [p for p in self.pinned if p in self._names or self.router.get(p) is not None]
        budget = None if self.token_budget is None else self.token_budget - search_reserve(self)
        try:
            sels = self.router.select(body["messages"], k=min(self.k, self.max_tools),
                                      method=self.method, pinned=pins, token_budget=budget)
        except RouterError:  # the pins fill what the search tool would leave: the pins win, no search
            if budget == self.token_budget:
                raise
            budget = self.token_budget
            sels = self.router.select(body["messages"], k=min(self.k, self.max_tools),
                                      method=self.method, pinned=pins, token_budget=budget)
        sels = sels[: self.max_tools]
        offered, selected = [], []
        for s, (name, tool) in zip(sels, self.catalog_tools([s.record for s in sels])):
            offered.append(tool)
            selected.append({"name": name, "id": s.record.id, "reason": s.reason, "score": round(float(s.score), 4)})
        if not offered:
            return none
        from router.tokens import tool_tokens

        used = sum(tool_tokens(t) for t in offered) if budget is not None else 0
        return RoutedRequest(dict(body, tools=offered), offered, [], selected, 0, len(offered), injected=True,
                             status="injected", k=self.k, budget=self.token_budget, budget_used=used,
                             budget_exceeded=budget is not None and used > self.token_budget)

    def _rank(self, tools: Sequence[dict], names: list[str], messages: list[dict], n: int,
              notes: dict[str, str] | None = None) -> tuple[list[tuple[int, Any]], Any, dict[str, str]]:
        """(tool position, Selection) in rank order, the abstention, and name -> catalog id. ``notes``
        gets ``dense``: ``building`` / ``waiting`` when a new big list was ranked by BM25 only because
        its embeddings are being built (`ListRouters`)."""
        query, k = messages, min(n, len(tools))
        ids = self._catalog_ids(tools, names)
        if ids is not None:  # every tool is a catalog tool: rank with the catalog's persisted indexes
            pos = {rid: i for i, rid in enumerate(ids)}
            sels = self.router.select(query, k=k, method=self.method, candidates=list(pos), adaptive=self.adaptive)
            return [(pos[s.record.id], s) for s in sels], sels.abstention, dict(zip(names, ids))
        model = self.model or (self.router.model_id if self.router is not None else None)
        config = self.router.config if self.router is not None and not self.model else None
        (router, index), pending = self.lists.get(tool_set_key(tools), tools, model=model, config=config,
                                                  dense=self.method != "bm25")
        if pending is not None and notes is not None:
            notes["dense"] = pending
        sels = router.select(query, k=k, method=self.method, adaptive=self.adaptive)
        return [(index[s.record.id], s) for s in sels if s.record.id in index], sels.abstention, {}

    def _catalog_ids(self, tools: Sequence[dict], names: list[str]) -> list[str] | None:
        """Catalog record ids of the request's tools, by name; None unless each name is known and unique.

        Remembered per tool list as sent (`ToolList.key`) and catalog state: an agent sends the same
        tools every turn, and matching 2,211 names again took ~3 ms of each request's ~12 ms."""
        if self.router is None:
            return None
        key = tools.key if isinstance(tools, ToolList) else None
        records = self.router.records  # one read: a live router may swap in another list meanwhile
        known = self._ids.get(key) if key is not None else None
        if known is not None and known[0] is records:  # the same records object: no swap since
            return known[1]
        with self._lock:
            if self._names is None or self._names_of is not records:  # a live catalog swapped in a change
                by_name: dict[str, set[str]] = {}
                for r in records:  # the name a model sees (what to_openai_tool emits)
                    by_name.setdefault(r.openai_name(), set()).add(r.id)
                self._names, self._names_of = by_name, records
            by_name = self._names
        ids: list[str] | None = []
        for i, name in enumerate(names):
            hit = by_name.get(name, ())
            if len(hit) > 1:  # same name in several namespaces: the description decides
                desc = _description(tools, i)
                hit = sorted(rid for rid in hit if self.router.get(rid).description == desc)[:1]
            if len(hit) != 1:
                ids = None
                break
            ids.append(next(iter(hit)))
        if ids is not None and len(set(ids)) != len(ids):
            ids = None
        if key is not None:
            self._ids.put(key, (records, ids))
        return ids

    def _embedder(self, model: str | None) -> Any:
        from router.encoders.dense import DEFAULT_MODEL, Embedder

        key = model or DEFAULT_MODEL
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = Embedder(key)
            return self._embedders[key]
