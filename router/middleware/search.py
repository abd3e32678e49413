"""A tool search the model can call, for any upstream model (issue 37, item 1).

Routing is a cut: a tool left out cannot be called. When routing leaves tools out and tool
search is on, the upstream request carries one more tool, `SEARCH_NAME`, appended after the
routed ones. A model that finds none of its tools fits calls it with a query; toolsift answers
the call itself — it ranks the request's tools that were not offered with its router — and
sends the exchange upstream again with the found tools appended to the tool list (appended, so
the prompt cache of everything before them survives), inside the same client request, at most
``max_searches`` rounds (the last round goes without the search tool, so the model must act).

A request that brought no tools and got catalog tools (inject on, ``status`` injected) searches
the catalog instead: the tools found are named and shaped as the injected ones are (so a call of
one is checked like a call of an injected tool), each with its record ``id`` in
``x-toolsift-selected``. A request that brought its own tools searches only those: catalog tools
reach only requests that brought none (the inject rule), since a client that defined its tools
cannot run one it never defined.

The client never sees the search tool or its rounds: it gets the model's last answer, whose
calls are checked against the routed tools plus the found ones (reason ``searched`` in
``x-toolsift-selected``; ``search=N`` in ``x-toolsift-route``: rounds used, 0 when offered and
not called). A request that brings its own tool named `SEARCH_NAME` gets no search tool.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

__all__ = ["SEARCH_NAME", "SEARCH_RESULTS", "catalog_found", "chat_search_tool", "found_text", "query_of"]

SEARCH_NAME = "toolsift_search_tools"
SEARCH_RESULTS = 5  # tools one search returns (the providers' tool searches return 3-5)

_DESCRIPTION = ("Search for more tools. You were given only the tools most likely to fit this request; many "
                "more exist. If none of your tools can do what is needed, call this with a short description "
                "of the action you need (not the user's whole message). The tools found are added to your "
                "tools and can be called right after.")


def chat_search_tool() -> dict:
    """The search tool in the Chat Completions shape (the APIs convert it to their own)."""
    return {"type": "function", "function": {
        "name": SEARCH_NAME, "description": _DESCRIPTION,
        "parameters": {"type": "object", "properties": {"query": {
            "type": "string", "description": "What the tool you need should do, e.g. 'convert currency'."}},
            "required": ["query"]}}}


def query_of(call: dict) -> str:
    """The query a search call asks (its ``query`` argument, else all of its arguments as text)."""
    args = (call.get("function") or {}).get("arguments")
    try:
        parsed = json.loads(args) if isinstance(args, str) else args
    except ValueError:
        return str(args or "")
    if isinstance(parsed, dict):
        q = parsed.get("query")
        if isinstance(q, str) and q.strip():
            return q.strip()
        return " ".join(str(v) for v in parsed.values() if isinstance(v, (str, int, float)))
    return str(parsed or "")


def found_text(query: str, found: Sequence[dict]) -> str:
    """The search tool's answer, as the model reads it."""
    if not found:
        return (f"No other tool matches {query!r}. Use the tools you have, or answer without a tool.")
    lines = []
    for tool in found:
        fn = tool.get("function") or {}
        desc = " ".join(str(fn.get("description") or "").split())
        lines.append(f"- {fn.get('name')}: {desc[:200]}" if desc else f"- {fn.get('name')}")
    return (f"Found {len(found)} tool(s) for {query!r}; they are now in your tool list and can be called:\n"
            + "\n".join(lines))


def catalog_found(rr: Any, routed: Any, query: str, n: int = SEARCH_RESULTS) -> list[tuple[str, dict, dict]]:
    """The catalog's ``n`` best tools for ``query`` that ``routed`` does not offer yet, as
    (name, Chat Completions tool, what ``x-toolsift-selected`` says of it besides the reason).
    ``rr``: the request's `RequestRouter` (a tenant's view of the catalog under tenancy)."""
    from .policy import tool_name

    offered = {s["id"] for s in routed.selected if s.get("id")}
    sels = rr.router.select(query, k=n + len(offered), method=rr.method)
    picked = [s for s in sels if s.record.id not in offered][:n]
    named = rr.catalog_tools([s.record for s in picked], taken={tool_name(t) for t in routed.offered})
    return [(name, tool, {"id": s.record.id, "score": round(float(s.score), 4)})
            for (name, tool), s in zip(named, picked)]


def catalog_left(rr: Any, routed: Any) -> bool:
    """Whether the catalog holds tools an injected request was not given."""
    return rr.router is not None and len(rr.router.records) > len(routed.offered)


def not_run_text() -> str:
    return "Not executed: it was sent together with a tool search. Call it again if it is still needed."


def native_search_tool(api: Any) -> dict:
    """The search tool in ``api``'s own tool shape."""
    return api.native_tools([chat_search_tool()])[0]
