"""LlamaIndex: toolsift as the tool retriever of ``FunctionAgent`` / ``AgentWorkflow``.

    from llama_index.core.agent.workflow import FunctionAgent
    from router.frameworks.llamaindex import tool_retriever

    agent = FunctionAgent(tool_retriever=tool_retriever(tools, k=5), llm=llm)

``tools`` are LlamaIndex ``FunctionTool``s (or plain Python functions, wrapped in one on first use),
or a `ToolRegistry` of them; the retriever returns the tools themselves, ranked by the proxy's own
`Router.select`. LlamaIndex asks it twice per step: with the user's message, for the tools the model
is offered, and with the name of the tool the model called, to run it: a query that is exactly a
tool's name returns that tool first. Needs the ``llamaindex`` extra
(``pip install 'toolsift[llamaindex]'``).
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any, Iterable, Mapping

from .errors import FrameworkError
from .extras import require
from .registry import ToolRegistry

__all__ = ["tool_retriever"]


def _query_text(query: Any) -> str:
    """A LlamaIndex query: a string or a ``QueryBundle``."""
    return query if isinstance(query, str) else str(getattr(query, "query_str", "") or "")


@functools.lru_cache(maxsize=1)
def _retriever_class() -> type:
    """`ToolRetriever`, built on first use: its base class comes from the optional llama-index-core."""
    objects = require("llama_index.core.objects")
    tools_mod = require("llama_index.core.tools")

    class ToolRetriever(objects.ObjectRetriever):
        """An ``ObjectRetriever`` over a ToolRegistry (LlamaIndex checks the type)."""

        def __init__(self, registry: ToolRegistry, k: int, select_options: Mapping[str, Any]) -> None:
            # no LlamaIndex retriever or node mapping underneath: the registry's Router is the index
            self.registry, self.k, self.select_options = registry, k, dict(select_options)
            self._names = {r.name: r.id for r in registry.records}
            self._wrapped: dict[str, Any] = {}

        @property
        def retriever(self) -> Any:
            return None

        @property
        def object_node_mapping(self) -> Any:
            return None

        @property
        def node_postprocessors(self) -> list:
            return []

        def _as_tool(self, record_id: str) -> Any:
            tool = self.registry.tool(record_id)
            if isinstance(tool, tools_mod.BaseTool):
                return tool
            if record_id not in self._wrapped:  # a plain function: LlamaIndex runs FunctionTools
                try:
                    self._wrapped[record_id] = tools_mod.FunctionTool.from_defaults(fn=tool)
                except Exception as exc:  # e.g. a parameter name Pydantic refuses (`_class`)
                    raise FrameworkError(f"tool {record_id!r}: LlamaIndex cannot make a FunctionTool of it "
                                         f"({str(exc).splitlines()[0]})") from None
            return self._wrapped[record_id]

        def retrieve(self, str_or_query_bundle: Any) -> list:
            text = _query_text(str_or_query_bundle).strip()
            if not text:
                return []
            # the agent looks the called tool up by its name: that tool first, whatever the ranking
            pinned = [text] if text in self._names else []
            picked = self.registry.selections(text, self.k, pinned=pinned, **self.select_options)
            return [self._as_tool(s.record.id) for s in picked]

        async def aretrieve(self, str_or_query_bundle: Any) -> list:
            # ranking is CPU work (the first call also loads the embedding model): off the event loop
            return await asyncio.to_thread(self.retrieve, str_or_query_bundle)

    return ToolRetriever


def tool_retriever(tools: ToolRegistry | Iterable[Any] | Mapping[str, Any], k: int = 5,
                   **select_options: Any) -> Any:
    """An ``ObjectRetriever`` for ``FunctionAgent(tool_retriever=...)`` that returns the top ``k`` tools.
    ``select_options`` go to `Router.select` (``method``, ``min_score``, ``token_budget`` ...)."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise FrameworkError(f"k must be a positive integer, got {k!r}")
    registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
    return _retriever_class()(registry, k, select_options)
