"""The Responses API (``POST /v1/responses``, the OpenAI Agents SDK's default model class),
routed and checked like Chat Completions (issue 13).

- Function tools (``{"type": "function", "name", "description", "parameters"}``) are routed;
  built-in tools (web search, file search, code interpreter, MCP, custom tools, ...) are passed
  through untouched and never counted against k.
- The routing query comes from ``instructions`` and ``input`` (a string or a list of items:
  messages, ``function_call`` and ``function_call_output`` items); a ``previous_response_id``
  or ``conversation`` this proxy saw brings the conversation it remembers (conversations.py, per
  tenant, bounded); one it never saw is routed on what the request itself holds, or passed
  through when that holds no text. A request without tools in such a conversation has its calls
  checked against the tools remembered for it, or not at all — never against zero tools.
- ``function_call`` output items are checked against the function tools offered; a repair turn
  appends the answer's output items and one ``function_call_output`` per call saying why it
  was not run.
- Streams: every event passes through as it comes; ``response.output_item.done`` events carry
  the complete calls, and the verdicts go in an SSE comment just before ``response.completed``.
"""
from __future__ import annotations

import json
from typing import Any

from .checks import CONVERSATION, HELD, UNROUTABLE, Api, CallCheck, repair_turn
from .routed import RoutedRequest, as_dict, without_tools

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


def _conversation_keys(body: dict) -> list[tuple[str, str]]:
    """The names of the server-held conversation a request continues: its previous response
    and its ``conversation`` (an id, or an object with one)."""
    keys = []
    if isinstance(body.get("previous_response_id"), str):
        keys.append(("response", body["previous_response_id"]))
    conv = body.get("conversation")
    conv = conv.get("id") if isinstance(conv, dict) else conv
    if isinstance(conv, str) and conv:
        keys.append(("conversation", conv))
    return keys


class ResponsesApi(Api):
    name = "responses"

    def view(self, body: dict, memory: Any = None) -> dict:
        if not isinstance(body, dict):
            return body
        messages: list[dict] = []
        if isinstance(body.get("instructions"), str) and body["instructions"].strip():
            messages.append({"role": "system", "content": body["instructions"]})
        keys = _conversation_keys(body)
        earlier: list[dict] = []
        for key in keys if memory is not None else ():
            earlier = memory.get(key)
            if earlier:
                break
        messages += earlier + items_to_messages(body.get("input"))
        view: dict = {"messages": messages or [{"role": "user", "content": ""}]}
        if keys:
            view[CONVERSATION] = keys
            held = " / ".join(f"{kind} {name}" for kind, name in keys)
            view[HELD] = f"continues {held}, whose tools the upstream holds"
            if not earlier and not _has_user_text(messages):
                # a conversation this proxy never saw (another instance, a restart): nothing to rank
                # on, so every tool goes through, and the header says why
                view[UNROUTABLE] = f"{keys[0][0]} not seen by this proxy: no text to rank on"
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

    # -- tool search (router/middleware/search.py)
    def native_tools(self, chat_tools: list[dict]) -> list[dict]:
        return [{"type": "function", **t["function"]} for t in chat_tools]

    def to_chat_tools(self, tools: list[dict]) -> list[dict]:
        return [_chat_tool(t) for t in tools]

    def found_tools(self, request: dict, routed: RoutedRequest, names: list[str]) -> list[dict]:
        by_name = {t.get("name"): t for t in request.get("tools") or [] if _is_function(t)}
        return [by_name[n] for n in names if n in by_name]

    def search_turn(self, sent: dict, response: dict, calls: list[dict], answers: dict[str, str],
                    append: list[dict], drop: str | None) -> dict:
        given = sent.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        output = [o for o in response.get("output") or [] if isinstance(o, dict)]
        results = [{"type": "function_call_output", "call_id": c["id"], "output": answers[c["id"]]} for c in calls]
        tools = [t for t in sent.get("tools") or [] if not (_is_function(t) and t.get("name") == drop)] + append
        return dict(sent, input=[*items, *output, *results], tools=tools)


class ResponsesStream:
    """Collects a streamed response's complete output items; knows where the stream ends."""

    def __init__(self) -> None:
        self.items: dict[int, dict] = {}
        self.final: dict | None = None
        self._event = ""
        self._added: dict[int, dict] = {}  # output items as they start (for `decision`)

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
        if kind == "response.output_item.added" and isinstance(data.get("item"), dict):
            self._added[data.get("output_index", len(self._added))] = data["item"]
        if kind == "response.output_item.done" and isinstance(data.get("item"), dict):
            self.items[data.get("output_index", len(self.items))] = data["item"]
        elif kind in _TERMINAL and isinstance(data.get("response"), dict):
            self.final = data["response"]

    def decision(self, search: str) -> str | None:
        """"search" / "commit" / None, as `streamed.StreamAssembler.decision` (reasoning items wait)."""
        for i in sorted(self._added):
            item = self._added[i]
            if item.get("type") == "reasoning":
                continue
            if item.get("type") == "function_call":
                return "search" if item.get("name") == search else "commit"
            return "commit"
        return "commit" if self.final is not None else None

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
