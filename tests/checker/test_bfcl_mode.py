"""``mode="bfcl"`` against the official BFCL verdicts (bfcl_official/dev.jsonl.gz) and on bad input."""
from __future__ import annotations

import gzip
import json

import pytest

from checker import check_calls
from checker.bfcl import BfclInputError, check_bfcl, read_calls
from checker.bfcl.data import BfclData
from tests.checker.conftest import shared


@pytest.fixture(scope="module")
def dev():
    """The officially labelled outputs, each with its question's docs and possible answer."""
    path = shared("bfcl_official", "dev.jsonl.gz")
    data = BfclData(shared("bfcl"))
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [(r, *data.lookup(r["id"])[1:]) for r in rows]


def test_agrees_with_every_official_verdict_and_error_type(dev):
    """All 21,263 outputs, prompting and function-calling model (about a second each)."""
    assert len(dev) == 21263
    wrong, wrong_fc, wrong_type = [], [], []
    for r, functions, truth in dev:
        v = check_calls(r["calls"], functions, truth, mode="bfcl", category=r["category"])
        fc = check_calls(r["calls"], functions, truth, mode="bfcl", category=r["category"], fc=True)
        if v.ok != r["official_valid"]:
            wrong.append(r["uid"])
        if fc.ok != r["official_valid_fc"]:
            wrong_fc.append(r["uid"])
        if v.details["bfcl_error_type"] != r["official_error_type"]:
            wrong_type.append((r["uid"], v.details["bfcl_error_type"], r["official_error_type"]))
        assert v.ok == (v.verdict == "correct") and (not v.ok) == bool(v.defects)
    assert wrong == [] and wrong_fc == [] and wrong_type == []


def test_java_and_javascript_source_strings_and_plain_json(dev):
    """Both encodings of the Java/JS categories: BFCL decodes source text and rejects JSON values."""
    seen = set()
    for r, functions, truth in dev:
        if r["category"] in ("simple_java", "simple_javascript") and r["mutation"] in ("gold", "gold_native"):
            v = check_bfcl(r["calls"], functions, truth, category=r["category"])
            assert v.ok == r["official_valid"], r["uid"]
            assert v.details["language"] == ("java" if r["category"] == "simple_java" else "javascript")
            seen.add((r["encoding"], v.ok))
            if not v.ok and r["encoding"] == "json":
                assert v.details["bfcl_error_type"] in ("type_error:java", "type_error:js")
    assert {("src", True), ("json", True), ("json", False)} <= seen


def test_verdict_names_map_bfcl_errors(dev):
    kinds = {}
    for r, functions, truth in dev:
        v = check_bfcl(r["calls"], functions, truth, category=r["category"])
        kinds.setdefault(v.details["bfcl_error_type"], set()).add(v.verdict)
    assert kinds["simple_function_checker:missing_required"] == {"missing_required"}
    assert kinds["type_error:simple"] == {"type_error"}
    assert kinds["value_error:string"] == {"wrong_call"}
    # an unknown name is a hallucinated tool, another real function a wrong call
    assert kinds["simple_function_checker:wrong_func_name"] == {"hallucinated_tool", "wrong_call"}
    assert kinds["simple_function_checker:unexpected_param"] == {"hallucinated_param", "wrong_call"}


def test_category_and_language_are_inferred_or_rejected(dev):
    r, functions, truth = next(x for x in dev if x[0]["uid"] == "simple_java_0::gold")
    assert check_bfcl(r["calls"], functions, truth, question_id=r["id"]).details["language"] == "java"
    assert check_bfcl(r["calls"], functions, truth).details["category"] == "simple"
    with pytest.raises(BfclInputError, match="unknown BFCL category 'irrelevance'"):
        check_bfcl(r["calls"], functions, truth, category="irrelevance")
    with pytest.raises(BfclInputError, match="unknown language 'rust'"):
        check_bfcl(r["calls"], functions, truth, category="simple_java", language="rust")
    with pytest.raises(ValueError, match="unknown mode"):
        check_calls(r["calls"], functions, truth, mode="loose")


