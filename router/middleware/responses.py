"""The Responses API (``POST /v1/responses``, the OpenAI Agents SDK's default model class),
routed and checked like Chat Completions (issue 13).

- Function tools (``{"type": "function", "name", "description", "parameters"}``) are routed;
  built-in tools (web search, file search, code interpreter, MCP, custom tools, ...) are passed
  through untouched and never counted against k.
- The routing query comes from ``instructions`` and ``input`` (a string or a list of items:
  messages, ``function_call`` and ``function_call_output`` items); a ``previous_response_id``
  this proxy answered brings the conversation it remembers (`ResponsesMemory`, bounded) — one
  answered elsewhere is routed on what the request itself holds.
- ``function_call`` output items are checked against the function tools offered; a repair turn
  appends the answer's output items and one ``function_call_output`` per call saying why it
  was not run.
- Streams: every event passes through as it comes; ``response.output_item.done`` events carry
  the complete calls, and the verdicts go in an SSE comment just before ``response.completed``.
"""
from __future__ import annotations

import json
from typing import Any

from .checks import UNROUTABLE, Api, CallCheck, repair_turn
from .request import RoutedRequest, as_dict, without_tools
from .tool_cache import LRU

_TERMINAL = ("response.completed", "response.failed", "response.incomplete")


def _text(content: Any) -> Any:
    """Responses content (a string, or input_text / output_text / image parts) as Chat content."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return content  # the policy's validation names the problem if ranking needs it
    parts = []
    for p in content:
        if isinstance(p, dict) and isinstance(p.get("text"), str):
            parts.append({"type": "text", "text": p["text"]})
        elif isinstance(p, dict):
            parts.append({"type": "image_url" if "image" in str(p.get("type")) else str(p.get("type"))})
    return parts


def items_to_messages(items: Any) -> list[dict]:
    """Responses input / output items as Chat Completions messages (for routing and checking)."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: list[dict] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" or (kind not in ("function_call", "function_call_output") and "role" in item):
            out.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id") or item.get("id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments") or "{}"}}
            if out and out[-1].get("role") == "assistant" and out[-1].get("tool_calls") is not None:
                out[-1]["tool_calls"].append(call)  # parallel calls: one assistant turn
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append({"role": "tool", "tool_call_id": item.get("call_id"),
                        "content": output if isinstance(output, str) else json.dumps(output)})
    return out


def _chat_tool(tool: dict) -> dict:
    fn = {"name": tool.get("name")}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            fn[key] = tool[key]
    return {"type": "function", "function": fn}


def _chat_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function" and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        tools = [{"type": "function", "function": {"name": t.get("name")}}
                 for t in choice.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
        return {"type": "allowed_tools", "allowed_tools": {"mode": choice.get("mode"), "tools": tools}}
    return choice


def _has_user_text(messages: list[dict]) -> bool:
    for m in messages:
        c = m.get("content")
        if m.get("role") == "user" and ((isinstance(c, str) and c.strip()) or (isinstance(c, list) and any(
                isinstance(p, dict) and str(p.get("text") or "").strip() for p in c))):
            return True
    return False


