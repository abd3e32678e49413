"""Strict mode's one-pass verdict (checker/strict_plan.py ``Plan.judge``) against its full check.

Strict mode decides a common output's verdict in one pass and finds the defects only when
they are read, by the full check (calls.py ``_check``). The two must agree: on every
officially labelled BFCL output (with and without docs or ground truth, in BFCL's and
OpenAI's shapes), on fuzzed calls, and at the edges of the admission limits, which the
one pass counts itself.
"""
from __future__ import annotations

import copy
import gzip
import json
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker import Verdict, check_calls
from checker.budget import MAX_CALLS, MAX_DEPTH, MAX_VALUES, admit_calls
from checker.calls import _checked
from checker.strict_plan import Plan, plan_for
from checker.bfcl.data import BfclData
from tests.checker.conftest import shared
from tests.checker.test_fuzz import DOCS, json_value


@pytest.fixture(autouse=True)
def no_wall_clock_verdicts(monkeypatch):
    """These tests compare two paths' verdicts, not their speed: under load (CI beside a training
    run) one full check of three calls outran the 2 s budget and came out `unparsable`."""
    import checker.budget

    monkeypatch.setattr(checker.budget, "TIME_BUDGET", 600.0)


def _full(calls, functions, ground_truth) -> Verdict:
    """The full check, defects built at once (what strict mode did before the one pass)."""
    admitted, why = admit_calls(calls)
    assert why is None
    return _checked(admitted, plan_for(functions, ground_truth))


def _same(fast: Verdict, full: Verdict) -> None:
    assert (fast.verdict, fast.ok, fast.api, fast.details) == (full.verdict, full.ok, full.api, full.details)
    assert fast.to_dict() == full.to_dict()  # defects, their words and suggestions read after the verdict


@pytest.fixture(scope="module")
def dev():
    data = BfclData(shared("bfcl"))
    with gzip.open(shared("bfcl_official", "dev.jsonl.gz"), "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [(r, *data.lookup(r["id"])[1:]) for r in rows]


def test_one_pass_verdict_is_the_full_checks_on_every_labelled_output(dev):
    decided = 0
    for r, functions, truth in dev:
        openai = [{"name": n, "arguments": a, "id": f"call_{i}"}
                  for i, c in enumerate(r["calls"]) for n, a in c.items()]
        for calls, docs, answer in ((r["calls"], functions, truth), (r["calls"], functions, None),
                                    (r["calls"], None, truth), (openai, functions, truth)):
            decided += Plan(docs, answer).judge(calls) is not None
            _same(check_calls(calls, docs, answer), _full(calls, docs, answer))
    assert decided >= 0.99 * 4 * len(dev)  # the one pass decides nearly all of them itself


@settings(max_examples=250, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(calls=st.lists(st.one_of(
    st.dictionaries(st.sampled_from(["calculate_area", "get_weather", "f", "name", "function"]),
                    st.dictionaries(st.sampled_from(["base", "height", "unit", "x"]), json_value, max_size=4),
                    min_size=1, max_size=2),
    st.fixed_dictionaries({"name": st.sampled_from(["calculate_area", "f", ""]),
                           "arguments": st.dictionaries(st.sampled_from(["base", "height", "x"]), json_value,
                                                        max_size=3)},
                          optional={"id": json_value, "parameters": json_value})), max_size=4),
    truth=st.one_of(st.none(), st.just([{"calculate_area": {"base": [10], "height": [5], "unit": ["", "units"]}}]),
                    st.just([{"calculate_area": {"base": [10, 10.0], "height": [5]}}, {"f": {}}])))
def test_one_pass_verdict_is_the_full_checks_on_fuzzed_calls(calls, truth):
    admitted, why = admit_calls(calls)
    fast = check_calls(calls, DOCS, truth)
    if why is not None:
        assert fast.verdict == "unparsable" and fast.defects[0].message == why
    else:
        _same(fast, _checked(admitted, plan_for(DOCS, truth)))


LIMIT = 1000  # MAX_VALUES lowered for these tests: walking a million values to its end takes seconds


def _values(n: int) -> list:
    """One call whose arguments make ``n`` values in all, as admission counts them."""
    return [{"f": {"x": [0] * (n - 4)}}]  # the list, the call, its arguments, the list x and n - 4 zeros


@pytest.mark.parametrize("calls,over", [
    (_values(LIMIT), False), (_values(LIMIT + 1), True),
    ([{"name": "f", "arguments": {"x": [0] * (LIMIT - 6)}, "id": "c"}], False),
    ([{"name": "f", "arguments": {"x": [0] * (LIMIT - 5)}, "id": "c"}], True),
    ([{"name": "f", "arguments": {"x": [0] * (LIMIT - 8)}, "id": ["a", "b"]}], False),
    ([{"name": "f", "arguments": {"x": [0] * (LIMIT - 7)}, "id": ["a", "b"]}], True),
    ([{"f": {"x": [[], {}, [None]]}}], False),
    ([{"f": {"x": 10 ** 4300 - 1}}], False), ([{"f": {"x": 10 ** 4300}}], True),
    ([{"f": {}}] * MAX_CALLS, False), ([{"f": {}}] * (MAX_CALLS + 1), True)])
def test_the_one_pass_admits_exactly_what_admission_does(calls, over, monkeypatch):
    import checker.budget
    import checker.strict_plan

    assert MAX_VALUES > LIMIT
    monkeypatch.setattr(checker.budget, "MAX_VALUES", LIMIT)
    monkeypatch.setattr(checker.strict_plan, "MAX_VALUES", LIMIT)
    why = admit_calls(calls)[1]
    assert (why is not None) == over
    v = check_calls(calls, DOCS)
    assert (v.verdict == "unparsable") == over
    if over:
        assert v.defects[0].message == why


@pytest.mark.parametrize("depth", [MAX_DEPTH - 4, MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH])
def test_nesting_is_admitted_to_the_same_depth(depth):
    value: object = 1
    for _ in range(depth):
        value = [value]
    for calls in ([{"f": {"x": value}}], [{"name": "f", "arguments": {"x": value}}],
                  [{"name": "f", "arguments": {}, "extra": value}]):
        why = admit_calls(calls)[1]
        v = check_calls(calls, DOCS)
        assert (v.verdict == "unparsable") == (why is not None), (depth, calls[0].keys())
        if why:
            assert "nested more than" in v.defects[0].message


def test_a_verdict_whose_defects_are_not_read_yet_copies_and_pickles_as_a_plain_one():
    calls = [{"calculate_area": {"base": "ten", "heigth": 5}}]
    v = check_calls(calls, DOCS, [{"calculate_area": {"base": [10], "height": [5]}}])
    assert v.verdict == "hallucinated_param" and "_defects" not in vars(v)  # not found yet
    for other in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v)):
        assert type(other) is Verdict and other.to_dict() == v.to_dict()
    assert [d.kind for d in v.defects] == ["hallucinated_param", "missing_required", "type_error", "wrong_call",
                                           "wrong_call"]
    assert v.defects[0].suggestions == ("height",)
