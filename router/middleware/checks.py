"""One request's exchange with the model: check the answer's tool calls against the tools
that were offered and build a repair turn (a streamed answer is first put back together by
streamed.py). No I/O happens here: `Exchange` is a small state machine that the sync wrapper,
the async wrapper and the proxy each drive with their own transport.

The exchange speaks Chat Completions (`CHAT`); the Responses and Messages APIs plug in as other
`Api` objects (router/middleware/responses.py, messages.py) that turn their request into the
Chat Completions shape for routing, and their answer's calls into Chat Completions tool calls
for the checker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.calls import check_calls
from checker.messages import call_defects, defect_text, nearest_text

from .errors import RequestError
from .request import MAX_TOOLS, RequestRouter, tool_name
from .routed import RoutedRequest, as_dict, capped_json
from .request_body import ToolList
from .streamed import StreamAssembler


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
    # for a request that brought no tools: catalog tools near the called names, for the person reading
    # the verdicts (the model is never told to call a tool it was not given: repair reads the verdict)
    catalog_suggestions: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        v = self.verdict
        return {"choice": self.choice, "verdict": v.verdict, "ok": v.ok,
                "defects": [d.message for d in v.defects],
                "suggestions": list(v.suggestions) or list(self.catalog_suggestions)}


def with_catalog_suggestions(checks: list[CallCheck], calls: list[tuple[int, list[dict]]],
                             routed: RoutedRequest, rr: RequestRouter) -> list[CallCheck]:
    """A request with no tools (none brought, none injected) has nothing to suggest from, so a call
    to ``get_weather`` got ``suggestions: []`` although the catalog has it: suggest from the catalog."""
    if routed.status != "none" or routed.offered or rr.router is None or all(c.verdict.ok for c in checks):
        return checks
    from checker.suggest import suggest

    names, by_choice = rr.catalog_names(), dict(calls)
    for check in checks:
        if check.verdict.ok or check.verdict.suggestions:
            continue
        near = [n for call in by_choice.get(check.choice) or [] for n in suggest(tool_name(call) or "", names)]
        check.catalog_suggestions = tuple(dict.fromkeys(near))
    return checks


def check_calls_of(calls: list[tuple[int, list[dict]]], routed: RoutedRequest) -> list[CallCheck]:
    """A verdict per (choice, Chat Completions tool calls) against the tools offered; none when
    the tools are held upstream and unknown here (never a judgement against zero tools)."""
    if not routed.checked:
        return []
    return [CallCheck(choice, check_calls(c, functions=routed.offered)) for choice, c in calls if c]


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
            said = defect_text(defects, kinds=False)
            said += "" if said.endswith((".", "?", "!")) else "."  # "did you mean x?" needs no stop after it
            text = " ".join(p for p in ("Error: this tool call was rejected before execution: " + said,
                                        nearest_text(near, said),
                                        "Call one of the tools you were given, with arguments that match its schema.")
                            if p)
        else:
            text = "Not executed: another call in the same reply was invalid. Send all the calls again."
        out.append({"role": "tool", "tool_call_id": call.get("id") or f"call_{i}", "content": text})
    return out


UNROUTABLE = "_toolsift_unroutable"  # set by an Api's view() when it cannot see enough to rank: why
# set by an Api's view(): the names of the conversation the request continues (router/middleware/
# conversations.py), and, for a request without tools, why the upstream may hold its tool list
CONVERSATION = "_toolsift_conversation"
HELD = "_toolsift_held"


class Api:
    """One wire format the exchange speaks. This base is Chat Completions; see responses.py and
    messages.py for the others. Every method is pure (no I/O)."""

    name = "chat"

    def view(self, body: dict, memory: Any = None) -> dict:
        """The request in the Chat Completions shape that `RequestRouter.route` reads."""
        return body

    def apply(self, body: dict, routed: RoutedRequest) -> dict:
        """The body to send upstream: the request with only the kept tools."""
        return routed.body

    def calls(self, response: Any) -> list[tuple[int, list[dict]]]:
        """The answer's tool calls per choice, as Chat Completions ``tool_calls``."""
        out = []
        for choice in (as_dict(response) or {}).get("choices") or []:
            calls = (choice.get("message") or {}).get("tool_calls")
            if calls:
                out.append((choice.get("index", 0), calls))
        return out

    def repair(self, sent: dict, response: dict, bad: CallCheck, routed: RoutedRequest) -> dict:
        """The next body: the answer and one error result per call appended, the offered tools again."""
        choice = next(ch for ch in as_dict(response)["choices"] if ch.get("index", 0) == bad.choice)
        body = dict(sent, messages=[*sent["messages"], *repair_turn(choice["message"], bad.verdict)],
                    tools=routed.offered or sent.get("tools"))
        body.pop("n", None)  # one repaired answer is enough
        return body

    def stream(self) -> "StreamAssembler":
        return StreamAssembler()

    # -- tool search (router/middleware/search.py)
    def native_tools(self, chat_tools: list[dict]) -> list[dict]:
        """Chat Completions tools in this API's own shape."""
        return chat_tools

    def to_chat_tools(self, tools: list[dict]) -> list[dict]:
        """This API's tools in the Chat Completions shape."""
        return tools

    def found_tools(self, request: dict, routed: RoutedRequest, names: list[str]) -> list[dict]:
        """The caller's own tool objects named ``names``, in that order."""
        original = routed.original
        have = original.names if isinstance(original, ToolList) else [tool_name(t) for t in original]
        return [original[have.index(n)] for n in names if n in have]

    def search_turn(self, sent: dict, response: dict, calls: list[dict], answers: dict[str, str],
                    append: list[dict], drop: str | None) -> dict:
        """The next body after a search: the answer and one result per call appended, ``append``
        added after the tools sent, and the tool named ``drop`` left out (the last round)."""
        choice = next(ch for ch in response["choices"] if ch.get("index", 0) == 0)
        turn = [{"role": "assistant", "content": choice["message"].get("content"), "tool_calls": calls},
                *({"role": "tool", "tool_call_id": c["id"], "content": answers[c["id"]]} for c in calls)]
        tools = [t for t in sent.get("tools") or [] if tool_name(t) != drop] + append
        body = dict(sent, messages=[*sent["messages"], *turn], tools=tools)
        body.pop("n", None)
        return body