def _is_function(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type") == "function"


class ResponsesMemory:
    """The conversations of responses this proxy answered, by client and response id, so that a
    request with ``previous_response_id`` is routed on the whole conversation. Each client
    (router.tenancy.keys.client_id: a tenant, or the holder of one upstream key) has its own
    conversations: another client's response id is one this proxy never answered. Bounded: at
    most ``max_entries`` responses and ``max_chars`` characters of messages (LRU)."""

    def __init__(self, max_entries: int = 2048, max_chars: int = 16 * 2**20) -> None:
        self._lru = LRU(max_entries, max_chars, weigh=lambda msgs: len(json.dumps(msgs, default=str)))

    def of(self, client: str) -> "ClientMemory":
        """The conversations of one client."""
        return ClientMemory(self, client)

    def get(self, response_id: Any, client: str = "") -> list[dict]:
        return list(self._lru.get((client, response_id)) or []) if isinstance(response_id, str) else []

    def remember(self, request_view: dict, response: Any, client: str = "") -> None:
        resp = as_dict(response) or {}
        if isinstance(resp.get("id"), str):
            messages = [m for m in request_view.get("messages", []) if m.get("role") != "system"]
            self._lru.put((client, resp["id"]), messages + items_to_messages(resp.get("output") or []))

    def stats(self) -> dict:
        return self._lru.stats()


class ClientMemory:
    """`ResponsesMemory` as one client sees it."""

    def __init__(self, memory: ResponsesMemory, client: str) -> None:
        self.memory, self.client = memory, client

    def get(self, response_id: Any) -> list[dict]:
        return self.memory.get(response_id, self.client)

    def remember(self, request_view: dict, response: Any) -> None:
        self.memory.remember(request_view, response, self.client)


class ResponsesApi(Api):
    name = "responses"

    def view(self, body: dict, memory: Any = None) -> dict:
        if not isinstance(body, dict):
            return body
        messages: list[dict] = []
        if isinstance(body.get("instructions"), str) and body["instructions"].strip():
            messages.append({"role": "system", "content": body["instructions"]})
        earlier = memory.get(body.get("previous_response_id")) if memory is not None else []
        messages += earlier + items_to_messages(body.get("input"))
        view: dict = {"messages": messages or [{"role": "user", "content": ""}]}
        if body.get("previous_response_id") and not earlier and not _has_user_text(messages):
            # a conversation this proxy never saw (another instance, a restart): nothing to rank on,
            # so every tool goes through, and the header says why
            view[UNROUTABLE] = "previous_response_id not answered by this proxy: no text to rank on"
        tools = body.get("tools")
        if isinstance(tools, list):
            view["tools"] = [_chat_tool(t) for t in tools if _is_function(t)]
        elif tools is not None:
            view["tools"] = tools  # the router's validation says what is wrong with it
        if "tool_choice" in body:
            view["tool_choice"] = _chat_choice(body["tool_choice"])
        return view

    def apply(self, body: dict, routed: RoutedRequest) -> dict:
        tools = body.get("tools")
        builtin = [t for t in tools if not _is_function(t)] if isinstance(tools, list) else []
        if builtin:
            routed.extra["builtin"] = len(builtin)
        if routed.injected:  # catalog tools (inject on) in the Responses shape
            return dict(body, tools=[*builtin, *({"type": "function", **t["function"]} for t in routed.offered)])
        if not isinstance(tools, list) or not tools:
            return body
        names = {t["function"]["name"] for t in routed.offered}
        kept = [t for t in tools if not _is_function(t) or t.get("name") in names]
        return dict(body, tools=kept) if kept else without_tools(body)  # empty: stripped by abstention

    def calls(self, response: Any) -> list[tuple[int, list[dict]]]:
        output = (as_dict(response) or {}).get("output") or []
        calls = [{"id": item.get("call_id"), "type": "function",
                  "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}}
                 for item in output if isinstance(item, dict) and item.get("type") == "function_call"]
        return [(0, calls)] if calls else []

    def repair(self, sent: dict, response: dict, bad: CallCheck, routed: RoutedRequest) -> dict:
        given = sent.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        output = [o for o in response.get("output") or [] if isinstance(o, dict)]
        calls = self.calls(response)[0][1]
        turn = repair_turn({"content": None, "tool_calls": calls}, bad.verdict)
        results = [{"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]}
                   for m in turn[1:]]
        body = dict(sent, input=[*items, *output, *results])
        return self.apply(body, routed) if not routed.injected else dict(
            body, tools=[{"type": "function", **t["function"]} for t in routed.offered])

    def stream(self) -> "ResponsesStream":
        return ResponsesStream()


class ResponsesStream:
    """Collects a streamed response's complete output items; knows where the stream ends."""

    def __init__(self) -> None:
        self.items: dict[int, dict] = {}
        self.final: dict | None = None
        self._event = ""

    def feed_line(self, line: str) -> None:
        if line.startswith("event:"):
            self._event = line[6:].strip()
            return
        if not line.startswith("data:"):
            return
        try:
            data = json.loads(line[5:])
        except ValueError:
            return
        kind = data.get("type", self._event) if isinstance(data, dict) else ""
        if kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            self.items[data.get("output_index", len(self.items))] = data["item"]
        elif kind in _TERMINAL and isinstance(data.get("response"), dict):
            self.final = data["response"]

    def is_end(self, line: str) -> bool:
        if line.startswith("event:"):
            return line[6:].strip() in _TERMINAL
        if line.startswith("data:") and any(f'"{t}"' in line for t in _TERMINAL):
            try:
                return json.loads(line[5:]).get("type") in _TERMINAL
            except (ValueError, AttributeError):
                return False
        return False

    def response(self) -> dict:
        if self.final is not None and self.final.get("output"):
            return self.final
        return {**(self.final or {}), "output": [self.items[i] for i in sorted(self.items)]}


RESPONSES = ResponsesApi()
