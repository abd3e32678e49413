"""Tool calling for models without native function calling: prompt + JSON.

The tools are described in the system prompt and the model is told to reply with
``{"action": name, "params": {...}}`` (a list of those for several calls at once) or
with its answer. Replies are rarely pure JSON (prose around it, markdown fences, single
quotes, ``undefined``, trailing commas), so `extract_json` looks for the outermost
object, cleans it, and gives up with ``None`` rather than guessing; the loop then tells
the model its format was wrong.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON|javascript|js|python)?[ \t]*\n?(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_ACTION_HINT = re.compile(r"""["']?(action|tool|name)["']?\s*[:=]""", re.I)
_PY_WORDS = {"true": "True", "false": "False", "null": "None", "undefined": "None"}


def extract_json(text: str | None) -> Any:
    """The JSON object (or list) a reply carries, or None when there is none to trust."""
    if not text or not text.strip():
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    candidates += balanced_spans(text)
    candidates.append(text)
    for candidate in candidates:
        value = loads_tolerant(candidate.strip())
        if isinstance(value, (dict, list)):
            return value
    return None


def balanced_spans(text: str) -> list[str]:
    """Top-level ``{...}`` / ``[...]`` spans, in order, skipping brackets inside strings."""
    spans, depth, start, quote, escaped = [], 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch in "{[":
            if depth == 0:
                start = i
            depth += 1
        elif ch in "}]" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    # Objects first: a reply's action is an object; a list is tried after.
    return sorted(spans, key=lambda s: (not s.startswith("{"), text.index(s)))


def loads_tolerant(candidate: str) -> Any:
    """json.loads, then the same after the usual repairs, then a Python-literal read."""
    if not candidate:
        return None
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    cleaned = _TRAILING_COMMA.sub(r"\1", re.sub(r"\bundefined\b", "null", candidate))
    try:
        return json.loads(cleaned)
    except ValueError:
        pass
    # Single quotes, True/False/None: a Python literal (never evaluated as code).
    pythonish = re.sub(r"\b(true|false|null|undefined)\b", lambda m: _PY_WORDS[m.group(1)], cleaned)
    try:
        return ast.literal_eval(pythonish)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


@dataclass
class Parsed:
    """What one text reply asks for: tool calls, a final answer, or a format error."""

    kind: str  # "calls" | "answer" | "format_error"
    calls: list[dict[str, Any]] = field(default_factory=list)  # {"name", "arguments"}
    answer: str = ""
    error: str = ""


_NAME_KEYS = ("action", "tool", "name", "function", "tool_name")
_ARG_KEYS = ("params", "parameters", "arguments", "args", "action_input", "input")
_ANSWER_KEYS = ("answer", "final_answer", "final", "response")


def parse_reply(text: str | None) -> Parsed:
    """Read a prompt-JSON reply."""
    text = text or ""
    value = extract_json(text)
    if isinstance(value, dict) and not any(k in value for k in _NAME_KEYS) and any(k in value for k in _ANSWER_KEYS):
        key = next(k for k in _ANSWER_KEYS if k in value)
        return Parsed("answer", answer=str(value[key]))
    items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    calls = [c for c in (_as_call(item) for item in items) if c is not None]
    if calls and len(calls) == len(items):
        return Parsed("calls", calls=calls)
    if value is None and _ACTION_HINT.search(text) and ("{" in text or "[" in text):
        return Parsed("format_error", error="your reply looks like a tool call but is not valid JSON")
    if items and not calls:
        if _ACTION_HINT.search(text):
            return Parsed("format_error", error='a tool call needs "action" (the tool name) and "params" (an object)')
    return Parsed("answer", answer=text.strip())


def _as_call(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str) and item[k].strip()), None)
    if name is None:
        return None
    args = next((item[k] for k in _ARG_KEYS if k in item), {})
    if args is None:
        args = {}
    return {"name": name.strip(), "arguments": args}


def tool_lines(tools: list[dict[str, Any]], schema_label: str) -> list[str]:
    """Two prompt lines per tool (OpenAI function dicts): name and description, then its schema."""
    lines = []
    for fn in tools:
        lines.append(f"- {fn['name']}: {fn.get('description', '')}".rstrip())
        lines.append(f"  {schema_label}: {json.dumps(fn.get('parameters') or {}, ensure_ascii=False)}")
    return lines


def system_prompt(tools: list[dict[str, Any]], *, last_round: bool = False) -> str:
    """The system prompt that describes ``tools`` (OpenAI function dicts) and the reply format."""
    if last_round or not tools:
        return ("No tools are available any more. Answer the user now, in plain text, with the "
                "information you already have.")
    lines = ["You can use these tools:", *tool_lines(tools, "parameters (JSON Schema)")]
    lines += ["",
              'To call a tool, reply with only a JSON object: {"action": "<tool name>", "params": {<arguments>}}.',
              "To call several tools at once, reply with a JSON list of such objects.",
              'When you can answer the user, reply with {"answer": "<your answer>"} or plain text with no JSON.',
              "Tool results come back as messages starting with 'Observation'."]
    return "\n".join(lines)


def format_error_message(error: str) -> str:
    return (f"Format error: {error}. Reply with only a JSON object "
            '{"action": "<tool name>", "params": {...}}, or answer in plain text.')
