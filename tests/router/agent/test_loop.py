"""The reference agent loop against the scripted OpenAI-compatible upstream.

The upstream is a real HTTP server playing a model from a script; the loop talks to it
with the real `openai` client. Tools are executed by the same functions the weather MCP
test server serves, so the answers are real values, not mocks.
"""
from __future__ import annotations

import json
import threading

import pytest

from router.agent import loop
from tests.support.scripted_upstream import ScriptedUpstream, completion, error, offered_names, tool_call

TOOLS = [
    {"type": "function", "function": {"name": "geocode_city", "description": "Find the latitude and longitude "
     "of a city by name.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                           "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_weather_by_coords", "description": "Current weather "
     "(temperature in Celsius and conditions) at a latitude/longitude.", "parameters": {
         "type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
         "required": ["lat", "lon"]}}},
    {"type": "function", "function": {"name": "add", "description": "Add two numbers and return the sum.",
     "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"]}}},
    {"type": "function", "function": {"name": "send_email", "description": "Send an email to a recipient.",
     "parameters": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                    "required": ["to", "body"]}}},
    {"type": "function", "function": {"name": "list_directory", "description": "List the files in a folder.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
]
QUESTION = [{"role": "user", "content": "What is the weather in the city of Ningde right now?"}]


@pytest.fixture(scope="module")
def router():
    from apidb.loaders.openai import records_from_openai_tools
    from router import Router

    return Router.from_records(records_from_openai_tools(TOOLS, "demo"))


class Executors(dict):
    """The tool functions, counting how often each really ran."""

    def __init__(self) -> None:
        from tests.support.mcp_servers import weather

        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()
        super().__init__(geocode_city=self._wrap("geocode_city", weather.geocode_city),
                         get_weather_by_coords=self._wrap("get_weather_by_coords", weather.get_weather_by_coords),
                         add=self._wrap("add", lambda a, b: a + b),
                         send_email=self._wrap("send_email", lambda to, body: "sent"))

    def _wrap(self, name, fn):
        def run(**kwargs):
            with self.lock:
                self.counts[name] = self.counts.get(name, 0) + 1
            return fn(**kwargs)
        return run


def _client(up):
    from openai import OpenAI

    return OpenAI(base_url=up.base_url, api_key="test", max_retries=0)


def _tool_results(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m.get("role") == "tool"]


def _last_tool_json(request: dict) -> dict:
    return json.loads(_tool_results(request)[-1]["content"])


def _weather_model(request: dict):
    """A model that needs two dependent calls, and re-queries when geocoding finds the wrong place."""
    results = _tool_results(request)
    if not results:
        return completion(tool_calls=[tool_call("geocode_city", {"city": "Ningde"})])
    last = json.loads(results[-1]["content"])
    if last.get("region") == "Tibet":  # a village in Tibet: not the city the user means
        return completion("That looks like the wrong Ningde, I will query again.",
                          tool_calls=[tool_call("geocode_city", {"city": "Ningde City"})])
    if "lat" in last:
        return completion(tool_calls=[tool_call("get_weather_by_coords", {"lat": last["lat"], "lon": last["lon"]})])
    return completion(f"In Ningde (Fujian) it is {last['temperature_c']} °C with {last['conditions']}.")


def test_two_dependent_calls_with_a_requery(router):
    ex = Executors()
    with ScriptedUpstream(_weather_model) as up:
        result = loop.run(_client(up), QUESTION, router, execute=ex, model="m", method="bm25", k=3)
        requests = up.chat_requests
    assert result.stop_reason == "converged", result.to_dict()
    assert result.answer == "In Ningde (Fujian) it is 24.5 °C with light rain."
    assert result.rounds == 4 and len(requests) == 4
    assert [c.name for c in result.calls] == ["geocode_city", "geocode_city", "get_weather_by_coords"]
    assert result.verdicts == ["valid", "valid", "valid"] and all(c.executed for c in result.calls)
    assert ex.counts == {"geocode_city": 2, "get_weather_by_coords": 1}
    # routed mode: each tool-carrying request offered at most k=3 tools, the two weather tools among
    # them, and nothing unrelated (BM25 offers only tools that share a term with the conversation)
    assert all({"geocode_city", "get_weather_by_coords"} <= set(offered_names(r)) for r in requests)
    assert all(len(offered_names(r)) <= 3 and "send_email" not in offered_names(r) for r in requests)
    # every tool result is bound to the call it answers
    sent = requests[-1]["messages"]
    ids = [tc["id"] for m in sent if m["role"] == "assistant" for tc in m.get("tool_calls") or []]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids


def test_parallel_calls_are_all_executed_and_answered(router):
    def model(request):
        if not _tool_results(request):
            return completion(tool_calls=[tool_call("geocode_city", {"city": "Paris"}, id="c_paris"),
                                          tool_call("geocode_city", {"city": "London"}, id="c_london")])
        by_id = {m["tool_call_id"]: json.loads(m["content"]) for m in _tool_results(request)}
        return completion(f"Paris {by_id['c_paris']['lat']}, London {by_id['c_london']['lat']}")

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Where are the cities Paris and London?"}], router,
                          execute=ex, model="m", method="bm25")
    assert result.stop_reason == "converged"
    assert result.answer == "Paris 48.86, London 51.51"
    assert ex.counts == {"geocode_city": 2}


