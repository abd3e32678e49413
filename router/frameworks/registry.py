"""`ToolRegistry`: a framework's tools as catalog records, an in-memory `Router` over them, and the
way back from a record the router picked to the object the framework runs.

    registry = ToolRegistry([get_weather, convert_currency, ...])      # or framework tool objects
    registry.select("weather in Paris?", k=3)   # [get_weather, ...]: the tools themselves
    registry.router                              # the same Router the proxy and `toolsift route` use

The ranking is `Router.select`'s, untouched: no second ranking path. Records can be written to a
catalog (`save`) for `toolsift route` or `toolsift bench retrieval`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Collection, Iterable, Mapping

from apidb.record import ApiRecord

from .errors import FrameworkError
from .tools import tool_record
from ..ranking import Router, RouterConfig, Selection

__all__ = ["ToolRegistry", "load_registry"]


class ToolRegistry:
    """Tools (a list, or a mapping of name -> tool) as records, ranked by one in-memory Router.

    ``namespace`` prefixes the record ids (``python/get_weather``); ``dense=False`` ranks with BM25
    only and never loads the embedding model; ``model``, ``config`` and ``cache_dir`` are
    `Router.from_records`'s.
    """

    def __init__(self, tools: Iterable[Any] | Mapping[str, Any], *, namespace: str = "python",
                 model: str | None = None, config: RouterConfig | None = None, dense: bool = True,
                 cache_dir: str | os.PathLike[str] | None = None) -> None:
        items = list(tools.items()) if isinstance(tools, Mapping) else [(None, t) for t in tools]
        if not items:
            raise FrameworkError("no tools to route over: give at least one function or tool object")
        self.records: list[ApiRecord] = []
        self._objects: dict[str, Any] = {}
        self._keys: dict[str, str] = {}  # record id -> the mapping's key (bigtool's tool ids), else the name
        for key, tool in items:
            # the id is the tool's name, never the mapping's key: a key (bigtool uses uuids) is not
            # a word of the tool, and two tools of one name cannot be offered to one model anyway
            rec = tool_record(tool, namespace)
            if rec.id in self._objects:
                raise FrameworkError(f"two tools are named {rec.name!r}; tool names must be unique")
            self.records.append(rec)
            self._objects[rec.id] = tool
            self._keys[rec.id] = rec.name if key is None else key
        self._router_args = {"model": model, "config": config, "dense": dense, "cache_dir": cache_dir}
        self._router: Router | None = None

    @property
    def router(self) -> Router:
        """The in-memory Router over the records (built on first use)."""
        if self._router is None:
            self._router = Router.from_records(self.records, **self._router_args)
        return self._router

    def __len__(self) -> int:
        return len(self.records)

    def tool(self, record_id: str) -> Any:
        """The object a record was made from."""
        return self._objects[record_id]

    def key(self, record_id: str) -> str:
        """The registry key of a record (the function name, or the mapping's key)."""
        return self._keys[record_id]

    def by_key(self, key: str) -> Any:
        """The tool registered under ``key`` (a function name or the mapping's key), else KeyError."""
        for rid, k in self._keys.items():
            if k == key:
                return self._objects[rid]
        raise KeyError(key)

    def selections(self, query_or_messages: Any, k: int | None = None, **options: Any) -> list[Selection]:
        """`Router.select` itself (same arguments): the ranked selections with scores and reasons."""
        return list(self.router.select(query_or_messages, k, **options))

    def select(self, query_or_messages: Any, k: int | None = None, *, pinned: Collection[str] = (),
               **options: Any) -> list[Any]:
        """The tools themselves, best first: what the framework binds or runs."""
        return [self._objects[s.record.id] for s in self.selections(query_or_messages, k, pinned=pinned, **options)]

    def select_keys(self, query_or_messages: Any, k: int | None = None, **options: Any) -> list[str]:
        """The registry keys of the selected tools, best first."""
        return [self._keys[s.record.id] for s in self.selections(query_or_messages, k, **options)]

    def save(self, db_path: str | os.PathLike[str]) -> Path:
        """Write the records into a catalog file (created if new; this namespace replaced)."""
        from apidb.catalog import Catalog

        with Catalog(db_path) as cat:
            cat.sync(self.records, {r.namespace for r in self.records})
        return Path(db_path)


def load_registry(spec: str, *, namespace: str = "python", **router_args: Any) -> ToolRegistry:
    """The tools named by ``"package.module:attribute"`` (a list or mapping of tools, or a ToolRegistry)
    as a ToolRegistry; the current directory is importable, as for uvicorn's ``module:app``."""
    import importlib
    import sys

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise FrameworkError(f"{spec!r}: give the tools as MODULE:ATTRIBUTE (e.g. my_agent.tools:TOOLS)")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise FrameworkError(f"{spec!r}: cannot import {module_name!r} ({exc})") from None
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise FrameworkError(f"{spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    if isinstance(value, ToolRegistry):
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, Mapping)):
        raise FrameworkError(f"{spec!r}: expected a list or mapping of tools, or a ToolRegistry; got "
                             f"{type(value).__name__}")
    return ToolRegistry(value, namespace=namespace, **router_args)
