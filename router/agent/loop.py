"""The reference tool-calling loop, with the lessons of ../shared/notes/loop.md built in.

``run(client, messages, router, execute=..., model=...)`` works with any
OpenAI-compatible client (``client.chat.completions.create``):

* **while** the model returns tool calls, every call of the round is checked, executed
  and answered (bound by ``tool_call_id``), then the model is asked again;
* ``max_rounds`` bounds the requests; the last one carries **no tools**, so the model
  must answer with what it has instead of leaving an empty answer;
* the same calls with the same arguments as the previous round end the loop early with
  a forced answer (stop reason ``repeated``);
* calls go through `checker.check_calls` first: a hallucinated tool or bad arguments are
  answered with an error tool message naming the defect and the nearest valid tools,
  never executed;
* ``mode="routed"`` offers the router's top-k for the conversation each round;
  ``mode="search"`` starts with a ``search_tools`` meta-tool plus the pinned tools and
  appends the tools the model finds (append-only: the prompt prefix stays stable);
* ``call_format="native"`` uses function calling; ``"prompt_json"`` and ``"react"``
  describe the tools in the system prompt and parse the reply text.

Every run returns a `LoopResult` whose ``stop_reason`` is converged, repeated,
max_rounds or error, with the rounds, calls and verdicts.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from apidb.record import ApiRecord, canonical_json

from . import prompt_json, react
from .errors import AgentError
from .toolbox import Toolbox
from .trace import CallTrace, LoopResult, RoundTrace

STOP_REASONS = ("converged", "repeated", "max_rounds", "error")
FORCE_ANSWER = ("You already made exactly these calls and their results are above. Do not call tools "
                "again: answer the user now with the information you have.")
LAST_ROUND = "No more tool calls are possible: answer the user now with the information you have."


Executor = Callable[[str, dict[str, Any]], Any] | Mapping[str, Callable[..., Any]]


def run(client: Any, messages: Sequence[dict[str, Any]], router: Any, *, execute: Executor | None = None,
        model: str = "gpt-4o-mini", mode: str = "routed", call_format: str = "native", k: int = 5,
        max_rounds: int = 8, pinned: Sequence[str] = (), method: str | None = None, search_k: int = 5,
        parallel: bool = True, request_kwargs: Mapping[str, Any] | None = None) -> LoopResult:
    """Run the tool-calling loop until the model answers; see the module docstring."""
    if mode not in ("routed", "search"):
        raise AgentError(f"mode must be 'routed' or 'search', not {mode!r}")
    if call_format not in ("native", "prompt_json", "react"):
        raise AgentError(f"call_format must be 'native', 'prompt_json' or 'react', not {call_format!r}")
    if max_rounds < 1:
        raise AgentError("max_rounds must be at least 1")
    state = _Loop(client, list(messages), Toolbox(router, mode=mode, k=k, pinned=pinned, method=method,
                                                  search_k=search_k),
                  execute=execute, model=model, call_format=call_format, max_rounds=max_rounds,
                  parallel=parallel, request_kwargs=dict(request_kwargs or {}))
    return state.run()


class _Loop:
    def __init__(self, client: Any, messages: list[dict[str, Any]], toolbox: Toolbox, *, execute: Executor | None,
                 model: str, call_format: str, max_rounds: int, parallel: bool,
                 request_kwargs: dict[str, Any]) -> None:
        self.client, self.messages, self.toolbox = client, messages, toolbox
        self.execute, self.model, self.format = execute, model, call_format
        self.max_rounds, self.parallel, self.request_kwargs = max_rounds, parallel, request_kwargs
        self.calls: list[CallTrace] = []
        self.trace: list[RoundTrace] = []
        self.previous: str | None = None

    def result(self, answer: str, reason: str, error: str | None = None) -> LoopResult:
        return LoopResult(answer=answer, stop_reason=reason, rounds=len(self.trace), calls=self.calls,
                          trace=self.trace, messages=self.messages, found_tools=self.toolbox.found_names(),
                          error=error)

    def run(self) -> LoopResult:
        for rnd in range(1, self.max_rounds + 1):
            last = rnd == self.max_rounds
            tools = [] if last else self.toolbox.offer(self.messages)
            try:
                content, calls, raw = self.ask(rnd, tools, last=last)
            except Exception as exc:  # noqa: BLE001 - any client failure ends the run, visibly
                return self.result("", "error", error=f"{type(exc).__name__}: {exc}")
            if last:
                return self.result(content or "", "max_rounds")
            if calls is None:  # text modes: the reply was neither an answer nor a valid call
                self.messages += [{"role": "assistant", "content": content or ""},
                                  {"role": "user", "content": raw}]
                self.trace[-1].note = "format_error"
                continue
            if not calls:
                return self.result(content or "", "converged")
            signature = canonical_json(sorted(canonical_json([c["name"], _args_key(c["arguments"])]) for c in calls))
            if signature == self.previous:
                return self.forced_answer(rnd + 1)
            self.previous = signature
            self.answer_calls(rnd, content, calls, raw)
        raise AssertionError("unreachable: the last round always returns")

    # -- one request -------------------------------------------------------------------
    def ask(self, rnd: int, tools: list[ApiRecord], *, last: bool,
            extra: list[dict[str, Any]] | None = None) -> tuple[str | None, list[dict[str, Any]] | None, Any]:
        """Send one request. Returns (content, calls, raw): calls None = format error (raw = message)."""
        functions = [self.toolbox.function(r) for r in tools]
        messages = list(self.messages)
        if last:
            messages.append({"role": "user", "content": LAST_ROUND})
        messages += extra or []
        request: dict[str, Any] = {"model": self.model, **self.request_kwargs}
        if self.format == "native":
            if functions:
                request["tools"] = [{"type": "function", "function": f} for f in functions]
            else:
                request.pop("tool_choice", None)
                request.pop("tools", None)
        else:
            module = prompt_json if self.format == "prompt_json" else react
            messages.insert(0, {"role": "system", "content": module.system_prompt(functions, last_round=not functions)})
            request.pop("tools", None)
            request.pop("tool_choice", None)
        request["messages"] = messages
        self.trace.append(RoundTrace(round=rnd, tools=[f["name"] for f in functions],
                                     request_had_tools=bool(functions) and self.format == "native"))
        response = self.client.chat.completions.create(**request)
        message = _first_message(response)
        content = _get(message, "content")
        self.trace[-1].reply = content
        if self.format == "native":
            calls = [_native_call(tc) for tc in (_get(message, "tool_calls") or [])]
        else:
            parsed = (prompt_json if self.format == "prompt_json" else react).parse_reply(content)
            if parsed.kind == "format_error":
                return content, None, prompt_json.format_error_message(parsed.error)
            if parsed.kind == "answer":
                return parsed.answer, [], None
            calls = [{"id": f"call_{rnd}_{i}", **c} for i, c in enumerate(parsed.calls)]
            if self.format == "react":
                content = react.cut_observation(content or "")
        self.trace[-1].calls = len(calls)
        return content, calls, message

    def forced_answer(self, rnd: int) -> LoopResult:
        """The model repeated itself: ask once more, without tools, for the answer."""
        try:
            content, _calls, _raw = self.ask(rnd, [], last=False,
                                             extra=[{"role": "user", "content": FORCE_ANSWER}])
        except Exception as exc:  # noqa: BLE001
            return self.result("", "error", error=f"{type(exc).__name__}: {exc}")
        self.trace[-1].note = "forced answer after a repeated round"
        return self.result(content or "", "repeated")

    # -- executing a round's calls -----------------------------------------------------
    def answer_calls(self, rnd: int, content: str | None, calls: list[dict[str, Any]], raw: Any) -> None:
        offered = self.toolbox.offered_functions()
        traces = [self.toolbox.check(rnd, call, offered) for call in calls]
        runnable = [t for t in traces if t.error is None]
        if self.parallel and len(runnable) > 1:
            with ThreadPoolExecutor(max_workers=min(8, len(runnable))) as pool:
                list(pool.map(self.run_call, runnable))
        else:
            for t in runnable:
                self.run_call(t)
        self.calls += traces
        if self.format == "native":
            self.messages.append(_assistant_message(content, calls))
            for t in traces:  # every call answered, in order, bound by its id
                self.messages.append({"role": "tool", "tool_call_id": t.id, "content": t.result})
        else:
            self.messages.append({"role": "assistant", "content": content or ""})
            wrap = react.observation if self.format == "react" else _observation_json
            self.messages.append({"role": "user", "content": "\n".join(wrap(t.result) if self.format == "react"
                                                                       else wrap(t) for t in traces)})

    def run_call(self, t: CallTrace) -> None:
        try:
            value = self.toolbox.execute(t.name, t.arguments, self.execute)
            t.result = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            t.executed = True
        except Exception as exc:  # noqa: BLE001 - a failing tool is reported to the model, not raised
            t.executed = True
            t.error = f"{type(exc).__name__}: {exc}"
            t.result = f"error: tool {t.name!r} failed: {t.error}"


def _observation_json(t: CallTrace) -> str:
    return f"Observation ({t.name}): {t.result}"


def _args_key(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _first_message(response: Any) -> Any:
    choices = _get(response, "choices") or []
    if not choices:
        raise AgentError("the model's response has no choices")
    return _get(choices[0], "message")


def _native_call(tc: Any) -> dict[str, Any]:
    fn = _get(tc, "function")
    return {"id": _get(tc, "id"), "name": _get(fn, "name") or "", "arguments": _get(fn, "arguments") or "{}"}


def _assistant_message(content: str | None, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant turn sent back as the model made it, with every tool call."""
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": c["id"], "type": "function",
         "function": {"name": c["name"], "arguments": c["arguments"] if isinstance(c["arguments"], str)
                      else json.dumps(c["arguments"], ensure_ascii=False)}} for c in calls]}


