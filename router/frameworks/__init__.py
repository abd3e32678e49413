"""router.frameworks: toolsift inside the agent frameworks, in-process, with no server.

Python functions and the frameworks' tool objects become catalog records (`tool_record`) and one
in-memory `Router` ranks them (`ToolRegistry`); one module per framework plugs that registry into
the framework's own extension point:

- `router.frameworks.langgraph`: a ``retrieve_tools`` function for langgraph-bigtool's
  ``create_agent``, and a routed model for LangGraph's prebuilt ``create_react_agent``;
- `router.frameworks.llamaindex`: an object retriever for ``FunctionAgent(tool_retriever=...)``.

The ranking is the proxy's own `Router.select`; the frameworks are optional extras
(``pip install 'toolsift[langgraph]'``, ``'toolsift[llamaindex]'``) imported only by their module.
"""
from .errors import FrameworkError, MissingExtraError
from .registry import ToolRegistry, load_registry
from .tools import tool_record

__all__ = ["FrameworkError", "MissingExtraError", "ToolRegistry", "load_registry", "tool_record"]
