"""LangGraph: toolsift as langgraph-bigtool's tool retriever, and as the tool binder of the prebuilt agent.

    from langgraph_bigtool import create_agent
    from router.frameworks import ToolRegistry
    from router.frameworks.langgraph import bigtool_retriever, routed_model

    registry = ToolRegistry(tool_registry)             # bigtool's own {tool id: tool} mapping
    retrieve, aretrieve = bigtool_retriever(registry, k=3)
    agent = create_agent(llm, tool_registry, retrieve_tools_function=retrieve,
                         retrieve_tools_coroutine=aretrieve).compile()

    from langgraph.prebuilt import create_react_agent
    agent = create_react_agent(routed_model(llm, tools, k=5), tools)

`bigtool_retriever` ranks the query the model writes; `routed_model` ranks the conversation itself
on every model call (the last user turn first, then earlier turns, tools already called, short tool
results: `Router.select` on the messages, as the proxy does) and binds only the top ``k``, plus the
tools the proxy always keeps: pinned ones, the one ``tool_choice`` names, tools the conversation
already called, and the frameworks' control tools (``transfer_to_*`` handoffs ...). Both need the
``langgraph`` extra (``pip install 'toolsift[langgraph]'``).
"""
from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence

from .errors import FrameworkError
from .extras import require
from .registry import ToolRegistry
from ..errors import RouterError
from ..ranking.kept import CONTROL_TOOLS, control_matcher

__all__ = ["Binding", "RoutedModel", "bigtool_retriever", "routed_model"]

# tool_choice values that name no tool
_CHOICE_MODES = frozenset({"auto", "any", "required", "none"})


def _registry(tools: ToolRegistry | Iterable[Any] | Mapping[str, Any], **router_args: Any) -> ToolRegistry:
    return tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools, **router_args)


def bigtool_retriever(tools: ToolRegistry | Iterable[Any] | Mapping[str, Any], k: int = 5,
                      **select_options: Any) -> tuple[Callable[[str], list[str]], Callable[..., Any]]:
    """``(retrieve_tools, aretrieve_tools)`` for langgraph-bigtool's ``create_agent(...,
    retrieve_tools_function=, retrieve_tools_coroutine=)``: each returns the registry keys (bigtool's
    tool ids) of the top ``k`` tools for the query the model wrote. ``select_options`` go to
    `Router.select` (``method``, ``min_score``, ``token_budget`` ...)."""
    require("langgraph_bigtool")
    _bridge_bigtool()
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise FrameworkError(f"k must be a positive integer, got {k!r}")
    registry = _registry(tools)

    def retrieve_tools(query: str) -> list[str]:
        """Find the tools for a task. Describe in plain words what you need to do next (one task per
        call); the tools that fit become available to call."""
        return registry.select_keys(query, k, **select_options)

    async def aretrieve_tools(query: str) -> list[str]:
        """Find the tools for a task. Describe in plain words what you need to do next (one task per
        call); the tools that fit become available to call."""
        # ranking is CPU work (and the first call loads the embedding model): off the event loop
        return await asyncio.to_thread(retrieve_tools, query)

    aretrieve_tools.__name__ = "retrieve_tools"  # one tool name for both (bigtool builds one StructuredTool)
    return retrieve_tools, aretrieve_tools


def _bridge_bigtool() -> None:
    """langgraph-bigtool 0.0.3 (its latest release) sends each tool call through
    ``ToolNode.inject_tool_args(call, state, store)``, a step langgraph-prebuilt 1.0 made private:
    since 1.0 the ToolNode injects state, store and runtime itself when it runs the call, so the old
    step passes the call through. Without the name, a bigtool agent on langgraph 1.x fails at its
    first tool call; this restores the name bigtool calls and nothing else."""
    from langgraph.prebuilt import ToolNode

    if not hasattr(ToolNode, "inject_tool_args"):
        ToolNode.inject_tool_args = lambda self, tool_call, state=None, store=None: tool_call


@dataclass(frozen=True)
class Binding:
    """What one model call was offered: tool names in order, each with why (a `Selection` reason:
    "ranked", "named", "pinned" ..., or "history", "control", "tool_choice")."""

    tools: tuple[str, ...]
    reasons: Mapping[str, str]
    query_tools: int  # how many tools the registry holds


