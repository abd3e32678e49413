"""What the loop offers the model each round, and how a call is checked and executed.

Split from `router.loop` so the loop itself reads as the control flow only. Tool names
are fixed for a whole run (a record keeps the name it was first shown under), and in
search mode the set only grows, so the request prefix stays stable for prompt caches.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from apidb.names import ToolNamer
from apidb.record import EMPTY_SCHEMA, ApiRecord
from checker.calls import check_calls
from checker.messages import refusal, verdict_text

from .trace import CallTrace

SEARCH_TOOL = "search_tools"
SEARCH_RECORD = ApiRecord(
    id="toolsift/search_tools", namespace="toolsift", name=SEARCH_TOOL,
    description=("Search the tool catalog for tools that can do a task. Returns tool names, descriptions and "
                 "parameters; the tools found become callable in your next turn."),
    parameters={"type": "object", "properties": {
        "query": {"type": "string", "description": "The task, in words."},
        "k": {"type": "integer", "description": "How many tools to return (default 5)."}},
        "required": ["query"]},
    source_format="toolsift")


class Toolbox:
    def __init__(self, router: Any, *, mode: str, k: int, pinned: Sequence[str], method: str | None,
                 search_k: int) -> None:
        self.router, self.mode, self.k, self.pinned = router, mode, k, list(pinned)
        self.method, self.search_k = method, search_k
        self._namer = ToolNamer()
        self.by_name: dict[str, ApiRecord] = self._namer.by_name  # type: ignore[assignment]
        self.found: list[ApiRecord] = []
        self._pinned_records: list[ApiRecord] | None = None
        self._offered: list[ApiRecord] = []
        if mode == "search":
            self.name(SEARCH_RECORD)

    # -- naming ----------------------------------------------------------------------
    def name(self, rec: ApiRecord) -> str:
        """The name the model sees for ``rec``: stable for the run, unique, OpenAI-valid."""
        return self._namer.name(rec)

    def function(self, rec: ApiRecord) -> dict[str, Any]:
        return {"name": self.name(rec), "description": rec.description,
                "parameters": rec.parameters or dict(EMPTY_SCHEMA)}

    def offered_functions(self) -> list[dict[str, Any]]:
        return [self.function(r) for r in self._offered]

    def found_names(self) -> list[str]:
        return [self.name(r) for r in self.found]

    # -- offering --------------------------------------------------------------------
    def _select(self, query: Any, k: int, **extra: Any) -> list[Any]:
        kwargs: dict[str, Any] = dict(extra)
        if self.method:
            kwargs["method"] = self.method
        return self.router.select(query, k=k, **kwargs)

    def offer(self, messages: list[dict[str, Any]]) -> list[ApiRecord]:
        if self.mode == "routed":
            recs = [s.record for s in self._select(messages, self.k, pinned=self.pinned)]
        else:
            recs = [SEARCH_RECORD, *self.pinned_records(messages), *self.found]
        for rec in recs:
            self.name(rec)
        self._offered = recs
        return recs

    def pinned_records(self, messages: list[dict[str, Any]]) -> list[ApiRecord]:
        if self._pinned_records is None:
            self._pinned_records = ([s.record for s in self._select(messages, 1, pinned=self.pinned)
                                     if s.reason == "pinned"] if self.pinned else [])
        return self._pinned_records

    # -- checking and executing --------------------------------------------------------
    def check(self, rnd: int, call: dict[str, Any], offered: list[dict[str, Any]]) -> CallTrace:
        """Check one call against the tools offered this round; a bad call gets its error now."""

        verdict = check_calls([{"name": call["name"], "arguments": call["arguments"]}], functions=offered)
        trace = CallTrace(round=rnd, id=call["id"], name=call["name"], arguments=_parsed(call["arguments"]),
                          verdict=verdict.verdict)
        if not verdict.ok:
            trace.error = verdict_text(verdict)
            trace.result = "error: " + refusal("call not executed", verdict, verdict.suggestions,
                                               f"Call {SEARCH_TOOL} to find other tools." if self.mode == "search" else "")
        return trace

    def execute(self, name: str, arguments: Any, executor: Any) -> Any:
        args = arguments if isinstance(arguments, dict) else {}
        if name == SEARCH_TOOL and self.mode == "search":
            return self.search(args)
        rec = self.by_name[name]
        fn = _executor_for(executor, rec, name)
        if fn is None:
            raise LookupError(f"no executor for tool {name!r}")
        return fn(args)

    def search(self, args: dict[str, Any]) -> dict[str, Any]:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("search_tools needs a non-empty 'query'")
        k = args.get("k") if isinstance(args.get("k"), int) and args["k"] > 0 else self.search_k
        out = []
        for sel in self._select(query, min(int(k), 20)):
            rec = sel.record
            if rec not in self.found and rec not in (self._pinned_records or []):
                self.found.append(rec)  # append-only: later rounds offer it too
            out.append({"name": self.name(rec), "description": rec.description,
                        "parameters": rec.parameters, "score": round(float(sel.score), 4)})
        return {"query": query, "tools": out, "note": "these tools can be called from your next turn"}


def _executor_for(executor: Any, rec: ApiRecord, name: str) -> Callable[[dict[str, Any]], Any] | None:
    if executor is None:
        return None
    if isinstance(executor, Mapping):
        for key in (name, rec.name, rec.id, f"{rec.namespace}__{rec.name}"):
            if key in executor:
                fn = executor[key]
                return lambda args: fn(**args)
        return None
    return lambda args: executor(rec.name, args)


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return arguments
    return arguments
