"""Fuzzing the checker's two entry points (issue #19, item 8): whatever a model emits,
`check_code` and `check_calls` return a Verdict (at worst ``unparsable`` with a reason)
within the per-call budget, and raise nothing but the package's documented errors.

Inputs mix random text with the shapes that broke it before: long operator chains,
deep nesting, over-long integers, lone surrogates, a string where a dict belongs.
Derandomized, so `make test` is reproducible; a few thousand cases, well under a minute.
"""
from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apidb.errors import ToolsiftError
from benchmarks.data.shared_data import data_root
from checker import Verdict, check_calls, check_code
from checker.budget import TIME_BUDGET
from tests.conftest import BUNDLED_GORILLA

SLACK = 3.0  # seconds over the budget: the parse attempt in flight finishes, on a loaded machine
FUZZ = settings(max_examples=1000, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

CODE_BITS = ["torch.hub.load(", "hub.KerasLayer(", "pipeline(", "AutoModel.from_pretrained(", "(", ")", "[", "]",
             "~", "a**", "await ", "lambda: (", "-(",
             "{", "}", "'", '"', "'''", ",", "=", "model=", "repo_or_dir=", "'pytorch/vision'", "pytorch/vision",
             "facebook/bart-large-cnn", "a/", "+", "-", "*", ".", "a.", " if x else ", "lambda: ", "not ",
             "<<<api_call>>>: ", "<<<code>>>:", "```python\n", "```", "\n", "\\n", "\\", "{'api_call': ",
             "'domain': 'x'", "#", " ", "\t", "\x00", "\ud800", "é", "$ mlagents-load --repo-id=x", "import torch\n",
             "x = 'a/b'\n", "--", "api_provider", ":", ";", "@", "**", "0x", "1e999", "9" * 50]
# (huge ints are built by a function: hypothesis reprs strategy arguments, and Python
# refuses to print an int of more than 4,300 digits)
huge_int = st.integers(4_000, 6_000).map(lambda digits: (-1) ** digits * 10 ** digits)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30),
                      huge_int, st.sampled_from(["\ud800", "a\udfffb", "", "0" * 5000]))
json_value = st.recursive(json_leaf, lambda kids: st.one_of(st.lists(kids, max_size=5),
                                                            st.dictionaries(st.text(max_size=10), kids, max_size=5)),
                          max_leaves=10)


def _deep(depth: int, kind: str, leaf):
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


# deep values are built once (generating 20,000 levels per example would dominate the run)
DEEP = [_deep(d, k, leaf) for d in (65, 200, 1500, 20_000) for k in ("list", "dict") for leaf in (1, {"name": "f"})]
deep_value = st.sampled_from(DEEP)


@st.composite
def code_text(draw):
    parts = draw(st.lists(st.sampled_from(CODE_BITS), max_size=40))
    text = "".join(parts)
    if draw(st.booleans()):  # a short unit repeated: operator chains, nesting, long runs
        unit = "".join(draw(st.lists(st.sampled_from(CODE_BITS), min_size=1, max_size=3)))
        text += unit * draw(st.integers(1, 6000))
    if draw(st.integers(0, 9)) == 0:
        text += draw(st.text(max_size=200))
    return text


@st.composite
def call_list(draw):
    names = st.sampled_from(["calculate_area", "get_weather", "f", "", "a.b", "x" * 300, "\ud800"])
    calls = draw(st.lists(st.fixed_dictionaries({"name": names, "arguments": st.one_of(
        st.dictionaries(st.sampled_from(["base", "height", "unit", "city", "x"]), json_value, max_size=4),
        st.text(max_size=40), json_value)}), max_size=4))
    try:
        text = json.dumps(calls)
    except ValueError:  # an int too long to print: the list itself, then
        text = calls
    return draw(st.sampled_from([calls, text, {"tool_calls": calls}]))


