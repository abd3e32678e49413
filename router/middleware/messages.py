"""Claude's Messages API (``POST /v1/messages``, ``toolsift serve anthropic``), routed and
checked like Chat Completions (issue 13).

- Custom tools (``{"name", "description", "input_schema"}``, optionally ``"type": "custom"``)
  are routed; server tools (``web_search_...``, ``bash_...``, ``text_editor_...``, anything with
  another ``type``) are passed through untouched and never counted against k.
- The routing query comes from ``system`` and ``messages`` (text blocks; ``tool_use`` blocks are
  the calls already made, ``tool_result`` blocks their results).
- ``tool_use`` blocks of the answer are checked against the custom tools offered (their
  ``input`` object is the arguments); a repair turn appends the answer and one ``tool_result``
  (``is_error: true``) per call saying why it was not run.
- Streams pass through event by event; ``tool_use`` blocks are rebuilt from
  ``content_block_start`` and ``input_json_delta`` events and the verdicts go in an SSE comment
  just before ``message_stop``.
- ``x-api-key``, ``anthropic-version`` and ``anthropic-beta`` are forwarded as sent and never
  logged (the proxy logs no header at all).
"""
from __future__ import annotations

import json
from typing import Any

from .checks import CONVERSATION, HELD, Api, CallCheck, repair_turn
from .conversations import thread_key
from .routed import RoutedRequest, as_dict, without_tools


def _is_custom(tool: Any) -> bool:
    return isinstance(tool, dict) and tool.get("type", "custom") == "custom"


def _chat_tool(tool: dict) -> dict:
    fn = {"name": tool.get("name")}
    if tool.get("description") is not None:
        fn["description"] = tool["description"]
    if tool.get("input_schema") is not None:
        fn["parameters"] = tool["input_schema"]
    return {"type": "function", "function": fn}


def _native_tool(chat_tool: dict) -> dict:
    fn = chat_tool["function"]
    return {"name": fn["name"], "description": fn.get("description", ""),
            "input_schema": fn.get("parameters") or {"type": "object", "properties": {}}}


def _call(block: dict) -> dict:
    args = block.get("input")
    return {"id": block.get("id"), "type": "function",
            "function": {"name": block.get("name"),
                         "arguments": args if isinstance(args, str) else json.dumps(args if args is not None else {})}}


def _blocks_text(content: Any) -> Any:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return content
    return [{"type": "text", "text": b["text"]} if isinstance(b, dict) and isinstance(b.get("text"), str)
            else {"type": str(b.get("type")) if isinstance(b, dict) else "unknown"} for b in content]