def test_repeated_calls_end_early_with_a_forced_answer(router):
    def model(request):
        if request.get("tools"):
            return completion(tool_calls=[tool_call("geocode_city", {"city": "Paris"})])
        return completion("Paris is at 48.86, 2.35.")

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Where is the city of Paris?"}], router, execute=ex,
                          model="m", method="bm25", max_rounds=8)
        requests = up.chat_requests
    assert result.stop_reason == "repeated"
    assert result.answer == "Paris is at 48.86, 2.35."
    assert result.rounds == 3 and len(requests) == 3
    assert "tools" not in requests[-1]  # the forced answer request offers no tools
    assert ex.counts == {"geocode_city": 1}  # the repeated round was not executed again


def test_a_model_that_never_stops_hits_max_rounds_and_the_last_request_has_no_tools(router):
    calls = iter(range(1000))

    def model(request):
        if request.get("tools"):  # a new call every round: never the same, never done
            return completion(tool_calls=[tool_call("add", {"a": next(calls), "b": 1})])
        return completion("I kept adding numbers; the last sum was 3.")

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Add numbers forever"}], router, execute=ex,
                          model="m", method="bm25", max_rounds=4)
        requests = up.chat_requests
    assert result.stop_reason == "max_rounds"
    assert result.rounds == 4 and len(requests) == 4
    assert [bool(r.get("tools")) for r in requests] == [True, True, True, False]
    assert "tools" not in requests[-1] and "tool_choice" not in requests[-1]
    assert result.answer == "I kept adding numbers; the last sum was 3."
    assert [t.request_had_tools for t in result.trace] == [True, True, True, False]
    assert ex.counts == {"add": 3}


def test_a_hallucinated_tool_is_answered_with_an_error_not_executed(router):
    def model(request):
        results = _tool_results(request)
        if not results:
            return completion(tool_calls=[tool_call("get_weather", {"city": "Paris"})])
        if len(results) == 1:
            assert "get_weather_by_coords" in results[0]["content"]  # the error names the nearest tool
            return completion(tool_calls=[tool_call("geocode_city", {"city": "Paris"})])
        last = json.loads(results[-1]["content"])
        if "lat" in last:
            return completion(tool_calls=[tool_call("get_weather_by_coords", {"lat": last["lat"],
                                                                              "lon": last["lon"]})])
        return completion(f"Paris: {last['temperature_c']} °C, {last['conditions']}.")

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Weather in the city of Paris?"}], router, execute=ex,
                          model="m", method="bm25")
    assert result.stop_reason == "converged"
    assert result.answer == "Paris: 12.0 °C, cloudy."
    first = result.calls[0]
    assert first.verdict == "hallucinated_tool" and not first.executed
    assert first.result.startswith("error:") and "get_weather_by_coords" in first.result
    assert "get_weather" not in ex.counts and ex.counts["get_weather_by_coords"] == 1


def test_bad_arguments_are_sent_back_for_the_model_to_fix(router):
    def model(request):
        results = _tool_results(request)
        if not results:
            return completion(tool_calls=[tool_call("add", {"a": "two", "b": 2})])
        if len(results) == 1:
            return completion(tool_calls=[tool_call("add", {"a": 2, "b": 2})])
        return completion(f"2 + 2 = {results[-1]['content']}")

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "add two and two"}], router, execute=ex,
                          model="m", method="bm25")
    assert result.verdicts == ["type_error", "valid"]
    assert result.answer == "2 + 2 = 4" and ex.counts == {"add": 1}


def test_search_mode_starts_with_the_meta_tool_and_appends_found_tools(router):
    def model(request):
        results = _tool_results(request)
        if not results:
            return completion(tool_calls=[tool_call("search_tools", {"query": "latitude longitude of a city"})])
        last = json.loads(results[-1]["content"])
        if "tools" in last:
            return completion(tool_calls=[tool_call("geocode_city", {"city": "London"})])
        if "lat" in last:
            return completion(tool_calls=[tool_call("search_tools", {"query": "weather at coordinates"})]) \
                if "get_weather_by_coords" not in offered_names(request) else \
                completion(tool_calls=[tool_call("get_weather_by_coords", {"lat": last["lat"], "lon": last["lon"]})])
        return completion(f"London: {last['temperature_c']} °C, {last['conditions']}.")

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Weather in the city of London?"}], router, execute=ex,
                          model="m", mode="search", method="bm25", search_k=2, pinned=["add"])
        offered = [offered_names(r) for r in up.chat_requests]
    assert result.stop_reason == "converged", result.to_dict()
    assert result.answer == "London: 9.5 °C, drizzle."
    assert offered[0] == ["search_tools", "add"]
    for before, after in zip(offered, offered[1:]):
        assert after[:len(before)] == before  # append-only: the prefix never changes
    assert "geocode_city" in result.found_tools and "get_weather_by_coords" in offered[-1]