def function_docs() -> list[dict]:
    """Real BFCL function docs (a stand-in doc when the shared data is absent)."""
    path = data_root() / "bfcl" / "BFCL_v4_simple_python.json"
    if not path.exists():
        return [{"name": "calculate_area", "parameters": {"type": "dict", "properties": {
            "base": {"type": "integer"}, "height": {"type": "integer"}}, "required": ["base", "height"]}}]
    docs: list[dict] = []
    for line in path.read_text(encoding="utf-8").splitlines()[:20]:
        docs.extend(json.loads(line)["function"])
    return docs


@pytest.fixture(scope="module")
def torchhub():
    from apidb.loaders import load
    from checker.code import CodeIndex

    return CodeIndex(load(BUNDLED_GORILLA / "torchhub_api.jsonl").records, "torchhub")


def within_budget(fn, *args, **kwargs) -> Verdict:
    start = time.perf_counter()
    try:
        verdict = fn(*args, **kwargs)
    except ToolsiftError:  # the documented error (a bad mode); anything else fails the test
        return None
    took = time.perf_counter() - start
    assert took < TIME_BUDGET + SLACK, f"{took:.1f}s for {repr(args)[:200]}"
    assert isinstance(verdict, Verdict) and isinstance(verdict.verdict, str)
    json.dumps(verdict.to_dict(), default=str)  # a verdict can always be written out
    return verdict


@FUZZ
@given(output=st.one_of(code_text(), st.text(max_size=300), st.binary(max_size=100), json_value),
       gold=st.one_of(st.none(), st.sampled_from(["torchhub/AlexNet", "torch.hub.load('pytorch/vision', 'x')"]),
                      st.fixed_dictionaries({"api_data": st.one_of(st.text(max_size=5), json_value)}),
                      st.fixed_dictionaries({"api_call": json_value, "domain": json_value}), json_value),
       mode=st.sampled_from(["strict", "gorilla"]))
def test_check_code_always_returns_a_verdict(torchhub, output, gold, mode):
    within_budget(check_code, output, torchhub, gold=gold, mode=mode)


@FUZZ
@given(calls=st.one_of(call_list(), json_value, deep_value, st.text(max_size=200), st.binary(max_size=50),
                       st.sampled_from(['[{"name": "f", "arguments": {"x": ' + "9" * 5000 + "}}]",
                                        '{"name": "f", "arguments": "' + "[" * 5000 + '"}'])),
       functions=st.one_of(st.none(), st.just("docs"), json_value, deep_value),
       ground_truth=st.one_of(st.none(), json_value,
                              st.lists(st.dictionaries(st.sampled_from(["calculate_area", "f"]),
                                                       st.dictionaries(st.text(max_size=5), json_value, max_size=3),
                                                       min_size=1, max_size=1), max_size=3)))
def test_check_calls_always_returns_a_verdict(calls, functions, ground_truth):
    if functions == "docs":
        functions = DOCS
    within_budget(check_calls, calls, functions, ground_truth)


DOCS = function_docs()


def test_reported_shapes_are_verdicts_within_budget(torchhub):
    """The inputs named in the issue, each on its own."""
    chain = within_budget(check_code, "hub.load(" + "a/" * 2000, torchhub)
    assert chain.verdict == "unparsable" and chain.defects and chain.defects[0].message
    for out in ("torch.hub.load(" + "a." * 10_000, "f(" + "x if y else " * 3000, "pipeline(" + "'a' + " * 5000):
        within_budget(check_code, out, torchhub)
    huge = within_budget(check_calls, [{"name": "f", "arguments": {"x": 10 ** 5000}}], DOCS)
    assert huge.verdict == "unparsable" and "digits" in huge.defects[0].message
    text = within_budget(check_calls, '[{"name": "f", "arguments": {"x": ' + "9" * 5000 + "}}]", DOCS)
    assert text.verdict == "unparsable"
    gorilla = within_budget(check_code, "<<<api_call>>>: torch.hub.load(repo_or_dir='pytorch/vision', "
                            "model='resnet50', pretrained=True)", torchhub, gold={"api_data": "s"}, mode="gorilla")
    assert gorilla.verdict in ("correct", "wrong_api", "valid")
