"""Bad input never escapes as an exception: a verdict always comes back."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apidb.record import ApiRecord
from checker import Verdict, check_calls, check_code

BAD_OUTPUTS = [
    "",
    "   \n\t",
    "pipeline('summarization', model='x') " + "lorem ipsum dolor " * 60_000,  # ~1 MB
    bytes(range(256)) * 40,                                                   # binary junk
    "\x00\x01\x02pipeline(\x00'a'\x00)",
    "f(" * 5000 + ")" * 5000,                                                 # deeply nested brackets
    "[" * 20_000,
    "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((x",
    b"pipeline('summarization', model='\xff\xfe\xfa')",                     # not UTF-8
    "<<<api_call>>>: , <<<api_provider>>>:",
    "{'api_call': \"",
    "```python\n```",
    "model = torch.hub.load(",
    "'''" * 100,
    "\\" * 1000,
    None,
]


@pytest.mark.parametrize("output", BAD_OUTPUTS, ids=range(len(BAD_OUTPUTS)))
@pytest.mark.parametrize("mode", ["strict", "gorilla"])
def test_bad_output_gives_a_verdict(output, mode, hub_index):
    v = check_code(output, hub_index["huggingface"], gold="pipeline('summarization', model='x')", mode=mode)
    assert isinstance(v, Verdict) and v.verdict in ("correct", "wrong_api", "hallucinated", "unparsable", "valid")


def test_megabyte_output_is_fast_enough(hub_index):
    import time

    text = "Some prose (with brackets) and f(x) calls. " * 25_000
    start = time.perf_counter()
    check_code(text, hub_index["huggingface"])
    assert time.perf_counter() - start < 5


def test_code_call_against_a_non_code_catalog_says_so():
    tools = [ApiRecord(id="ns/get_weather", namespace="ns", name="get_weather")]
    v = check_code("get_weather(city='Paris')", tools)
    assert v.verdict == "hallucinated" and "no code-style APIs" in v.defects[0].message
    assert check_code("nothing to see", []).verdict == "unparsable"


@pytest.mark.parametrize("calls", [
    None, "", "[", b"\xff\xfe", 42, [1, 2], [{"name": ""}], [{"arguments": {}}], {"tool_calls": "x"},
    [{"name": "f", "arguments": "[1, 2]"}], [{"name": "f", "arguments": "\x00"}],
    [{"name": "f", "arguments": {"a": [[[[[[[[[[[]]]]]]]]]]]}}], "[" * 100_000,
])
def test_bad_calls_give_a_verdict(calls):
    functions = [{"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "array",
                                                                                   "items": {"type": "integer"}}}}}]
    v = check_calls(calls, functions, [{"f": {"a": [[1]]}}])
    assert isinstance(v, Verdict) and v.verdict != "correct"


def test_bad_function_docs_and_ground_truth_do_not_raise():
    for functions in (None, [], [None, 3, "x"], [{"name": 5}], [{"name": "f", "parameters": "oops"}],
                      [{"name": "f", "parameters": {"properties": {"a": "oops"}}}]):
        for truth in (None, [], "x", [{"f": "oops"}], [{"f": {"a": "not a list"}}], [{"a": {}, "b": {}}]):
            assert isinstance(check_calls([{"name": "f", "arguments": {"a": 1}}], functions, truth), Verdict)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=400) | st.binary(max_size=400))
def test_property_any_text_gives_a_code_verdict(hub_index, text):
    for mode in ("strict", "gorilla"):
        assert isinstance(check_code(text, hub_index["torchhub"], gold="torch.hub.load('a/b', 'c')", mode=mode), Verdict)


_code_like = st.text(alphabet="abcpipelinemodel_./'\"()[]{}=, \n\\#<>:0123456789", max_size=300)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_code_like)
def test_property_code_like_text_gives_a_code_verdict(hub_index, text):
    assert isinstance(check_code(text, hub_index["huggingface"]), Verdict)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(_json, _json, _json)
def test_property_any_json_gives_a_calls_verdict(calls, functions, truth):
    assert isinstance(check_calls(calls, functions, truth), Verdict)
