"""The Responses and Messages (Anthropic) wire formats for the scripted upstream, and a scripted
"model" that behaves like an agent's LLM in any of the three APIs.

Answers (served as JSON, or as the API's own SSE events when the request streams):

- ``response(text=None, calls=())``: a Responses ``response`` object; ``calls`` are
  ``(name, arguments)`` pairs that become ``function_call`` output items;
  ``response_to_events`` is its event stream (``response.created`` ... ``response.output_item.done``
  ... ``response.completed``), as the OpenAI API sends it;
- ``message(text=None, calls=())``: a Messages ``message`` object with ``text`` and ``tool_use``
  blocks; ``message_to_events`` is its event stream (``message_start``, ``content_block_*`` with
  ``input_json_delta`` fragments, ``message_delta``, ``message_stop``), as Anthropic sends it.

``agent_model(task_tool, arguments, answer)`` is a script callable ``fn(request, api)``: while the
conversation holds no tool result it calls ``task_tool`` if it was offered (else it says it was
not, in text); afterwards it calls a framework's control tool when one is offered
(``final_answer`` with ``{"answer": answer}``, ``final_result*`` with arguments from its schema),
else it answers ``answer`` in text. So an agent finishes its task only if routing kept the tools
it needs.
"""
from __future__ import annotations

import itertools
import json
import time
from typing import Any, Iterable

from .scripted_upstream import completion, example_arguments, tool_call

_ids = itertools.count(1)


# ---------------------------------------------------------------- Responses API

def response(text: str | None = None, calls: Iterable[tuple[str, dict | str]] = (), *,
             model: str = "scripted-model") -> dict:
    output: list[dict] = []
    if text is not None:
        output.append({"type": "message", "id": f"msg_{next(_ids)}", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for name, args in calls:
        n = next(_ids)
        output.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                       "arguments": args if isinstance(args, str) else json.dumps(args), "status": "completed"})
    return {"id": f"resp_{next(_ids)}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": model, "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
            "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}},
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def response_to_events(resp: dict) -> list[tuple[str, dict]]:
    """The Responses SSE events for ``resp`` (each a pair: event name, data)."""
    seq = itertools.count()
    events: list[tuple[str, dict]] = []

    def ev(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(seq), **data}))

    pending = {**resp, "status": "in_progress", "output": []}
    ev("response.created", response=pending)
    ev("response.in_progress", response=pending)
    for i, item in enumerate(resp["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            ev("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "content": []})
            ev("response.content_part.added", item_id=item["id"], output_index=i, content_index=0,
               part={"type": "output_text", "text": "", "annotations": []})
            for piece in _pieces(text):
                ev("response.output_text.delta", item_id=item["id"], output_index=i, content_index=0, delta=piece,
                   logprobs=[])
            ev("response.output_text.done", item_id=item["id"], output_index=i, content_index=0, text=text,
               logprobs=[])
            ev("response.content_part.done", item_id=item["id"], output_index=i, content_index=0,
               part=item["content"][0])
        else:
            ev("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "arguments": ""})
            for piece in _pieces(item["arguments"]):
                ev("response.function_call_arguments.delta", item_id=item["id"], output_index=i, delta=piece)
            ev("response.function_call_arguments.done", item_id=item["id"], output_index=i,
               arguments=item["arguments"], name=item["name"])
        ev("response.output_item.done", output_index=i, item=item)
    ev("response.completed", response=resp)
    return events


# ---------------------------------------------------------------- Messages API (Anthropic)

def message(text: str | None = None, calls: Iterable[tuple[str, dict]] = (), *, model: str = "scripted-model") -> dict:
    content: list[dict] = [{"type": "text", "text": text}] if text is not None else []
    content += [{"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name,
                 "input": args if isinstance(args, dict) else json.loads(args)} for name, args in calls]
    return {"id": f"msg_{next(_ids)}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def message_to_events(msg: dict) -> list[tuple[str, dict]]:
    """The Messages SSE events for ``msg`` (each a pair: event name, data)."""
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": {
        **msg, "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        ("ping", {"type": "ping"})]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "text_delta", "text": p}})
                       for p in _pieces(block["text"])]
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}))
            events += [("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "input_json_delta", "partial_json": p}})
                       for p in _pieces(json.dumps(block["input"]))]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                                      "stop_sequence": None},
                                     "usage": {"output_tokens": 1}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _pieces(text: str, n: int = 3) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