class RoutedModel:
    """A LangGraph dynamic model: ``(state, runtime) -> llm.bind_tools(routed tools)``. See the module doc.

    ``bindings`` keeps what the last 100 calls were offered (newest last)."""

    def __init__(self, llm: Any, registry: ToolRegistry, k: int, *, pinned: Collection[str] = (),
                 control: Sequence[str] = CONTROL_TOOLS, tool_choice: Any = None,
                 select_options: Mapping[str, Any] | None = None, **bind_kwargs: Any) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
            raise FrameworkError(f"k must be a positive integer, got {k!r}")
        self.llm, self.registry, self.k = llm, registry, k
        self.pinned = [pinned] if isinstance(pinned, str) else list(pinned)
        self.tool_choice = tool_choice
        self.bind_kwargs = bind_kwargs
        self.select_options = dict(select_options or {})
        self._by_name = {r.name: r.id for r in registry.records}
        match = control_matcher(tuple(control))
        self._control = [r.name for r in registry.records if match(r.name)]
        self.bindings: collections.deque[Binding] = collections.deque(maxlen=100)

    def _chosen_name(self) -> str | None:
        choice = self.tool_choice
        if isinstance(choice, str) and choice not in _CHOICE_MODES:
            return choice
        if isinstance(choice, dict):
            fn = choice.get("function") if isinstance(choice.get("function"), dict) else choice
            return fn.get("name") if isinstance(fn.get("name"), str) else None
        return None

    def route(self, messages: Sequence[Any]) -> Binding:
        """The tools one model call gets for this conversation (LangChain messages or OpenAI dicts)."""
        convert = require("langchain_core.messages").convert_to_openai_messages
        convo = [m if isinstance(m, dict) else convert(m) for m in messages]
        reasons: dict[str, str] = {}
        try:
            for s in self.registry.selections(convo, self.k, pinned=self.pinned, **self.select_options):
                reasons[s.record.name] = s.reason
        except RouterError as exc:
            raise FrameworkError(f"cannot choose tools for this conversation: {exc} (pin the tools it needs)") from None
        for m in convo:
            for call in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
                name = (call.get("function") or {}).get("name") if isinstance(call, dict) else None
                if name in self._by_name:
                    reasons.setdefault(name, "history")
        for name in self._control:
            reasons.setdefault(name, "control")
        chosen = self._chosen_name()
        if chosen is not None:
            if chosen not in self._by_name:
                raise FrameworkError(f"tool_choice names {chosen!r}, which is not one of the registry's tools")
            reasons.setdefault(chosen, "tool_choice")
        return Binding(tuple(reasons), reasons, len(self.registry))

    def __call__(self, state: Any, runtime: Any = None) -> Any:
        messages = state.get("messages") if isinstance(state, Mapping) else getattr(state, "messages", None)
        binding = self.route(list(messages or []))
        self.bindings.append(binding)
        tools = [self.registry.tool(self._by_name[name]) for name in binding.tools]
        extra = {"tool_choice": self.tool_choice} if self.tool_choice is not None else {}
        return self.llm.bind_tools(tools, **extra, **self.bind_kwargs)


def routed_model(llm: Any, tools: ToolRegistry | Iterable[Any] | Mapping[str, Any], k: int = 5, *,
                 pinned: Collection[str] = (), control: Sequence[str] = CONTROL_TOOLS, tool_choice: Any = None,
                 select_options: Mapping[str, Any] | None = None, asynchronous: bool = False,
                 **bind_kwargs: Any) -> Any:
    """The model argument of LangGraph's ``create_react_agent(model, tools)``: on each call, ``llm``
    (a LangChain chat model) with only the routed tools bound. Pass the agent all of ``tools`` as
    usual, so that its ToolNode can run whichever the model calls.

    ``asynchronous=True`` gives a coroutine function instead (for an agent run only with ``ainvoke`` /
    ``astream``): the ranking then runs in a worker thread, off the event loop. Its ``.routed`` is the
    `RoutedModel` (``.routed.bindings``)."""
    require("langchain_core")
    routed = RoutedModel(llm, _registry(tools), k, pinned=pinned, control=control, tool_choice=tool_choice,
                         select_options=select_options, **bind_kwargs)
    if not asynchronous:
        return routed

    async def arouted_model(state: Any, runtime: Any = None) -> Any:
        return await asyncio.to_thread(routed, state, runtime)

    arouted_model.routed = routed  # type: ignore[attr-defined]
    return arouted_model
