"""The framework tests' shared parts: 370 real Python functions (BFCL's simple_python docs, see
tests/support/python_tools.py), a task that needs two of them, and a scripted agent model served
over HTTP (tests/support/scripted_upstream.py) that the frameworks reach through their own
OpenAI-compatible chat model.

The scripted model behaves like a careful model with a small context: it refuses a request that
offers more than ``max_offered`` tools, calls a needed tool only when it was offered (all of them
at once when ``parallel`` and all are offered, as models with parallel tool calls do), asks the
retriever (when there is one) for a tool it lacks, gives up when the tool never comes, and answers
``FINISHED`` once both tools returned. So a test finishes only if routing offered the right few tools.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from tests.support.python_tools import bfcl_python_tools
from tests.support.scripted_upstream import completion, offered_names, tool_call

# The two steps of the task: the tool each needs, what a model would ask a retriever for, its arguments.
STEPS = (("calculate_triangle_area", "Find the area of a triangle given its base and height.",
          {"base": 10, "height": 5}),
         ("math_factorial", "Calculate the factorial of a number.", {"number": 5}))
TASK = ("Find the area of a triangle with a base of 10 units and height of 5 units, "
        "then calculate the factorial of 5.")
FINISHED = "FINISHED: both results are in"
TOO_MANY = "REFUSED: too many tools offered"


@pytest.fixture(scope="session")
def bfcl_functions(tmp_path_factory):
    tools = bfcl_python_tools(str(tmp_path_factory.mktemp("bfcl_tools")))
    assert len(tools.functions) >= 200
    return tools.functions


@dataclass
class AgentModel:
    """The scripted model: a callable script for ScriptedUpstream (see the module doc)."""

    max_offered: int
    retriever: str | None = None       # the retrieval tool's name, when the agent has one
    parallel: bool = False             # call every offered needed tool at once (else one step at a time)
    offered: list[list[str]] = field(default_factory=list)  # tool names of each request
    refused: int = 0

    def __call__(self, request: dict, api: str = "chat"):
        assert api == "chat", api
        names = offered_names(request)
        self.offered.append(names)
        if len(names) > self.max_offered:
            self.refused += 1
            return completion(f"{TOO_MANY} ({len(names)} > {self.max_offered})")
        called, done = _history(request["messages"])
        retrievals = called.count(self.retriever) if self.retriever else 0
        todo = [(name, args) for name, _, args in STEPS if name not in done]
        if self.parallel and todo and all(name in names for name, _ in todo):
            return completion(tool_calls=[tool_call(name, args) for name, args in todo])
        for i, (name, need, args) in enumerate(STEPS):
            if name in done:
                continue
            if name in names:
                return completion(tool_calls=[tool_call(name, args)])
            if self.retriever and self.retriever in names and retrievals <= i:
                return completion(tool_calls=[tool_call(self.retriever, {"query": need})])
            return completion(f"GAVE UP: no tool to {need}")
        return completion(FINISHED)


def _history(messages: list[dict]) -> tuple[list[str], set[str]]:
    """(every tool name called, in order; the names whose result came back)."""
    by_id: dict[str, str] = {}
    called: list[str] = []
    done: set[str] = set()
    for m in messages:
        for c in m.get("tool_calls") or []:
            by_id[c["id"]] = c["function"]["name"]
            called.append(c["function"]["name"])
        if m.get("role") == "tool" and m.get("tool_call_id") in by_id:
            done.add(by_id[m["tool_call_id"]])
    return called, done


def executed(messages) -> list[dict]:
    """The results of the Python functions the agent really ran (they return what they were called with)."""
    out = []
    for m in messages:
        if getattr(m, "type", None) == "tool":
            try:
                value = json.loads(m.content) if isinstance(m.content, str) else m.content
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and "tool" in value:
                out.append(value)
    return out