def to_messages(messages: Any) -> list[dict]:
    """Messages API turns as Chat Completions messages (for routing)."""
    out: list[dict] = []
    for m in messages if isinstance(messages, list) else []:
        if not isinstance(m, dict):
            continue
        role, content = m.get("role"), m.get("content")
        if not isinstance(content, list):
            out.append({"role": role, "content": content})
            continue
        uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        rest = [b for b in content if not (isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result"))]
        for r in results:
            text = r.get("content")
            text = " ".join(b.get("text", "") for b in text if isinstance(b, dict)) if isinstance(text, list) else text
            out.append({"role": "tool", "tool_call_id": r.get("tool_use_id"), "content": str(text or "")})
        if uses:
            out.append({"role": "assistant", "content": _blocks_text(rest) if rest else None,
                        "tool_calls": [_call(b) for b in uses]})
        elif rest or not results:
            out.append({"role": role, "content": _blocks_text(rest)})
    return out


def _chat_choice(choice: Any) -> Any:
    if not isinstance(choice, dict):
        return choice
    kind = choice.get("type")
    if kind == "tool" and choice.get("name"):
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"any": "required", "none": "none"}.get(kind, "auto")


class MessagesApi(Api):
    name = "messages"

    def view(self, body: dict, memory: Any = None) -> dict:
        if not isinstance(body, dict):
            return body
        messages: list[dict] = []
        system = body.get("system")
        if isinstance(system, list):
            system = " ".join(b.get("text", "") for b in system if isinstance(b, dict))
        if isinstance(system, str) and system.strip():
            messages.append({"role": "system", "content": system})
        turns = to_messages(body.get("messages"))
        messages += turns
        view: dict = {"messages": messages}
        # a thread: named by its system prompt and first user turn (the SDK's thread mode sends
        # tools on the first turn only, router/middleware/conversations.py)
        thread = thread_key(system, turns)
        if thread is not None:
            view[CONVERSATION] = [thread]
        if any(m.get("tool_calls") for m in turns):
            view[HELD] = "no tools in a conversation that already called tools: the upstream holds them"
        tools = body.get("tools")
        if isinstance(tools, list):
            view["tools"] = [_chat_tool(t) for t in tools if _is_custom(t)]
        elif tools is not None:
            view["tools"] = tools
        if "tool_choice" in body:
            view["tool_choice"] = _chat_choice(body["tool_choice"])
        return view

    def apply(self, body: dict, routed: RoutedRequest) -> dict:
        tools = body.get("tools")
        server = [t for t in tools if not _is_custom(t)] if isinstance(tools, list) else []
        if server:
            routed.extra["builtin"] = len(server)
        if routed.injected:
            return dict(body, tools=[*server, *(_native_tool(t) for t in routed.offered)])
        if not isinstance(tools, list) or not tools:
            return body
        names = {t["function"]["name"] for t in routed.offered}
        kept = [t for t in tools if not _is_custom(t) or t.get("name") in names]
        return dict(body, tools=kept) if kept else without_tools(body)  # empty: stripped by abstention

    def calls(self, response: Any) -> list[tuple[int, list[dict]]]:
        content = (as_dict(response) or {}).get("content") or []
        calls = [_call(b) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        return [(0, calls)] if calls else []

    def repair(self, sent: dict, response: dict, bad: CallCheck, routed: RoutedRequest) -> dict:
        calls = self.calls(response)[0][1]
        turn = repair_turn({"content": None, "tool_calls": calls}, bad.verdict)
        results = [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"], "is_error": True}
                   for m in turn[1:]]
        body = dict(sent, messages=[*sent.get("messages", []),
                                    {"role": "assistant", "content": response.get("content") or []},
                                    {"role": "user", "content": results}])
        return self.apply(body, routed) if not routed.injected else dict(
            body, tools=[_native_tool(t) for t in routed.offered])

    def stream(self) -> "MessagesStream":
        return MessagesStream()

    # -- tool search (router/middleware/search.py)
    def native_tools(self, chat_tools: list[dict]) -> list[dict]:
        return [_native_tool(t) for t in chat_tools]

    def to_chat_tools(self, tools: list[dict]) -> list[dict]:
        return [_chat_tool(t) for t in tools]

    def found_tools(self, request: dict, routed: RoutedRequest, names: list[str]) -> list[dict]:
        by_name = {t.get("name"): t for t in request.get("tools") or [] if _is_custom(t)}
        return [by_name[n] for n in names if n in by_name]

    def search_turn(self, sent: dict, response: dict, calls: list[dict], answers: dict[str, str],
                    append: list[dict], drop: str | None) -> dict:
        results = [{"type": "tool_result", "tool_use_id": c["id"], "content": answers[c["id"]]} for c in calls]
        tools = [t for t in sent.get("tools") or [] if not (_is_custom(t) and t.get("name") == drop)] + append
        return dict(sent, tools=tools, messages=[*sent.get("messages", []),
                                                 {"role": "assistant", "content": response.get("content") or []},
                                                 {"role": "user", "content": results}])


class MessagesStream:
    """Rebuilds a streamed message's ``tool_use`` blocks; knows where the stream ends."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict] = {}
        self.message: dict = {}

    def feed_line(self, line: str) -> None:
        if not line.startswith("data:"):
            return
        try:
            data = json.loads(line[5:])
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self.message = {k: v for k, v in data["message"].items() if k != "content"}
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            block = dict(data["content_block"])
            if block.get("type") == "tool_use":
                block["partial"] = ""
            self.blocks[data.get("index", len(self.blocks))] = block
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            block, delta = self.blocks.get(data.get("index")), data["delta"]
            if block is not None and delta.get("type") == "input_json_delta":
                block["partial"] = block.get("partial", "") + (delta.get("partial_json") or "")
            elif block is not None and delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + (delta.get("text") or "")

    def decision(self, search: str) -> str | None:
        """"search" / "commit" / None, as `streamed.StreamAssembler.decision` (thinking blocks wait)."""
        for i in sorted(self.blocks):
            block = self.blocks[i]
            if block.get("type") in ("thinking", "redacted_thinking"):
                continue
            if block.get("type") == "tool_use":
                return "search" if block.get("name") == search else "commit"
            return "commit"
        return None

    def is_end(self, line: str) -> bool:
        return line.startswith("event:") and line[6:].strip() == "message_stop"

    def response(self) -> dict:
        content = []
        for i in sorted(self.blocks):
            block = dict(self.blocks[i])
            if block.get("type") == "tool_use":
                partial = block.pop("partial", "")
                try:
                    block["input"] = json.loads(partial) if partial.strip() else (block.get("input") or {})
                except ValueError:
                    block["input"] = partial  # malformed arguments: the checker says so
            content.append(block)
        return {**self.message, "content": content}


MESSAGES = MessagesApi()