def test_client_errors_stop_the_loop_visibly(router):
    with ScriptedUpstream([error(500, {"error": {"message": "upstream exploded"}})]) as up:
        result = loop.run(_client(up), QUESTION, router, execute=Executors(), model="m", method="bm25")
    assert result.stop_reason == "error" and "upstream exploded" in result.error
    assert result.answer == ""


# ---------------------------------------------------------------- text modes

def test_prompt_json_mode_with_messy_replies(router):
    replies = iter([
        "Sure! I'll look that up.\n```json\n{'action': 'geocode_city', 'params': {'city': 'Paris',},}\n```",
        'Now the weather: {"action": "get_weather_by_coords", "params": {"lat": 48.86, "lon": 2.35',  # cut off
        'Sorry. {"action": "get_weather_by_coords", "params": {"lat": 48.86, "lon": 2.35, "unit": undefined}}',
        '{"answer": "It is 12.0 °C and cloudy in Paris."}',
    ])

    def model(request):
        return completion(next(replies))

    ex = Executors()
    with ScriptedUpstream(model) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Weather in the city of Paris?"}], router, execute=ex,
                          model="m", method="bm25", call_format="prompt_json", k=3)
        requests = up.chat_requests
    assert result.stop_reason == "converged"
    assert result.answer == "It is 12.0 °C and cloudy in Paris."
    assert all("tools" not in r for r in requests)
    assert "geocode_city" in requests[0]["messages"][0]["content"]  # tools described in the system prompt
    assert result.trace[1].note == "format_error"
    assert "Format error" in requests[2]["messages"][-1]["content"]
    # the third reply added an unknown parameter: the checker refused it, so the model saw an error
    assert result.verdicts == ["valid", "hallucinated_param"]
    assert ex.counts == {"geocode_city": 1}


def test_react_mode(router):
    replies = iter([
        "Thought: I need the coordinates first.\nAction: geocode_city\nAction Input: {\"city\": \"London\"}\n"
        "Observation: (the model made this up) lat 0",
        "Thought: now the weather.\nAction: get_weather_by_coords\nAction Input: {'lat': 51.51, 'lon': -0.13}",
        "Thought: I know the answer.\nFinal Answer: London has drizzle at 9.5 °C.",
    ])
    ex = Executors()
    with ScriptedUpstream(lambda request: completion(next(replies))) as up:
        result = loop.run(_client(up), [{"role": "user", "content": "Weather in the city of London?"}], router, execute=ex,
                          model="m", method="bm25", call_format="react")
        requests = up.chat_requests
    assert result.stop_reason == "converged"
    assert result.answer == "London has drizzle at 9.5 °C."
    observation = requests[1]["messages"][-1]["content"]
    assert observation.startswith("Observation: ") and "51.51" in observation
    assert "made this up" not in requests[1]["messages"][-2]["content"]  # invented observations are cut
    assert ex.counts == {"geocode_city": 1, "get_weather_by_coords": 1}


@pytest.mark.parametrize("text, expected", [
    ('{"action": "a", "params": {"x": 1}}', {"action": "a", "params": {"x": 1}}),
    ('Here you go:\n```json\n{"action": "a", "params": {}}\n```\nThanks', {"action": "a", "params": {}}),
    ("I will call {'action': 'a', 'params': {'q': 'x'}} now", {"action": "a", "params": {"q": "x"}}),
    ('{"action": "a", "params": {"flag": true, "v": undefined, "n": null,},}',
     {"action": "a", "params": {"flag": True, "v": None, "n": None}}),
    ('text with {braces "}" inside} and then {"answer": "42"}', {"answer": "42"}),
    ('[{"action": "a", "params": {}}, {"action": "b", "params": {}}]',
     [{"action": "a", "params": {}}, {"action": "b", "params": {}}]),
    ("no json at all", None),
    ('{"action": "a", "params": {"x": 1}', None),
])
def test_tolerant_json_extractor(text, expected):
    from router.agent.prompt_json import extract_json

    assert extract_json(text) == expected


def test_prompt_json_reply_kinds():
    from router.agent.prompt_json import parse_reply

    assert parse_reply("The answer is 4.").kind == "answer"
    assert parse_reply('{"answer": "4"}').answer == "4"
    calls = parse_reply('[{"action": "a", "params": {"x": 1}}, {"tool": "b", "arguments": {}}]').calls
    assert calls == [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]
    assert parse_reply('{"action": "a", "params": {"x": 1').kind == "format_error"


def test_react_parsing():
    from router.agent.react import parse_reply

    step = parse_reply("Thought: t\nAction: `geocode_city`\nAction Input: {\"city\": \"Rome\"}\nObservation: x")
    assert step.kind == "calls" and step.calls == [{"name": "geocode_city", "arguments": {"city": "Rome"}}]
    assert parse_reply("Thought: done\nFinal Answer: Rome is in Italy.").answer == "Rome is in Italy."
    assert parse_reply("Rome is in Italy.").answer == "Rome is in Italy."
    raw = parse_reply("Action: geocode_city\nAction Input: Rome please")
    assert raw.calls[0]["arguments"] == "Rome please"  # left raw: the checker reports it as unparsable
