"""The optional framework packages: imported only by the adapter that needs them, never by the core.

A missing one is a one-line `MissingExtraError` naming the extra that installs it, not a traceback
from deep inside an adapter.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingExtraError

# module -> (the pip package that provides it, the toolsift extra that pins it)
PROVIDERS: dict[str, tuple[str, str]] = {
    "langchain_core": ("langchain-core", "langgraph"),
    "langgraph": ("langgraph", "langgraph"),
    "langgraph_bigtool": ("langgraph-bigtool", "langgraph"),
    "llama_index.core": ("llama-index-core", "llamaindex"),
}


def require(module: str) -> ModuleType:
    """``import module``, or a MissingExtraError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package, extra = PROVIDERS.get(module.split(".")[0] if module not in PROVIDERS else module,
                                       (module, "frameworks"))
        raise MissingExtraError(f"{module} is not installed ({exc.msg}): pip install 'toolsift[{extra}]' "
                                f"(brings {package})") from None