def test_malformed_calls_are_unparsable_and_name_the_call(dev):
    r, functions, truth = dev[0]
    for calls, where in (([{"f": {}}, 3], "calls[1]"), ("[", "calls"), ([{"name": "f", "arguments": "{x"}],
                                                                         "calls[0].arguments")):
        v = check_bfcl(calls, functions, truth, category=r["category"])
        assert v.verdict == "unparsable" and v.details["bfcl_error_type"] == "ast_decoder:decoder_wrong_output_format"
        assert v.defects[0].message.startswith(where)
    # OpenAI-shaped calls are read as BFCL's decoded form
    assert read_calls([{"type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}]) == [("f", {"a": 1})]


def test_docs_bfcl_cannot_read_raise_instead_of_guessing(dev):
    r, functions, truth = dev[0]
    (name, params), = r["calls"][0].items()
    broken = json.loads(json.dumps(functions))
    broken[0]["parameters"]["properties"][next(iter(params))]["type"] = "number"  # JSON Schema, not BFCL
    with pytest.raises(BfclInputError, match="not a BFCL python type"):
        check_bfcl(r["calls"], broken, truth, category=r["category"])
    with pytest.raises(BfclInputError, match="no BFCL possible answer"):
        BfclData(shared("bfcl")).lookup("simple_python_999999")


def test_reference_quirks_are_reproduced_on_real_questions():
    """docs/checker.md, "Where we believe the reference is wrong": BFCL mode says what bfcl-eval says."""
    data = BfclData(shared("bfcl"))
    cat, functions, truth = data.lookup("simple_java_86")
    runs = lambda argv: check_bfcl([{"argumenttypes001.runThis": {"argv": argv, "out": "debugOutput"}}],  # noqa: E731
                                   functions, truth, category=cat)
    assert not runs('new String[]{"-v", "--no-strict"}').ok      # valid Java: the quotes are kept
    assert runs("new String[]{-v, --no-strict}").ok              # not Java: passes
    cat, functions, truth = data.lookup("simple_javascript_20")
    call = {"buttonAddClickHandler": {"element": "myButton", "callback": "handleButtonClick",
                                      "options": "{stopPropagation: 'true'}"}}
    assert check_bfcl([call], functions, truth, category=cat).ok  # the string 'true' is read as true
    from checker.bfcl import javascript

    assert javascript.decode("{a: 1, b: {c: 2}, d: 3}", "dict") == {"a": 1, "b": "{c: 2"}  # cut at the first }
    with pytest.raises(ValueError):
        javascript.decode("5n\n", "Bigint")  # bfcl-eval raises here; check_bfcl reports it instead


def test_a_value_the_reference_raises_on_is_an_invalid_verdict():
    """bfcl-eval raises on a JavaScript Bigint written with a trailing newline ("5n\\n" matches its
    pattern, then int("5n") fails); BFCL mode reports it instead of stopping the run."""
    cat, functions, truth = BfclData(shared("bfcl")).lookup("simple_javascript_17")
    docs = json.loads(json.dumps(functions))
    docs[0]["parameters"]["properties"]["priorityLevel"]["type"] = "Bigint"
    call = {"generateNotificationHandler": {"app": "app", "priorityLevel": "5n\n", "messagingService": "messagingSvc",
                                            "notificationType": "2"}}
    v = check_bfcl([call], docs, truth, category=cat)
    assert not v.ok and v.details["bfcl_error_type"] == "toolsift:reference_crash" and v.verdict == "type_error"


@pytest.mark.parametrize("functions", [None, [], [None, 3, "x"], [{"name": 5}], [{"name": "f", "parameters": "oops"}],
                                       [{"name": "f", "parameters": {"properties": {"a": "oops"}, "required": []}}],
                                       [{"name": "f", "parameters": {"properties": {"a": {"type": "array"}}}}]])
@pytest.mark.parametrize("truth", [None, [], "x", [{"f": "oops"}], [{"f": {"a": "not a list"}}], [{"a": {}, "b": {}}],
                                   [{"f": {"a": [[1], None, 3]}}], [{"f": {"a": [{"k": 1}]}}]])
@pytest.mark.parametrize("calls", [[{"f": {"a": [1]}}], [{"f": {"a": {"k": [1]}}}], [{"f": {"a": None}}], []])
def test_unreadable_docs_or_answers_raise_bfcl_input_error_only(functions, truth, calls):
    from checker import Verdict

    for category in ("simple", "multiple", "parallel"):
        try:
            assert isinstance(check_bfcl(calls, functions, truth, category=category), Verdict)
        except BfclInputError:
            pass
