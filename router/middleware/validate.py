"""A request checked against its own API's shape before any work, and refused in that API's words
(issues 37, 42).

Each API's fields that toolsift reads are checked here, as the API documents them: a Messages
request is told about ``input_schema`` and ``tool_result`` blocks, a Responses request about
``input`` items and function tools with a top-level ``name``, a Chat Completions request about
``messages`` and ``function`` tools. The routing code underneath works on the Chat Completions
view of every request; without this check a malformed Responses or Messages body was either
described in Chat Completions words (a "nameless tool", an ``"input": 5`` called image-only) or
met a Python error deep inside (500). Fields toolsift does not read pass through for the
upstream to judge.
"""
from __future__ import annotations

from typing import Any

from .errors import RequestError
from .request_body import ToolList

__all__ = ["check_chat", "check_messages", "check_responses", "check_request"]


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _need(ok: bool, where: str, what: str, value: Any) -> None:
    if not ok:
        raise RequestError(f"{where} must be {what}, got {_kind(value)}")


def _text_parts(parts: Any, where: str, noun: str = "part") -> None:
    """A list of content parts whose ``text``, when present, is a string."""
    for i, p in enumerate(parts):
        _need(isinstance(p, dict), f"{where}[{i}]", f"a {noun} object", p)
        if "text" in p:
            _need(isinstance(p["text"], str), f"{where}[{i}].text", "a string", p["text"])


# ------------------------------------------------------------------ Chat Completions

def check_chat(body: dict) -> None:
    msgs = body.get("messages")
    _need(isinstance(msgs, list) and bool(msgs), "'messages'", "a non-empty list of messages", msgs)
    for i, m in enumerate(msgs):
        _need(isinstance(m, dict), f"messages[{i}]", "a message object", m)
        content = m.get("content")
        _need(content is None or isinstance(content, (str, list)), f"messages[{i}].content",
              "a string or a list of content parts", content)
        if isinstance(content, list):
            _text_parts(content, f"messages[{i}].content")
        calls = m.get("tool_calls")
        _need(calls is None or isinstance(calls, list), f"messages[{i}].tool_calls", "a list", calls)
        for j, c in enumerate(calls or []):
            _need(isinstance(c, dict) and isinstance(c.get("function", {}), dict), f"messages[{i}].tool_calls[{j}]",
                  'a tool call {"id", "type": "function", "function": {"name", "arguments"}}', c)
    tools = body.get("tools")  # a list as sent is a ToolList, each tool's shape already checked
    _need(tools is None or isinstance(tools, (list, ToolList)), "'tools'", "a list of tools", tools)
    _chat_choice(body.get("tool_choice"))


def _chat_choice(choice: Any) -> None:
    if choice is None or isinstance(choice, str):
        return
    _need(isinstance(choice, dict), "'tool_choice'", '"none", "auto", "required" or an object', choice)
    fn = choice.get("function")
    _need(fn is None or isinstance(fn, dict), "tool_choice.function", 'an object {"name": ...}', fn)
    if "allowed_tools" in choice:
        allowed = choice["allowed_tools"]
        _need(isinstance(allowed, dict), "tool_choice.allowed_tools", 'an object {"mode", "tools": [...]}', allowed)
        tools = allowed.get("tools")
        _need(isinstance(tools, list), "tool_choice.allowed_tools.tools", "a list of tools", tools)
        for i, t in enumerate(tools):
            _need(isinstance(t, dict) and isinstance(t.get("function", {}), dict),
                  f"tool_choice.allowed_tools.tools[{i}]", '{"type": "function", "function": {"name": ...}}', t)


# ------------------------------------------------------------------ Responses

