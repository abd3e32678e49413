"""One request's exchange with the model: check the answer's tool calls against the tools
that were offered, build a repair turn, and put streamed answers back together to check them.
No I/O happens here: `Exchange` is a small state machine that the sync wrapper, the async
wrapper and the proxy each drive with their own transport.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.calls import check_calls
from checker.messages import call_defects, defect_text, nearest_text

from .errors import RequestError
from .request import MAX_TOOLS, RequestRouter, RoutedRequest, as_dict, capped_json, tool_name
from .request_body import ToolList


# ------------------------------------------------------------------ checking and repair

# What to do with an answer whose tool calls fail the checker. "raise" exists only in the client
# wrapper (the exception reaches the caller); "reject" only in the proxy (the client gets a 422).
MODES = ("annotate", "repair", "raise", "reject")
CLIENT_MODES = ("annotate", "repair", "raise")
PROXY_MODES = ("annotate", "repair", "reject")


def check_mode(mode: str, allowed: tuple[str, ...], option: str = "on_hallucination") -> str:
    """``mode`` if it is one of ``allowed``, else a RequestError naming the option and the choices."""
    if mode not in allowed:
        raise RequestError(f"{option} must be one of {', '.join(allowed)}, got {mode!r}")
    return mode


@dataclass
class CallCheck:
    choice: int
    verdict: Any  # checker.Verdict

    def to_dict(self) -> dict:
        v = self.verdict
        return {"choice": self.choice, "verdict": v.verdict, "ok": v.ok,
                "defects": [d.message for d in v.defects], "suggestions": list(v.suggestions)}


def check_answer(response: Any, routed: RoutedRequest) -> list[CallCheck]:
    """A verdict for every choice whose message carries tool calls, against the tools offered."""
    out = []
    for choice in (as_dict(response) or {}).get("choices") or []:
        calls = (choice.get("message") or {}).get("tool_calls")
        if calls:
            out.append(CallCheck(choice.get("index", 0), check_calls(calls, functions=routed.offered)))
    return out


def verdicts_header(checks: list[CallCheck]) -> str:
    return capped_json([c.to_dict() for c in checks], lambda d: {"choice": d["choice"], "verdict": d["verdict"]})


def repair_turn(message: dict, verdict: Any) -> list[dict]:
    """The assistant message as sent, then one tool message per call saying why it was not run."""
    calls = message.get("tool_calls") or []
    out: list[dict] = [{"role": "assistant", "content": message.get("content"), "tool_calls": calls}]
    for i, call in enumerate(calls):
        defects = call_defects(verdict, i)
        if defects:
            near = sorted({s for d in defects for s in d.suggestions} or set(verdict.suggestions))
            text = " ".join(p for p in ("Error: this tool call was rejected before execution: "
                                        + defect_text(defects, kinds=False) + ".", nearest_text(near),
                                        "Call one of the tools you were given, with arguments that match its schema.")
                            if p)
        else:
            text = "Not executed: another call in the same reply was invalid. Send all the calls again."
        out.append({"role": "tool", "tool_call_id": call.get("id") or f"call_{i}", "content": text})
    return out


@dataclass
class Exchange:
    """Drives route → send → check → (repair → send)* for one request; no I/O of its own.

    ``body = ex.start(); while body is not None: body = ex.feed(send(body))``; then read
    ``ex.response`` (last answer), ``ex.checks``, ``ex.repairs``, ``ex.failed``.
    """

    rr: RequestRouter
    request: dict
    mode: str = "annotate"
    max_repairs: int = 2
    routed: RoutedRequest | None = None
    response: Any = None
    checks: list[CallCheck] = field(default_factory=list)
    repairs: int = 0
    upstream_ms: float = 0.0  # time spent waiting for the model (the transport adds it up)
    _body: dict | None = None

    def start(self) -> dict:
        check_mode(self.mode, MODES)
        self.routed = self.rr.route(self.request)
        self._body = self.routed.body
        return self._body

    @property
    def failed(self) -> bool:
        return any(not c.verdict.ok for c in self.checks)

    def feed(self, response: Any) -> dict | None:
        """Take an answer; return the next body to send, or None when done."""
        self.response = response
        self.checks = check_answer(response, self.routed)
        if not self.failed or self.mode != "repair" or self.repairs >= self.max_repairs:
            return None
        self.repairs += 1
        bad = next(c for c in self.checks if not c.verdict.ok)
        choice = next(ch for ch in as_dict(response)["choices"] if ch.get("index", 0) == bad.choice)
        self._restore_dropped(choice["message"])
        self._body = dict(self._body, messages=[*self._body["messages"], *repair_turn(choice["message"], bad.verdict)],
                          tools=self.routed.offered or self._body.get("tools"))
        self._body.pop("n", None)  # one repaired answer is enough
        return self._body

    def _restore_dropped(self, message: dict) -> None:
        """A call to a tool the caller sent but routing left out: offer it on the repair turn."""
        offered = {tool_name(t) for t in self.routed.offered}
        original = self.routed.original
        # by name first: decoding a 2k-tool list from the wire just to compare names is wasted work
        names = original.names if isinstance(original, ToolList) else [tool_name(t) for t in original]
        for call in message.get("tool_calls") or []:
            name = tool_name(call)
            if not name or name in offered or name not in names or len(self.routed.offered) >= MAX_TOOLS:
                continue
            self.routed.offered.append(original[names.index(name)])
            self.routed.selected.append({"name": name, "reason": "restored"})
            offered.add(name)


# ------------------------------------------------------------------ streaming

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

    def response(self) -> dict:
        choices = []
        for i, msg in sorted(self.choices.items()):
            m = {"role": "assistant", "content": msg["content"]}
            if msg["calls"]:
                m["tool_calls"] = [msg["calls"][j] for j in sorted(msg["calls"])]
            choices.append({"index": i, "message": m})
        return {"choices": choices}
