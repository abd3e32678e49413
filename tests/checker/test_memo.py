"""Compiled docs are reused only while the same docs come back (a list that changed is compiled again)."""
from __future__ import annotations

import json

import pytest

from checker import check_calls
from checker.bfcl import BfclInputError
from tests.checker.conftest import shared


def _docs(qid):
    for line in shared("bfcl", "BFCL_v4_multiple.json").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["id"] == qid:
            return q["function"]
    raise AssertionError(qid)


def test_a_list_that_gains_or_swaps_a_doc_is_compiled_again():
    docs = _docs("multiple_0")
    name = docs[1]["name"]
    offered = [docs[0]]
    assert check_calls([{name: {}}], offered).verdict == "hallucinated_tool"
    offered.append(docs[1])  # as the router does when it restores a tool the model called
    assert check_calls([{name: {}}], offered).verdict != "hallucinated_tool"
    offered[1] = docs[0]
    assert check_calls([{name: {}}], offered).verdict == "hallucinated_tool"


def test_bfcl_mode_follows_the_list_too():
    docs = _docs("multiple_0")
    name, truth = docs[1]["name"], [{docs[1]["name"]: {}}]
    offered = [docs[0]]
    with pytest.raises(BfclInputError, match="no function doc defines"):
        check_calls([{name: {}}], offered, truth, mode="bfcl", category="multiple")
    offered.append(docs[1])
    v = check_calls([{name: {}}], offered, truth, mode="bfcl", category="multiple")
    assert v.details["bfcl_error_type"] != "simple_function_checker:wrong_func_name"
