"""Each rule where strict mode differs from BFCL (docs/checker.md), on real BFCL outputs.

The outputs and their official verdicts come from bfcl_official/dev.jsonl.gz; every
test runs strict mode and ``--mode bfcl`` side by side on them.
"""
from __future__ import annotations

import copy
import gzip
import json

import pytest

from checker import check_calls
from checker.bfcl.data import BfclData
from tests.checker.conftest import shared


@pytest.fixture(scope="module")
def dev():
    data = BfclData(shared("bfcl"))
    with gzip.open(shared("bfcl_official", "dev.jsonl.gz"), "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return {r["uid"]: (r, *data.lookup(r["id"])[1:]) for r in rows}


def _kind(dev, mutation):
    return [x for x in dev.values() if x[0]["mutation"] == mutation]


def strict(x):
    r, functions, truth = x
    return check_calls(r["calls"], functions, truth)


def bfcl(x, fc=False):
    r, functions, truth = x
    return check_calls(r["calls"], functions, truth, mode="bfcl", category=r["category"], fc=fc)


def test_quotes_normalise_like_bfcl(dev):
    """' and " are the same character in a compared string (was a bug: 16 quote_swap outputs failed)."""
    outs = _kind(dev, "quote_swap")
    assert len(outs) == 18
    assert [strict(x).ok for x in outs] == [x[0]["official_valid"] for x in outs]
    assert sum(strict(x).ok for x in outs) == 17


def test_explicit_null_is_the_same_as_leaving_out(dev):
    outs = _kind(dev, "explicit_null")
    assert len(outs) == 61 and all(strict(x).ok for x in outs)
    for r, functions, truth in outs:  # ... and leaving the same parameter out is fine too
        (name, args), = r["calls"][0].items()
        left_out = {k: v for k, v in args.items() if v is not None}
        assert check_calls([{name: left_out}] + r["calls"][1:], functions, truth).ok
    # null for a parameter the doc requires is still a type error
    r, functions, truth = dev["simple_python_1::gold"]
    v = check_calls([{"math.factorial": {"number": None}}], functions, truth)
    assert v.verdict == "type_error" and v.defects[0].param == "number"


def test_an_enum_is_a_contract_case_and_spacing_count(dev):
    """enum members in another case: BFCL (which never reads enums) accepts, strict does not."""
    outs = [x for x in _kind(dev, "enum_case") if x[0]["official_valid"]]
    assert len(outs) >= 400
    for x in outs:
        v = strict(x)
        assert not v.ok and any(d.kind == "enum_violation" for d in v.defects), x[0]["uid"]
        assert bfcl(x).ok


def test_free_text_compares_normalised_at_every_depth(dev):
    """Free text against the ground truth: case and punctuation do not count, in nested lists too
    (BFCL compares strings inside a dict's lists exactly)."""
    for uid in ("parallel_multiple_135::string_case_nested", "parallel_multiple_135::string_punct_variant"):
        assert strict(dev[uid]).ok and not dev[uid][0]["official_valid"]
        assert bfcl(dev[uid]).details["bfcl_error_type"] == "parallel_function_checker_no_order:cannot_find_match"
    # BFCL's "variable" rule (answer type differs from the doc type) switches normalisation off; strict does not
    x = dev["live_multiple_350-133-14::string_case_top"]
    assert strict(x).ok and bfcl(x).details["bfcl_error_type"] == "value_error:others"


def test_the_doc_wins_over_an_answer_that_breaks_it(dev):
    """Possible answers outside the doc's enum or of another type: strict follows the doc."""
    outs = [x for x in _kind(dev, "gold") if x[0]["official_valid"] and x[0]["encoding"] == "json"
            and not strict(x).ok]
    assert {strict(x).verdict for x in outs} == {"enum_violation", "type_error"}
    for r, functions, truth in outs:
        v = check_calls(r["calls"], functions, truth)
        doc = next(f for f in functions if f["name"] == v.defects[0].name)
        schema = doc["parameters"]["properties"][v.defects[0].param]
        (_, args), = next(c for c in r["calls"] if v.defects[0].name in c).items()
        value = args[v.defects[0].param]
        if v.verdict == "enum_violation":
            assert value not in schema["enum"]
        else:
            assert schema["type"] == "string" and isinstance(value, bool)


def test_java_and_javascript_values_are_json_values(dev):
    """Strict reads a JSON call's values as JSON: plain JSON values of the declared type pass
    (BFCL rejects them), source strings such as "true" or "50L" for a boolean/long do not."""
    native = [x for x in _kind(dev, "gold_native")]
    assert len(native) == 70 and all(strict(x).ok for x in native)
    assert sum(not x[0]["official_valid"] for x in native) == 40
    source = [x for x in _kind(dev, "gold") if x[0]["encoding"] == "src" and not strict(x).ok]
    assert source and all(bfcl(x).ok and strict(x).verdict == "type_error" for x in source)
    for x in source:
        assert all(isinstance(d.message, str) and "got str" in d.message for d in strict(x).defects
                   if d.kind == "type_error")


def test_dotted_names_may_be_written_with_underscores(dev):
    """A function-calling API cannot carry dots: strict accepts both spellings (BFCL: depends on the model)."""
    outs = [x for x in _kind(dev, "name_dot_to_underscore") if x[0]["official_valid_fc"]]
    assert len(outs) >= 380
    for x in outs:
        assert not bfcl(x).ok and bfcl(x, fc=True).ok
        v = strict(x)
        assert v.ok or {d.kind for d in v.defects} == {"enum_violation"}  # only where the answer breaks its doc


def test_an_int_is_a_float_at_every_depth(dev):
    x = dev["simple_python_13::int_for_float_in_list"]
    assert strict(x).ok
    assert bfcl(x).details["bfcl_error_type"] == "type_error:nested" and not x[0]["official_valid"]


def test_a_null_only_answer_is_met_by_leaving_out(dev):
    """Possible answer [null] (no ""): BFCL wants the null written; strict takes omission as null."""
    x = dev["live_multiple_1038-265-0::gold"]
    assert x[2][0]["detail_project"]["start_date"] == [None]
    assert strict(x).ok and bfcl(x).details["bfcl_error_type"] == "simple_function_checker:missing_optional"
    with_null = copy.deepcopy(x[0]["calls"])
    with_null[0]["detail_project"]["start_date"] = None
    assert check_calls(with_null, x[1], x[2]).ok and check_calls(with_null, x[1], x[2], mode="bfcl").ok


def test_calls_match_in_any_order_in_every_category(dev):
    outs = [x for x in _kind(dev, "reorder_calls") if x[0]["official_valid"]]
    assert outs and all(strict(x).ok for x in outs)
