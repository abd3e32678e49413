"""The providers' tool-search blocks in a streamed answer (issue 37, item 2).

A whole answer to a client of a provider's tool search gets, in front of the model's answer, the
searches toolsift answered (`deferred.Deferral.front`). A streamed answer gets the same, as the
provider streams it: after ``message_start`` (Messages), a ``content_block_start`` /
``input_json_delta`` / ``content_block_stop`` run per ``server_tool_use`` block and a
``content_block_start`` / ``content_block_stop`` pair per ``tool_search_tool_result`` block;
before the first output item (Responses), ``response.output_item.added`` / ``.done`` per
``tool_search_call`` and ``tool_search_output`` item. The model's own blocks and items move up by
as many places (``index``, ``output_index``), the Responses ``sequence_number``s by as many events,
and the final ``response`` object lists the search items first, so that the SDKs' stream helpers
put together the answer a non-streamed request gets.

The stream is rewritten one SSE event (the lines up to a blank line) at a time; only a stream
whose request used a provider's hosted tool search and whose model searched is rewritten.
"""
from __future__ import annotations

import json
from typing import Any

__all__ = ["ClientCalls", "SearchEvents", "search_events"]

_TERMINAL = ("response.completed", "response.failed", "response.incomplete")


def search_events(ex: Any) -> "_Rewriter | None":
    """The rewriter for ``ex``'s stream, or None when it has nothing to change."""
    deferral = ex.deferral
    if deferral is None:
        return None
    if deferral.client:
        return ClientCalls() if deferral.api == "responses" else None
    return SearchEvents(deferral.front(ex.search_log), deferral.api == "responses") if ex.search_log else None


def _event(kind: str, data: dict) -> list[str]:
    return [f"event: {kind}", f"data: {json.dumps(data, ensure_ascii=False)}", ""]


class _Rewriter:
    """Feed it the upstream's SSE lines; it returns the lines the client gets, one event at a time."""

    def __init__(self) -> None:
        self._pending: list[str] = []

    def feed(self, line: str) -> list[str]:
        self._pending.append(line)
        if line.strip():
            return []
        event, self._pending = self._pending, []
        return self._split(event)

    def flush(self) -> list[str]:
        """Whatever the upstream sent after its last blank line."""
        event, self._pending = self._pending, []
        return self._split(event) if event else []

    def _split(self, lines: list[str]) -> list[str]:
        at = next((i for i, line in enumerate(lines) if line.startswith("data:")), None)
        try:
            data = json.loads(lines[at][5:]) if at is not None else None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return lines
        return self._rewrite(lines, at, data)

    def _rewrite(self, lines: list[str], at: int, data: dict) -> list[str]:
        raise NotImplementedError


def _with(lines: list[str], at: int, data: dict) -> list[str]:
    out = list(lines)
    out[at] = "data: " + json.dumps(data, ensure_ascii=False)
    return out


class SearchEvents(_Rewriter):
    """The searches toolsift answered for a provider's hosted tool search, streamed in front."""

    def __init__(self, front: list[dict], responses: bool) -> None:
        super().__init__()
        self.front, self.responses = front, responses
        self.shift = len(front)  # places the model's own blocks / items move up
        self.added = 0           # events inserted (the Responses sequence numbers move up by as many)
        self.done = False

    def _rewrite(self, lines: list[str], at: int, data: dict) -> list[str]:
        kind = str(data.get("type") or "")
        before: list[str] = []
        if not self.done and self._goes_before(kind):
            self.done = True
            before = self._inserted(data)
        if self.responses:
            self._move_responses(kind, data)
        elif kind.startswith("content_block_") and isinstance(data.get("index"), int):
            data["index"] += self.shift
        return before + _with(lines, at, data)

    def _goes_before(self, kind: str) -> bool:
        if self.responses:
            return kind.startswith("response.output_item") or kind in _TERMINAL
        return kind.startswith("content_block_") or kind in ("message_delta", "message_stop")

    def _inserted(self, data: dict) -> list[str]:
        out: list[str] = []
        if self.responses:
            seq = data.get("sequence_number") if isinstance(data.get("sequence_number"), int) else 0
            for i, item in enumerate(self.front):
                for kind in ("response.output_item.added", "response.output_item.done"):
                    out += _event(kind, {"type": kind, "sequence_number": seq + self.added, "output_index": i,
                                         "item": item})
                    self.added += 1
            return out
        for i, block in enumerate(self.front):
            if block.get("type") == "server_tool_use":
                out += _event("content_block_start", {"type": "content_block_start", "index": i,
                                                      "content_block": dict(block, input={})})
                out += _event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})}})
            else:
                out += _event("content_block_start", {"type": "content_block_start", "index": i,
                                                      "content_block": block})
            out += _event("content_block_stop", {"type": "content_block_stop", "index": i})
        return out

    def _move_responses(self, kind: str, data: dict) -> None:
        if isinstance(data.get("sequence_number"), int):
            data["sequence_number"] += self.added
        if isinstance(data.get("output_index"), int):
            data["output_index"] += self.shift
        response = data.get("response")
        if kind in _TERMINAL and isinstance(response, dict) and isinstance(response.get("output"), list):
            data["response"] = dict(response, output=[*self.front, *response["output"]])


class ClientCalls(_Rewriter):
    """A client-executed Responses ``tool_search``: the model's calls of the stand-in function
    reach the client as ``tool_search_call`` items (``execution: "client"``), as in a whole answer
    (deferred.py); the stand-in's argument deltas are not sent (the SDKs add them only to a
    ``function_call``), the whole arguments come with the item's ``.done`` event."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: set[int] = set()  # output positions of the stand-in's calls

    def _rewrite(self, lines: list[str], at: int, data: dict) -> list[str]:
        from .deferred import search_call_item
        from .search import SEARCH_NAME

        kind, index, item = str(data.get("type") or ""), data.get("output_index"), data.get("item")
        if kind == "response.output_item.added" and isinstance(item, dict) and item.get("type") == "function_call" \
                and item.get("name") == SEARCH_NAME:
            self.calls.add(index)
            data["item"] = dict(search_call_item(dict(item, arguments="{}")), status="in_progress")
        elif index in self.calls and kind.startswith("response.function_call_arguments"):
            return []
        elif kind == "response.output_item.done" and index in self.calls and isinstance(item, dict):
            data["item"] = search_call_item(item)
        elif kind in _TERMINAL and isinstance(data.get("response"), dict):
            output = data["response"].get("output")
            if isinstance(output, list):
                data["response"] = dict(data["response"], output=[
                    search_call_item(o) if isinstance(o, dict) and o.get("type") == "function_call"
                    and o.get("name") == SEARCH_NAME else o for o in output])
        return _with(lines, at, data)
