"""A user's own catalog and labelled queries load as a benchmark dataset, and bad labels are named."""
from __future__ import annotations

import json

import pytest

from benchmarks.data.custom import load_custom
from benchmarks.data.datasets import DatasetError
from tests.conftest import shared


@pytest.fixture(scope="module")
def torchhub(tmp_path_factory):
    """The APIBench TorchHub dataset written out as a user would: a catalog file and a JSONL of
    labelled questions (the first 40 real questions, gold given as record ids)."""
    shared("gorilla", "apibench", "torchhub_eval.json")
    from apidb import Catalog
    from benchmarks.data.datasets import load_dataset

    ds = load_dataset("apibench_torchhub")
    tmp = tmp_path_factory.mktemp("custom")
    with Catalog(tmp / "hub.db") as cat:
        cat.sync(ds.records)
    lines = [{"id": q.id, "query": q.text, "relevant": sorted(q.relevant)} for q in ds.queries[:40]]
    (tmp / "labelled.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return ds, tmp


def test_round_trip_of_a_real_dataset(torchhub):
    ds, tmp = torchhub
    mine = load_custom(tmp / "hub.db", tmp / "labelled.jsonl")
    assert mine.name == "custom:labelled" and len(mine.records) == len(ds.records) == 94
    assert {r.id for r in mine.records} == {r.id for r in ds.records}
    assert [(q.id, q.text, q.relevant) for q in mine.queries] == [(q.id, q.text, q.relevant) for q in ds.queries[:40]]


def test_names_messages_and_single_labels(torchhub, tmp_path):
    ds, tmp = torchhub
    rec = next(r for r in ds.records if sum(x.name == r.name for x in ds.records) == 1)
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "a", "messages": [{"role": "user", "content": "classify bird photos"},
                                                      {"role": "assistant", "content": "which model size?"},
                                                      {"role": "user", "content": "a small one"}],
                             "relevant": rec.name}) + "\n\n", encoding="utf-8")
    (only,) = load_custom(tmp / "hub.db", q).queries
    assert only.relevant == {rec.id} and "small" in only.text and "bird" in only.text


@pytest.mark.parametrize("line, needle", [
    ('{"id": "1", "query": "x", "relevant": ["torchhub/nope"]}', "line 1: field 'relevant': 'torchhub/nope' is not"),
    ('{"id": "1", "query": "x", "relevant": []}', "line 1: field 'relevant' must be"),
    ('{"id": "1", "query": "  ", "relevant": ["x"]}', "line 1: needs a non-empty 'query'"),
    ('{"id": "1", "query": "x", "relevant": "MEAL_V2"}', "'MEAL_V2' names 8 tools; use a record id"),
    ('{"id": "1", "query": "x"', "line 1: not JSON"),
    ('["x"]', "line 1: expected an object, got list"),
])
def test_bad_labels_are_one_line_errors(torchhub, tmp_path, line, needle):
    _, tmp = torchhub
    q = tmp_path / "q.jsonl"
    q.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as exc:
        load_custom(tmp / "hub.db", q)
    assert needle in str(exc.value) and str(q) in str(exc.value) and "\n" not in str(exc.value)


def test_missing_catalog_or_queries(torchhub, tmp_path):
    _, tmp = torchhub
    with pytest.raises(DatasetError, match="no such catalog"):
        load_custom(tmp_path / "none.db", tmp / "labelled.jsonl")
    with pytest.raises(DatasetError, match="cannot read the queries file"):
        load_custom(tmp / "hub.db", tmp_path / "none.jsonl")


def test_scores_equal_the_built_in_dataset_on_the_same_queries(torchhub):
    """The same catalog and questions through the custom path score exactly as the built-in loader's."""
    from benchmarks.retrieval.comparison import _Builds, evaluate_dataset, resolve_methods

    from dataclasses import replace

    ds, tmp = torchhub
    # a catalog lists its records by id, and ties in score keep that order
    ds = replace(ds, queries=ds.queries[:40], records=sorted(ds.records, key=lambda r: r.id))
    mine = load_custom(tmp / "hub.db", tmp / "labelled.jsonl")
    specs, _ = resolve_methods(["rank_bm25", "bm25"])
    a = evaluate_dataset(ds, specs, None, _Builds(False))
    b = evaluate_dataset(mine, specs, None, _Builds(False))
    for m in ("rank_bm25", "bm25"):
        assert a["methods"][m]["metrics"] == b["methods"][m]["metrics"]
        assert 0 < b["methods"][m]["metrics"]["recall@10"] <= 1


def test_cli_runs_your_catalog_and_keeps_the_public_report(torchhub, tmp_path):
    from typer.testing import CliRunner

    from router.cli import app

    _, tmp = torchhub
    out = tmp_path / "mine"
    r = CliRunner().invoke(app, ["bench", "retrieval", "--db", str(tmp / "hub.db"), "--queries",
                                 str(tmp / "labelled.jsonl"), "--methods", "rank_bm25,bm25", "--out", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert list(res["datasets"]) == ["custom:labelled"] and res["datasets"]["custom:labelled"]["n_queries"] == 40
    assert "custom:labelled" in (out / "report.md").read_text()
    with pytest.raises(DatasetError, match="--db and --queries go together"):
        CliRunner().invoke(app, ["bench", "retrieval", "--db", str(tmp / "hub.db")], catch_exceptions=False)


def test_your_catalog_is_scored_with_the_model_you_name(torchhub, tmp_path):
    """The public figures use the untuned MiniLM (the general encoder trained on those queries);
    your own queries are scored with what `toolsift route` uses, the shipped general encoder
    (issue 39), and `--model` compares it with the untuned one."""
    from tests.support.cli import toolsift

    _, tmp = torchhub
    got = {}
    for model in (None, "all-MiniLM-L6-v2"):
        out = tmp_path / (model or "base")
        args = ["bench", "retrieval", "--db", tmp / "hub.db", "--queries", tmp / "labelled.jsonl",
                "--methods", "dense", "--out", out] + (["--model", model] if model else [])
        done = toolsift(*args)
        assert done.returncode == 0, done.stderr[-2000:]
        res = json.loads((out / "results.json").read_text())
        assert res["model"] == (model or "toolsift-general-minilm")
        assert f"`{res['model']}`" in (out / "report.md").read_text()
        got[res["model"]] = res["datasets"]["custom:labelled"]["methods"]["dense"]["metrics"]["mrr"]
    assert got["all-MiniLM-L6-v2"] != got["toolsift-general-minilm"]  # another encoder ranked them
