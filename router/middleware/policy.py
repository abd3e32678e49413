"""What a request must keep, and whether it can be routed at all (shared by every API the
middleware speaks: Chat Completions, Responses, Messages — each first turned into the Chat
Completions shape, see `router.middleware.request`).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Sequence

from ..ranking.kept import CONTROL_TOOLS, control_matcher

from .errors import RequestError
from .request_body import ToolList

MAX_REQUEST_TOOLS = 20_000  # tools one request may bring (checked before any per-tool work)

# Roles a conversation may hold (Chat Completions; "function" is the legacy tool role).
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})

MUST_KEEP = ("pinned", "tool_choice", "request", "control")  # kept even past 128 tools / the token budget

# Framework tools no name pattern covers (issue 37), recognised from what the request says:
# - a hand-off: its name or description says it passes the conversation to another agent
#   (LlamaIndex AgentWorkflow's ``handoff``, langgraph-supervisor's ``transfer_back_to_supervisor``,
#   swarm and Agents SDK hand-offs, whatever they are called);
# - a structured-output tool: named like a type (UpperCamelCase, the schema class it is built
#   from: LangChain ``ToolStrategy(Schema)``), when such names are a small minority of the request's;
# - a tool the system prompt names: frameworks tell the model which tool ends or steers the loop
#   ("call submit_report when done"); a prompt that names more than a few tools is a tool
#   listing, not a steer, and keeps none.
_HANDOVER = re.compile(r"\b(?:hand(?:s|ed|ing)?[ -]?off|handoffs?|transfer(?:s|red|ring)?|delegat(?:e|es|ed|ing))\b",
                       re.IGNORECASE)
_PARTY = re.compile(r"\b(?:agent|assistant|supervisor|specialist)s?\b", re.IGNORECASE)
_TYPE_NAME = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*\Z")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*[A-Za-z0-9_]")
MAX_TYPE_NAMED = 2     # more type-named tools than this: a naming style, not output schemas
MAX_PROMPT_NAMED = 3   # a system prompt naming more tools than this is a listing, not a steer


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
    """``names`` if no two are equal; one pass (a quadratic search for the duplicate once cost a
    60,000-tool request a minute of CPU, issue 19)."""
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise RequestError(f"two tools are named {n!r}; tool names must be unique in a request")
        seen.add(n)
    return names


def check_tool_count(n: int, limit: int) -> None:
    """A RequestError when a request brings more tools than the proxy accepts."""
    if n > limit:
        raise RequestError(f"the request brings {n:,} tools; at most {limit:,} are accepted per request")


def rankable_messages(messages: list[dict]) -> None:
    """A RequestError (400) unless the conversation can be ranked on: known roles, contents that
    are text or content parts, and some user text (an image-only conversation has nothing to
    match tool descriptions with). Only asked when a request brings more tools than k."""
    from router.errors import RouterError
    from router.ranking.query import build_query

    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content")
        if role not in ROLES:
            raise RequestError(f"messages[{i}]: unknown role {role!r} (expected one of {', '.join(sorted(ROLES))})")
        if content is None and role not in ("assistant", "function"):
            raise RequestError(f"messages[{i}]: a {role} message needs 'content' (a string or a list of parts)")
        if content is not None and not isinstance(content, (str, list)):
            raise RequestError(f"messages[{i}].content must be a string or a list of parts, "
                               f"got {type(content).__name__}")
    try:
        build_query(messages)
    except RouterError as exc:
        raise RequestError(f"cannot choose tools for this request: {exc} (an image-only conversation has no "
                           "words to match tools with; send at most k tools, or pin the ones needed)") from None


def loop_tools(names: Sequence[str], describe: Callable[[int], str]) -> set[str]:
    """The hand-off and structured-output tools among ``names`` (``describe(i)``: the i-th
    tool's description), by their structure alone (see `_HANDOVER`, `_TYPE_NAME`)."""
    out: set[str] = set()
    typed = [n for n in names if _TYPE_NAME.match(n)]
    if typed and len(typed) <= MAX_TYPE_NAMED and 2 * len(typed) < len(names):
        out.update(typed)
    for i, name in enumerate(names):
        text = f"{name.replace('_', ' ')} {describe(i)}"
        if _HANDOVER.search(text) and _PARTY.search(text):
            out.add(name)
    return out


def prompt_named(messages: Any, names: Sequence[str]) -> set[str]:
    """Tools the system / developer prompt names (as whole words), when it names only a few."""
    text = []
    for m in messages if isinstance(messages, list) else []:
        if isinstance(m, dict) and m.get("role") in ("system", "developer"):
            c = m.get("content")
            text.append(c if isinstance(c, str) else " ".join(
                p.get("text", "") for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
                if isinstance(c, list) else "")
    if not text:
        return set()
    hit = set(_WORD.findall(" ".join(text))).intersection(names)
    return hit if len(hit) <= MAX_PROMPT_NAMED else set()


# The same refusal in the words of the other APIs (issue 37, item 5): what routing found missing,
# named after each API's own fields.
NO_TEXT = {
    "responses": "cannot choose tools for this request: 'input' holds no user message with text to route on "
                 "(send at most k function tools, or pin the ones needed)",
    "messages": "cannot choose tools for this request: 'messages' hold no user text block to route on "
                "(send at most k tools, or pin the ones needed)",
}


def in_api_words(api: str, message: str) -> str:
    """A routing refusal (`rankable_messages`) as ``api``'s client should read it."""
    if "no user turn with text to route on" in message and api in NO_TEXT:
        return NO_TEXT[api]
    return message


def forced_names(body: dict, pinned: Iterable[str], names: Sequence[str] = (),
                 control: Sequence[str] = CONTROL_TOOLS, keep: Iterable[str] = (),
                 loop: Iterable[str] = ()) -> dict[str, str]:
    """Tool names that must be offered, with why: tool_choice, pinned, request (marked by the
    request itself), control (a framework's loop tool among ``names``: by name pattern, ``loop``
    from `loop_tools`, or named by the system prompt), history (already called)."""
    out: dict[str, str] = {}
    for m in body.get("messages", []):
        calls = m.get("tool_calls") if isinstance(m, dict) and m.get("role") == "assistant" else None
        for call in calls if isinstance(calls, list) else []:
            name = tool_name(call) if isinstance(call, dict) else None
            if name:
                out.setdefault(name, "history")
    if control:
        match = control_matcher(tuple(control))
        for name in names:
            if match(name):
                out[name] = "control"
    for name in (*loop, *prompt_named(body.get("messages"), names)):
        out[name] = "control"
    for name in keep:
        out[name] = "request"
    for name in pinned:
        out[name] = "pinned"
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        named = [choice] if tool_name(choice) else (choice.get("allowed_tools") or {}).get("tools") or []
        for t in named:
            if tool_name(t):
                out[tool_name(t)] = "tool_choice"
    return out


