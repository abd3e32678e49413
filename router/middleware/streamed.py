"""A streamed Chat Completions answer put back together from its chunks, so that its tool calls
can be checked once the stream ends (the chunks themselves reach the client untouched, as they
arrive). Split from checks.py, whose `Api.stream` hands one to every stream it watches; the
Responses and Messages adapters bring their own (responses.py, messages.py).
"""
from __future__ import annotations

import json
from typing import Any

from .routed import as_dict


class StreamAssembler:
    """Rebuilds the messages of a streamed answer from its chunks, to check them at the end."""

    def __init__(self) -> None:
        self.choices: dict[int, dict] = {}

    def feed(self, chunk: Any) -> None:
        for ch in (as_dict(chunk) or {}).get("choices") or []:
            msg = self.choices.setdefault(ch.get("index", 0), {"role": "assistant", "content": None, "calls": {}})
            delta = ch.get("delta") or {}
            if delta.get("content"):
                msg["content"] = (msg["content"] or "") + delta["content"]
            for tc in delta.get("tool_calls") or []:
                slot = msg["calls"].setdefault(tc.get("index", 0), {"id": None, "type": "function",
                                                                    "function": {"name": "", "arguments": ""}})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""

    def feed_line(self, line: str) -> None:
        """One SSE line as relayed by the proxy."""
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            try:
                self.feed(json.loads(line[5:]))
            except ValueError:
                pass  # not ours to judge; the client sees it as sent

    def decision(self, search: str) -> str | None:
        """"search" once the first choice starts with a call to ``search``, "commit" once it starts
        with text or another call, None while nothing tells yet (router/middleware/search.py)."""
        msg = self.choices.get(0)
        if msg is None:
            return None
        if msg["content"]:
            return "commit"
        if msg["calls"]:
            name = msg["calls"][min(msg["calls"])]["function"]["name"]
            return ("search" if name == search else "commit") if name else None
        return None

    def is_end(self, line: str) -> bool:
        """The line before which the verdict comment goes (clients stop reading after it)."""
        return line.startswith("data:") and line[5:].strip() == "[DONE]"

    def response(self) -> dict:
        choices = []
        for i, msg in sorted(self.choices.items()):
            m = {"role": "assistant", "content": msg["content"]}
            if msg["calls"]:
                m["tool_calls"] = [msg["calls"][j] for j in sorted(msg["calls"])]
            choices.append({"index": i, "message": m})
        return {"choices": choices}