def check_responses(body: dict) -> None:
    instructions = body.get("instructions")
    _need(instructions is None or isinstance(instructions, str), "'instructions'", "a string", instructions)
    prev = body.get("previous_response_id")
    _need(prev is None or isinstance(prev, str), "'previous_response_id'", "a string", prev)
    items = body.get("input")
    _need(items is None or isinstance(items, (str, list)), "'input'", "a string or a list of input items", items)
    for i, item in enumerate(items if isinstance(items, list) else []):
        where = f"input[{i}]"
        _need(isinstance(item, dict), where, "an input item object", item)
        kind = item.get("type", "message")
        if kind == "function_call":
            _need(isinstance(item.get("name"), str) and bool(item["name"]), f"{where}.name",
                  "the called function's name (a string)", item.get("name"))
            args = item.get("arguments")
            _need(args is None or isinstance(args, str), f"{where}.arguments", "a JSON string", args)
        elif kind == "function_call_output":
            out = item.get("output")
            _need(isinstance(out, (str, list)), f"{where}.output", "a string or a list of content items", out)
        elif kind == "message" or "role" in item:
            content = item.get("content")
            _need(isinstance(content, (str, list)), f"{where}.content", "a string or a list of content items",
                  content)
            if isinstance(content, list):
                _text_parts(content, f"{where}.content", "content item")
    tools = body.get("tools")
    _need(tools is None or isinstance(tools, list), "'tools'", "a list of tools", tools)
    for i, t in enumerate(tools or []):
        _need(isinstance(t, dict) and isinstance(t.get("type"), str), f"tools[{i}]",
              'a tool object with a "type"', t)
        if t["type"] == "function":
            _need(isinstance(t.get("name"), str) and bool(t["name"]), f"tools[{i}].name",
                  'the function\'s name (a function tool is {"type": "function", "name", "description", '
                  '"parameters"})', t.get("name"))
    choice = body.get("tool_choice")
    if choice is None or isinstance(choice, str):
        return
    _need(isinstance(choice, dict), "'tool_choice'", '"none", "auto", "required" or an object', choice)
    if choice.get("type") == "function":
        _need(isinstance(choice.get("name"), str), "tool_choice.name", "the function's name", choice.get("name"))
    if choice.get("type") == "allowed_tools":
        allowed = choice.get("tools")
        _need(isinstance(allowed, list), "tool_choice.tools", "a list of tools", allowed)
        for i, t in enumerate(allowed):
            _need(isinstance(t, dict), f"tool_choice.tools[{i}]", 'a tool object {"type": "function", "name"}', t)


# ------------------------------------------------------------------ Messages

def check_messages(body: dict) -> None:
    system = body.get("system")
    _need(system is None or isinstance(system, (str, list)), "'system'", "a string or a list of text blocks", system)
    if isinstance(system, list):
        _text_parts(system, "system", "text block")
    msgs = body.get("messages")
    _need(isinstance(msgs, list) and bool(msgs), "'messages'", "a non-empty list of messages", msgs)
    for i, m in enumerate(msgs):
        _need(isinstance(m, dict) and isinstance(m.get("role"), str), f"messages[{i}]",
              'a message {"role": "user" or "assistant", "content": ...}', m)
        content = m.get("content")
        _need(isinstance(content, (str, list)), f"messages[{i}].content", "a string or a list of content blocks",
              content)
        for j, b in enumerate(content if isinstance(content, list) else []):
            where = f"messages[{i}].content[{j}]"
            _need(isinstance(b, dict) and isinstance(b.get("type"), str), where, 'a content block with a "type"', b)
            if b["type"] == "text":
                _need(isinstance(b.get("text"), str), f"{where}.text", "a string", b.get("text"))
            elif b["type"] == "tool_use":
                _need(isinstance(b.get("name"), str) and bool(b["name"]), f"{where}.name",
                      "the tool's name (a string)", b.get("name"))
                _need(isinstance(b.get("input", {}), dict), f"{where}.input", "an object", b.get("input"))
            elif b["type"] == "tool_result":
                result = b.get("content")
                _need(result is None or isinstance(result, (str, list)), f"{where}.content",
                      "a string or a list of content blocks", result)
                if isinstance(result, list):
                    _text_parts(result, f"{where}.content", "content block")
    tools = body.get("tools")
    _need(tools is None or isinstance(tools, list), "'tools'", "a list of tools", tools)
    for i, t in enumerate(tools or []):
        _need(isinstance(t, dict), f"tools[{i}]", 'a tool object {"name", "description", "input_schema"}', t)
        if t.get("type", "custom") == "custom":
            _need(isinstance(t.get("name"), str) and bool(t["name"]), f"tools[{i}].name",
                  'the tool\'s name (a tool is {"name", "description", "input_schema"})', t.get("name"))
            schema = t.get("input_schema")
            _need(schema is None or isinstance(schema, dict), f"tools[{i}].input_schema", "a JSON schema object",
                  schema)
    choice = body.get("tool_choice")
    if choice is not None:
        _need(isinstance(choice, dict) and isinstance(choice.get("type"), str), "'tool_choice'",
              'an object {"type": "auto" | "any" | "tool" | "none"}', choice)
        if choice["type"] == "tool":
            _need(isinstance(choice.get("name"), str), "tool_choice.name", "the tool's name", choice.get("name"))


def check_request(api: str, body: Any) -> None:
    """RequestError, in ``api``'s words, when ``body`` does not have that API's shape."""
    if not isinstance(body, dict):
        raise RequestError(f"request body must be a JSON object, got {type(body).__name__}")
    {"chat": check_chat, "responses": check_responses, "messages": check_messages}[api](body)
