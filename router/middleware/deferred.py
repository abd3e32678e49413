"""The providers' tool searches, for every model (issue 37, item 2).

Anthropic's: a Messages client that marks tools
``defer_loading: true`` and adds a ``tool_search_tool_bm25_*`` / ``tool_search_tool_regex_*``
server tool works unchanged through ``toolsift serve anthropic`` in front of a model that has
never heard of deferral.

What goes upstream: the tools not deferred, the deferred tools an earlier search already loaded
(``tool_reference`` blocks in the conversation), and toolsift's own search tool
(router/middleware/search.py) in place of the server tool; no ``defer_loading`` flag. The
search runs over the deferred tools with toolsift's router. What comes back: the model's answer
with, in front of it, one ``server_tool_use`` block (named after the client's search tool) and
one ``tool_search_tool_result`` block holding ``tool_reference`` blocks per search, as
Anthropic's API answers. On the next turn those blocks are taken out of the history sent
upstream (a model that knows nothing of them would refuse them) and their tools stay loaded.

OpenAI's hosted ``tool_search`` (Responses: ``{"type": "tool_search"}``, ``execution`` "server"
or absent, with ``defer_loading: true`` functions) works the same way through ``serve openai``:
the answer's output starts with a ``tool_search_call`` and a ``tool_search_output`` item (the
loaded tool definitions) per search, and ``tool_search_output`` items sent back load their tools.
Client-executed (``execution: "client"``): the model gets a stand-in function tool, its calls go
to the client as ``tool_search_call`` items, and the client's ``tool_search_output`` items go
upstream as that tool's output, their tools loaded. Not handled (sent upstream as they came):
deferred functions inside a ``namespace``.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["Deferral", "for_request", "prepare", "prepare_responses"]

_SEARCH_TYPES = ("tool_search_tool_bm25", "tool_search_tool_regex")
_ids = itertools.count(1)


def _is_search_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and str(tool.get("type", "")).startswith(_SEARCH_TYPES)


def _is_custom(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type", "custom") == "custom"


def _undeferred(tool: dict) -> dict:
    return {k: v for k, v in tool.items() if k != "defer_loading"}


@dataclass
class Deferral:
    search_name: str                 # the client's search tool, as its answers must name it
    pool: dict[str, dict]            # deferred tools not loaded yet: name -> tool (client's shape)
    api: str = "messages"            # or "responses"
    client: bool = False             # Responses, execution "client": the client runs the search itself
    loaded: tuple[str, ...] = ()     # deferred tools earlier searches loaded (sent upstream undeferred)

    def answer(self, data: dict, log: list[tuple[str, list[str]]]) -> bytes | None:
        """The upstream's answer with the searches (``log``: query, found names) in front, in
        the provider's own items; with a client-executed search, the model's calls of it as
        ``tool_search_call`` items. None when the answer is unchanged."""
        if self.client:
            return _client_calls(data)
        if not log:
            return None
        key = "output" if self.api == "responses" else "content"
        return json.dumps(dict(data, **{key: [*self.front(log), *(data.get(key) or [])]})).encode()

    def front(self, log: list[tuple[str, list[str]]]) -> list[dict]:
        """The searches answered, as the provider puts them in front of its answer: Messages
        ``server_tool_use`` + ``tool_search_tool_result`` blocks, Responses ``tool_search_call`` +
        ``tool_search_output`` items (search_stream.py streams the same)."""
        if self.api == "responses":
            return self._responses_items(log)
        blocks: list[dict] = []
        for query, names in log:
            use_id = f"srvtoolu_toolsift_{next(_ids)}"
            blocks.append({"type": "server_tool_use", "id": use_id, "name": self.search_name, "input": {"query": query}})
            blocks.append({"type": "tool_search_tool_result", "tool_use_id": use_id, "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": n} for n in names]}})
        return blocks

    def _responses_items(self, log: list[tuple[str, list[str]]]) -> list[dict]:
        items: list[dict] = []
        for query, names in log:
            n = next(_ids)
            common = {"call_id": f"tsc_toolsift_{n}", "execution": "server", "status": "completed"}
            items.append({"type": "tool_search_call", "id": f"tsc_{n}", "arguments": {"query": query}, **common})
            items.append({"type": "tool_search_output", "id": f"tso_{n}", **common,
                          "tools": [self.pool[name] for name in names if name in self.pool]})
        return items


def _references(content: Any) -> list[str]:
    """Tool names of the ``tool_reference`` blocks anywhere in a content list."""
    out: list[str] = []
    if isinstance(content, dict):
        if content.get("type") == "tool_reference" and isinstance(content.get("tool_name"), str):
            out.append(content["tool_name"])
        for value in content.values():
            if isinstance(value, (list, dict)):
                out += _references(value)
    elif isinstance(content, list):
        for item in content:
            out += _references(item)
    return out


def _history(messages: Any, search_name: str) -> list[dict]:
    """The conversation without the search blocks (a line of text says what was found)."""
    out = []
    for m in messages if isinstance(messages, list) else []:
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(content, list):
            out.append(m)
            continue
        kept = [b for b in content if not (isinstance(b, dict) and (
            b.get("type") == "tool_search_tool_result" or (b.get("type") == "server_tool_use"
                                                           and b.get("name") == search_name)))]
        if len(kept) != len(content):
            found = _references(content)
            if found:
                kept.insert(0, {"type": "text", "text": "(tools loaded by search: " + ", ".join(found) + ")"})
        out.append(dict(m, content=kept or [{"type": "text", "text": "(tool search)"}]))
    return out


def prepare(body: Any) -> tuple[dict, Deferral] | None:
    """The body to route and send upstream, and what the exchange needs to answer searches;
    None when the request uses no tool search of Anthropic's."""
    tools = body.get("tools") if isinstance(body, dict) else None
    search = next((t for t in tools if _is_search_tool(t)), None) if isinstance(tools, list) else None
    if search is None:
        return None
    loaded = set(_references(body.get("messages")))
    pool, kept = {}, []
    for t in tools:
        if t is search:
            continue
        if _is_custom(t) and t.get("defer_loading") and t.get("name") not in loaded:
            pool[t.get("name")] = _undeferred(t)
        else:
            kept.append(_undeferred(t) if isinstance(t, dict) else t)
    sent = dict(body, messages=_history(body.get("messages"), search.get("name")), tools=kept)
    if not kept:
        sent.pop("tools")
    return sent, Deferral(str(search.get("name") or search.get("type")), pool)