CHAT = Api()


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
    api: Api = CHAT
    keep: tuple[str, ...] = ()  # tool names the request itself marks as needed
    memory: Any = None          # one tenant's remembered conversations (conversations.TenantConversations)
    conversation: tuple = ()    # the names of the conversation this request continues
    tools_in_effect: Any = None  # the conversation's full tool list: brought now, or remembered
    searches: int = 0            # tool-search rounds answered (router/middleware/search.py)
    streaming: bool = False      # the caller streams this request (also when the body says nothing)
    search_streams: bool = False  # the transport can answer searches in a stream (the proxy can; wrap() not)
    _body: dict | None = None
    search_pool: dict | None = None  # the client's deferred tools, name -> its tool (deferred.py)
    search_log: list = field(default_factory=list)  # (query, found names) per search answered
    deferral: Any = None            # deferred.Deferral: the client's own tool search, answered here
    _searching: bool = False
    _held_search: bool = False

    def start(self) -> dict:
        check_mode(self.mode, MODES)
        view = self.api.view(self.request, self.memory)
        if not isinstance(view, dict):
            raise RequestError(f"request body must be a JSON object, got {type(view).__name__}")
        unroutable = view.pop(UNROUTABLE, None)
        self.conversation = tuple(view.pop(CONVERSATION, None) or ())
        held = view.pop(HELD, None)
        known = self.memory.tools(self.conversation) if (
            self.memory is not None and self.conversation and not view.get("tools")) else None
        if known is not None:
            self.routed = self.rr.held(view, known, f"no tools in this request: checked against the {len(known)} "
                                       "tools remembered for this conversation")
            # the upstream may hold the search tool toolsift offered on the first turn: answer it
            # from the remembered list (which tools the upstream holds is unknown, so none is excluded)
            self._searching = self._held_search = bool(getattr(self.rr, "tool_search", False))
        elif held and not view.get("tools") and not (self.rr.inject and self.rr.router is not None):
            # (with inject on, a tool-less turn gets catalog tools as any other: the ones an earlier
            # turn was given were toolsift's, not the upstream's)
            self.routed = self.rr.held(view, None, f"{held}; calls not checked")
        elif unroutable:
            self.routed = self.rr.pass_through(view, unroutable)
        else:
            self.routed = self.rr.route(view, keep=self.keep)
        self.tools_in_effect = known if known is not None else (view.get("tools") or None)
        if self.memory is not None and self.conversation and known is None and self.tools_in_effect:
            self.memory.remember_tools(self.conversation, self.tools_in_effect)
        self._body = self.api.apply(self.request, self.routed)
        self._offer_search()
        return self._body

    def _offer_search(self) -> None:
        """Add the search tool when routing left tools out (and the request has no tool of that name)."""
        from .budget import charge_search
        from .search import SEARCH_NAME, catalog_left, native_search_tool

        r = self.routed
        if (self.streaming or self.request.get("stream")) and not self.search_streams:
            return
        if self.search_pool is not None:  # the client's own tool search (router/middleware/deferred.py)
            charge_search(r, own=False)
            self._body = dict(self._body, tools=[*(self._body.get("tools") or []), native_search_tool(self.api)])
            self._searching = True
            r.extra["search"] = 0
            return
        left_out = r.status == "routed" and r.checked and r.tools_out < r.tools_in or r.injected and catalog_left(
            self.rr, r)
        if not (getattr(self.rr, "tool_search", False) and self.rr.max_searches > 0 and left_out
                and isinstance(self._body.get("tools"), list)):
            return
        names = r.original.names if isinstance(r.original, ToolList) else [tool_name(t) for t in r.original]
        if SEARCH_NAME in names or not charge_search(r, own=True):  # (no room left in the token budget)
            return
        self._body = dict(self._body, tools=[*self._body["tools"], native_search_tool(self.api)])
        self._searching = True
        r.extra["search"] = 0

    @property
    def searching(self) -> bool:
        """Whether the search tool is offered in the body being sent."""
        return self._searching

    def _search_round(self, response: Any, calls: list[dict]) -> dict:
        """Answer the model's search calls with the router, and the next body to send. The tools
        searched: the client's deferred tools (``search_pool``), the catalog for an injected request,
        else the request's tools not offered (all of the remembered ones on a held turn)."""
        from .search import SEARCH_NAME, SEARCH_RESULTS, catalog_found, found_text, not_run_text, query_of

        self.searches += 1
        last = self.searches >= self.rr.max_searches
        catalog = self.routed.injected and self.search_pool is None
        pool = self.api.to_chat_tools(list(self.search_pool.values())) if self.search_pool is not None \
            else self.routed.original
        have = pool.names if isinstance(pool, ToolList) else [tool_name(t) for t in pool]
        calls = [dict(c, id=c.get("id") or f"call_{i}") for i, c in enumerate(calls)]
        answers, found = {}, []
        for call in calls:
            if tool_name(call) != SEARCH_NAME:
                answers[call["id"]] = not_run_text()
                continue
            query = query_of(call)
            if not query:
                hits = []
            elif catalog:
                hits = catalog_found(self.rr, self.routed, query, SEARCH_RESULTS)
            else:
                exclude = {n for n, _, _ in found} | (set() if self._held_search or self.search_pool is not None
                                                      else {tool_name(t) for t in self.routed.offered})
                hits = [(n, pool[have.index(n)], {}) for n in self.rr.search(pool, query, exclude, SEARCH_RESULTS)]
            for name, tool, said in hits:
                self.routed.offered.append(tool)
                self.routed.selected.append({"name": name, **said, "reason": "searched"})
            found += hits
            self.search_log.append((query, [n for n, _, _ in hits]))
            answers[call["id"]] = found_text(query, [t for _, t, _ in hits])
        self.routed.extra["search"] = self.searches
        if self.search_pool is not None:
            append = [self.search_pool[n] for n, _, _ in found]
        elif self._held_search or catalog:
            append = self.api.native_tools([t for _, t, _ in found])
        else:
            append = self.api.found_tools(self.request, self.routed, [n for n, _, _ in found])
        self._searching = not last
        self._body = self.api.search_turn(self._body, as_dict(response), calls, answers, append,
                                          SEARCH_NAME if last else None)
        return self._body

    def remember(self, response: Any) -> None:
        """After the answer: what a later request of this conversation needs (Responses: the
        conversation under the answer's id)."""
        if self.memory is not None and self.api.name == "responses":
            self.memory.remember(self.routed.body, response, self.conversation, self.tools_in_effect)

    @property
    def failed(self) -> bool:
        return any(not c.verdict.ok for c in self.checks)

    def feed(self, response: Any) -> dict | None:
        """Take an answer; return the next body to send, or None when done."""
        self.response = response
        calls = self.api.calls(response)
        if self._searching:
            from .search import SEARCH_NAME

            first = next((c for i, c in calls if i == 0), None)
            if first and any(tool_name(c) == SEARCH_NAME for c in first):
                return self._search_round(response, first)
        self.checks = with_catalog_suggestions(check_calls_of(calls, self.routed), calls, self.routed, self.rr)
        if not self.failed or self.mode != "repair" or self.repairs >= self.max_repairs:
            return None
        self.repairs += 1
        bad = next(c for c in self.checks if not c.verdict.ok)
        self._restore_dropped(next(c for i, c in calls if i == bad.choice))
        self._body = self.api.repair(self._body, as_dict(response), bad, self.routed)
        return self._body

    def check_streamed(self, response: Any) -> None:
        """Check a streamed answer once it is complete (annotated only: it was delivered already)."""
        self.response = response
        calls = self.api.calls(response)
        self.checks = with_catalog_suggestions(check_calls_of(calls, self.routed), calls, self.routed, self.rr)

    def _restore_dropped(self, tool_calls: list[dict]) -> None:
        """A call to a tool the caller sent but routing left out: offer it on the repair turn."""
        offered = {tool_name(t) for t in self.routed.offered}
        original = self.routed.original
        # by name first: decoding a 2k-tool list from the wire just to compare names is wasted work
        names = original.names if isinstance(original, ToolList) else [tool_name(t) for t in original]
        for call in tool_calls or []:
            name = tool_name(call)
            if not name or name in offered or name not in names or len(self.routed.offered) >= MAX_TOOLS:
                continue
            self.routed.offered.append(original[names.index(name)])
            self.routed.selected.append({"name": name, "reason": "restored"})
            offered.add(name)
