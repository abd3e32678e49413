"""Tools a request keeps whatever the ranking says: the agent frameworks' control tools.

Every way in that binds tools for a framework's loop (the proxy, the in-process framework
adapters) keeps these, so that routing never leaves an agent unable to finish or hand off.
"""
from __future__ import annotations

import fnmatch
import functools
import re
from typing import Callable

# Tools that end or steer a framework's own loop: routing one out means the agent never finishes
# (issue 13). Shell-style patterns, matched against tool names; documented in docs/middleware.md.
CONTROL_TOOLS: tuple[str, ...] = (
    "final_answer",      # smolagents: ToolCallingAgent ends its run by calling it
    "final_result",      # pydantic-ai: structured output arrives as a call to this tool ...
    "final_result_*",    # ... or to final_result_<Type> when the output is a union
    "transfer_to_*",     # OpenAI Agents SDK / Swarm / LangGraph supervisor and swarm: handoffs are tools
)


@functools.lru_cache(maxsize=32)
def control_matcher(control: tuple[str, ...]) -> Callable[[str], object]:
    """One compiled regex for all of ``control``'s shell patterns (case-sensitive, as
    fnmatchcase): a 2k-tool request was matched pattern by pattern, ~3 ms of each request."""
    if not control:
        return lambda name: None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in control)).match
