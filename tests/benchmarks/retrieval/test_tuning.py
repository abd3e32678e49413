"""`toolsift bench tuning --quick`: one cross-fitting fold on TorchHub, trained for real (a
fresh cache, so nothing is reused), and the training split loader it uses in full mode."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import shared


def test_quick_tuning_benchmark_writes_rows_and_report(tmp_path, monkeypatch):
    shared("gorilla", "apibench", "torchhub_eval.json")
    monkeypatch.setenv("TOOLSIFT_CACHE", str(tmp_path / "cache"))
    from router.cli import app

    res = CliRunner().invoke(app, ["bench", "tuning", "--quick", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    (row,) = data["rows"]
    assert row["hub"] == "torchhub" and row["queries"] == 40
    (fold,) = row["folds"]
    assert fold["trained_on"] + fold["weights_chosen_on"] == 64 and 0 < fold["weights_chosen_on"] < 25
    assert fold["reused"] is False and len(fold["weights"]) == 2 and sum(fold["weights"]) == pytest.approx(1)
    assert (tmp_path / "cache" / "tuned").is_dir()
    for key in ("bm25", "dense", "hybrid", "bm25_tuned", "dense_tuned", "hybrid_tuned"):
        assert 0 <= row[key] <= 1
    assert row["bm25"] == row["bm25_tuned"]  # BM25 does not read the encoder
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"| torchhub | 40 | {fold['trained_on']} | {fold['weights_chosen_on']} |" in report
    assert "toolsift bench tuning --quick" in report


def test_torchhub_training_split_is_labelled_and_disjoint_from_eval():
    shared("gorilla", "apibench", "torchhub_train.json")
    from benchmarks.data.datasets import apibench_training, load_dataset

    train = apibench_training("torchhub")
    ds = load_dataset("apibench_torchhub")
    ids = {r.id for r in ds.records}
    assert len(train) == 837 and all(len(q.relevant) == 1 and q.relevant <= ids for q in train)
    assert len({next(iter(q.relevant)) for q in train}) == len(ids)  # every API has training questions
    assert not {q.text for q in train} & {q.text for q in ds.queries}
