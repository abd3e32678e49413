"""Session fixtures for the checker tests: real Gorilla catalogs (file order) and gold answers."""
from __future__ import annotations

import json

import pytest

from tests.conftest import BUNDLED_GORILLA, shared

HUBS = {"torchhub": "torchhub_eval.json", "tensorflowhub": "tensorflow_eval.json",
        "huggingface": "huggingface_eval.json"}


@pytest.fixture(scope="session")
def hub_records():
    """namespace -> records of the bundled Gorilla API database, in the file's order."""
    from apidb.loaders import load

    return {ns: load(BUNDLED_GORILLA / f"{ns}_api.jsonl").records for ns in HUBS}


@pytest.fixture(scope="session")
def hub_index(hub_records):
    from checker.code import CodeIndex

    return {ns: CodeIndex(recs, ns) for ns, recs in hub_records.items()}


def gold_rows(hub: str) -> list[dict]:
    path = shared("gorilla", "apibench", HUBS[hub])
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def bfcl_pairs():
    """(category file, question entry, possible answer) for every BFCL entry with a possible answer."""
    root = shared("bfcl")
    for answers in sorted((root / "possible_answer").glob("*.json")):
        questions = {}
        for line in (root / answers.name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                questions[q["id"]] = q
        for line in answers.read_text(encoding="utf-8").splitlines():
            if line.strip():
                a = json.loads(line)
                yield answers.name, questions[a["id"]], a
