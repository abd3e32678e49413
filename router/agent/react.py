"""ReAct text mode: Thought / Action / Action Input / Observation ... Final Answer.

For models without native function calling. The model writes one step; the host cuts
the reply before any ``Observation:`` the model invented, runs the action, and sends
the real observation back. A reply with neither an action nor ``Final Answer:`` is
taken as the answer, so a model that forgets the keyword still ends the loop.
"""
from __future__ import annotations

import re
from typing import Any

from .prompt_json import Parsed, extract_json, tool_lines

_OBSERVATION = re.compile(r"^\s*Observation\s*:", re.I | re.M)
_FINAL = re.compile(r"^\s*Final\s+Answer\s*:\s*", re.I | re.M)
_ACTION = re.compile(r"^\s*Action\s*:\s*(?P<name>.+?)\s*$", re.I | re.M)
_INPUT = re.compile(r"^\s*Action\s+Input\s*:\s*", re.I | re.M)


def cut_observation(text: str) -> str:
    """The reply up to the first ``Observation:`` (observations come from the host)."""
    match = _OBSERVATION.search(text)
    return text[:match.start()].rstrip() if match else text.rstrip()


def parse_reply(text: str | None) -> Parsed:
    """Read one ReAct step: an action (with its input) or the final answer."""
    text = cut_observation(text or "")
    final, action = _FINAL.search(text), _ACTION.search(text)
    if action and (final is None or action.start() < final.start()):
        name = action.group("name").strip().strip("`'\"")
        rest = text[action.end():]
        if final is not None:
            rest = rest[:max(0, final.start() - action.end())]
        inp = _INPUT.search(rest)
        raw = rest[inp.end():].strip() if inp else ""
        return Parsed("calls", calls=[{"name": name, "arguments": _arguments(raw)}])
    if final is not None:
        return Parsed("answer", answer=text[final.end():].strip())
    return Parsed("answer", answer=text.strip())


def _arguments(raw: str) -> Any:
    """The action input as a dict when it is (tolerantly) JSON; else the raw text.

    Raw text goes to the checker as is and comes back as an ``unparsable`` error the
    model can fix, instead of being guessed into arguments.
    """
    if not raw:
        return {}
    value = extract_json(raw)
    return value if isinstance(value, dict) else raw


def system_prompt(tools: list[dict[str, Any]], *, last_round: bool = False) -> str:
    if last_round or not tools:
        return ("No tools are available any more. Reply with 'Final Answer:' followed by your answer, "
                "using the information you already have.")
    lines = ["Answer the user's question. You can use these tools:", *tool_lines(tools, "Action Input schema")]
    lines += ["", "Use this format, one step per reply:",
              "Thought: what to do next",
              "Action: the tool name",
              "Action Input: the arguments as a JSON object",
              "Then stop; the Observation (the tool's result) will be sent to you.",
              "When you know the answer:",
              "Thought: I know the answer",
              "Final Answer: the answer to the user"]
    return "\n".join(lines)


def observation(result: str) -> str:
    return f"Observation: {result}"
