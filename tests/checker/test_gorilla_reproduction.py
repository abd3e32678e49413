"""Gorilla-compatible mode reproduces the upstream APIBench scorer on all 24 released files."""
from __future__ import annotations

import json

import pytest

from benchmarks.checker.gorilla_audit import HUBS, TOLERANCE, UPSTREAM, VARIANTS
from checker.audit import audit, read_gold
from checker.code import CodeIndex
from checker.gorilla_compat import GorillaDB, _treesitter
from tests.checker.conftest import shared

# The scanner backend (no tree-sitter installed) approximates tree-sitter's error
# recovery; its largest gap to upstream, measured on these files, is 2.3 points.
SCANNER_TOLERANCE = 2.5


def _figures(hub, records, backend):
    index = CodeIndex(records, hub)
    index._gorilla[("hf" if hub == "huggingface" else "tf" if hub == "tensorflowhub" else "th")] = \
        GorillaDB(index.code_records, {"huggingface": "hf", "tensorflowhub": "tf", "torchhub": "th"}[hub], backend)
    gold = read_gold(shared("gorilla", "apibench", HUBS[hub][1]))
    out = {}
    for variant in VARIANTS:
        path = shared("gorilla", "eval-data", "responses", hub, f"response_{hub}_Gorilla_{variant}.jsonl")
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        res = audit(rows, index, gold, "gorilla")
        out[variant] = (100 * res.accuracy, 100 * res.hallucination)
    return out


@pytest.mark.parametrize("hub", list(HUBS))
def test_gorilla_mode_within_one_point_of_upstream(hub, hub_records):
    if _treesitter() is None:
        pytest.skip("tree_sitter + tree_sitter_python not installed: exact reproduction needs the "
                    "parser upstream used (the scanner backend is tested below)")
    got = _figures(hub, hub_records[hub], "tree-sitter")
    for variant, (acc, hal) in got.items():
        up_acc, up_hal = UPSTREAM[hub][variant]
        assert abs(acc - up_acc) <= TOLERANCE, (hub, variant, "accuracy", acc, up_acc)
        assert abs(hal - up_hal) <= TOLERANCE, (hub, variant, "hallucination", hal, up_hal)


@pytest.mark.parametrize("hub", ["torchhub"])
def test_scanner_backend_close_to_upstream(hub, hub_records):
    got = _figures(hub, hub_records[hub], "scanner")
    for variant, (acc, hal) in got.items():
        up_acc, up_hal = UPSTREAM[hub][variant]
        assert abs(acc - up_acc) <= SCANNER_TOLERANCE and abs(hal - up_hal) <= SCANNER_TOLERANCE, (variant, acc, hal)


def test_gorilla_verdicts_follow_the_upstream_rules(hub_records):
    index = CodeIndex(hub_records["torchhub"], "torchhub")
    gold = {"domain": "Classification"}
    # no 'api_call' at all: the TorchHub scorer skips the answer (counted as error)
    assert index.check_gorilla("{'domain': 'x', 'code': 'import cv2'}", gold).verdict == "unparsable"
    hit = index.check_gorilla("{'api_call': \"model = torch.hub.load('pytorch/vision', 'resnet50')\", "
                              "'api_provider': 'PyTorch'}", gold)
    assert hit.verdict == "correct" and hit.details["domain"] == "Classification"
    miss = index.check_gorilla("{'api_call': \"model = torch.hub.load('nobody/nothing', 'x')\", "
                               "'api_provider': 'PyTorch'}", gold)
    assert miss.verdict == "hallucinated"