# ---------------------------------------------------------------- reading a request of any API

def offered_tools(request: dict, api: str) -> dict[str, dict]:
    """{name: parameters schema} of the function tools a request offers."""
    out = {}
    for t in request.get("tools") or []:
        if api == "chat" and t.get("type") == "function":
            out[t["function"]["name"]] = t["function"].get("parameters") or {}
        elif api == "responses" and t.get("type") == "function":
            out[t["name"]] = t.get("parameters") or {}
        elif api == "messages" and t.get("type", "custom") == "custom":
            out[t["name"]] = t.get("input_schema") or {}
    return out


def tool_results(request: dict, api: str) -> int:
    """How many tool results the conversation holds."""
    if api == "chat":
        return sum(m.get("role") == "tool" for m in request.get("messages") or [])
    if api == "responses":
        items = request.get("input")
        return sum(isinstance(i, dict) and i.get("type") == "function_call_output"
                   for i in (items if isinstance(items, list) else []))
    return sum(isinstance(b, dict) and b.get("type") == "tool_result"
               for m in request.get("messages") or [] if isinstance(m.get("content"), list) for b in m["content"])


def answer(api: str, text: str | None = None, calls: list[tuple[str, dict]] = ()) -> dict:
    """One answer in the API's own format."""
    if api == "responses":
        return response(text, calls)
    if api == "messages":
        return message(text, calls)
    return completion(text, [tool_call(n, a) for n, a in calls] or None)


CONTROL = ("final_answer", "final_result")


def agent_model(task_tool: str = "get_weather", arguments: dict | None = None,
                final: str = "It is 12 °C and sunny in Oslo.", result: str | None = None):
    """A script callable that behaves like an agent's model (see the module doc). ``result``: the
    text the task tool returns, for frameworks that send tool results back as plain text
    (smolagents writes them as "Observation: ..." user turns)."""
    arguments = arguments if arguments is not None else {"city": "Oslo"}

    def has_result(request: dict, api: str) -> bool:
        if tool_results(request, api):
            return True
        conversation = request.get("messages", request.get("input"))
        return bool(result) and result in json.dumps(conversation, ensure_ascii=False)

    def script(request: dict, api: str) -> dict:
        offered = offered_tools(request, api)
        if not has_result(request, api):
            if task_tool in offered:
                return answer(api, None, [(task_tool, arguments)])
            return answer(api, f"I cannot do this: {task_tool} was not offered (got {sorted(offered)})")
        control = next((n for n in offered if n.startswith(CONTROL)), None)
        if control == "final_answer":
            return answer(api, None, [(control, {"answer": final})])
        if control:
            return answer(api, None, [(control, example_arguments(offered[control]))])
        return answer(api, final)

    return script


def searching_model(task_tool: str, arguments: dict, query: str, result: str, final: str = "Done.",
                    search_tool: str = "toolsift_search_tools"):
    """A script callable ``fn(request, api)`` for a model whose needed tool may have been left out:
    once ``result`` (the task tool's output) is in the conversation it answers ``final``; else it
    calls ``task_tool`` when offered; else it calls ``search_tool`` with ``{"query": query}`` when
    offered; else it says in text that it cannot do the task."""
    def script(request: dict, api: str) -> dict:
        offered = offered_tools(request, api)
        conversation = json.dumps(request.get("messages", request.get("input")), ensure_ascii=False)
        if result in conversation:
            return answer(api, final)
        if task_tool in offered:
            return answer(api, None, [(task_tool, arguments)])
        if search_tool in offered:
            return answer(api, None, [(search_tool, {"query": query})])
        return answer(api, f"I cannot do this: {task_tool} was not offered (got {sorted(offered)})")

    return script