def _is_hosted_search(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "tool_search" and tool.get("execution") != "client"


def search_call_item(item: dict) -> dict:
    """A call of the stand-in search tool as a client-executed ``tool_search_call`` item."""
    try:
        args = json.loads(item.get("arguments") or "{}")
    except ValueError:
        args = {"query": item.get("arguments")}
    return {"type": "tool_search_call", "id": item.get("id") or f"tsc_{next(_ids)}", "call_id": item.get("call_id"),
            "arguments": args, "execution": "client", "status": "completed"}


def _client_calls(data: dict) -> bytes | None:
    """The model's calls of the stand-in search tool as client-executed ``tool_search_call`` items."""
    from .search import SEARCH_NAME

    output, changed = [], False
    for item in data.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "function_call" and item.get("name") == SEARCH_NAME:
            item = search_call_item(item)
            changed = True
        output.append(item)
    return json.dumps(dict(data, output=output)).encode() if changed else None


def _client_history(items: list) -> list:
    """Client-executed search items as the stand-in tool's call and output (a model that knows
    nothing of them reads an ordinary function call)."""
    from .search import SEARCH_NAME, found_text

    out = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "tool_search_call":
            args = item.get("arguments")
            out.append({"type": "function_call", "call_id": item.get("call_id"), "name": SEARCH_NAME,
                        "arguments": args if isinstance(args, str) else json.dumps(args or {})})
        elif kind == "tool_search_output":
            tools = [{"function": t} for t in item.get("tools") or [] if isinstance(t, dict)]
            out.append({"type": "function_call_output", "call_id": item.get("call_id"),
                        "output": found_text("the search", tools)})
        else:
            out.append(item)
    return out


def prepare_responses(body: Any, earlier: Iterable[str] = ()) -> tuple[dict, Deferral] | None:
    """As `prepare`, for OpenAI's ``tool_search`` on the Responses API: hosted (toolsift answers
    the search) or client-executed (the client does; the model gets a stand-in function tool)."""
    tools = body.get("tools") if isinstance(body, dict) else None
    search = next((t for t in tools if isinstance(t, dict) and t.get("type") == "tool_search"), None) \
        if isinstance(tools, list) else None
    if search is None:
        return None
    if not _is_hosted_search(search):
        return _prepare_client(body, tools, search, earlier)
    given = body.get("input")
    items = given if isinstance(given, list) else []
    searched = [i for i in items if isinstance(i, dict) and i.get("type") in ("tool_search_call", "tool_search_output")]
    loaded = {t.get("name") for i in searched if i.get("type") == "tool_search_output"
              for t in i.get("tools") or [] if isinstance(t, dict)} | set(earlier)
    pool, kept = {}, []
    for t in tools:
        if t is search:
            continue
        if isinstance(t, dict) and t.get("type") == "function" and t.get("defer_loading") and t.get("name") not in loaded:
            pool[t.get("name")] = _undeferred(t)
        else:
            kept.append(_undeferred(t) if isinstance(t, dict) and t.get("type") == "function" else t)
    sent = dict(body, tools=kept)
    if searched:
        sent["input"] = [i for i in items if i not in searched]
    if not kept:
        sent.pop("tools")
    return sent, Deferral("tool_search", pool, api="responses", loaded=tuple(sorted(n for n in loaded if n)))


def _prepare_client(body: dict, tools: list, search: dict, earlier: Iterable[str] = ()) -> tuple[dict, Deferral]:
    from .search import SEARCH_NAME, chat_search_tool

    items = body.get("input") if isinstance(body.get("input"), list) else []
    loaded = {t.get("name") for i in items if isinstance(i, dict) and i.get("type") == "tool_search_output"
              for t in i.get("tools") or [] if isinstance(t, dict)} | set(earlier)
    stand_in = {"type": "function", **chat_search_tool()["function"]}
    if search.get("description"):
        stand_in["description"] = search["description"]
    if isinstance(search.get("parameters"), dict):
        stand_in["parameters"] = search["parameters"]
    kept = [_undeferred(t) if isinstance(t, dict) and t.get("type") == "function" else t for t in tools
            if t is not search and not (isinstance(t, dict) and t.get("type") == "function"
                                        and t.get("defer_loading") and t.get("name") not in loaded)]
    given = [t for i in items if isinstance(i, dict) and i.get("type") == "tool_search_output"
             for t in i.get("tools") or [] if isinstance(t, dict) and t.get("name") not in {k.get("name") for k in kept}]
    sent = dict(body, tools=[*kept, *given, stand_in])
    if items:
        sent["input"] = _client_history(items)
    return sent, Deferral(SEARCH_NAME, {}, api="responses", client=True, loaded=tuple(sorted(n for n in loaded if n)))


def for_request(api: str, body: Any, keep: tuple[str, ...],
                earlier: Iterable[str] = ()) -> tuple[Any, Deferral | None, tuple[str, ...]]:
    """(body to route, the request's tool search or None, tool names to keep) for one request of
    ``api`` ("chat", "responses", "messages"); the stand-in for a client's search is never cut.
    ``earlier``: tools loaded by searches of the previous response (the Responses API's
    ``previous_response_id`` does not send those items again)."""
    prepared = prepare(body) if api == "messages" else prepare_responses(body, earlier) if api == "responses" \
        else None
    if prepared is None:
        return body, None, keep
    body, deferral = prepared
    return body, deferral, (*keep, deferral.search_name) if deferral.client else keep
