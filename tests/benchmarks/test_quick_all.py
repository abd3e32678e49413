"""The CI check of the benchmark pipeline: `--quick` retrieval over every dataset, plus the
quick Gorilla audit and BFCL check commands. Each dataset whose files are absent is skipped,
saying which file."""
from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from benchmarks.data import datasets as D
from benchmarks.retrieval.comparison import QUICK_RECORDS
from tests.conftest import shared

QUERIES = 10  # per dataset: enough for the t-tests, small enough for every CI run (~1 min warm)


def _require(name: str) -> None:
    for rel in D.required_files(name):
        shared(*rel.split("/"))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One quick run (sampled corpora, every method) over every dataset whose files are present."""
    present = [n for n in D.DATASETS if D.available(n)]
    if not present:
        _require(D.DATASETS[0])  # skips, naming the missing file
    from benchmarks.retrieval import comparison as retrieval

    out = tmp_path_factory.mktemp("quick_all")
    res = retrieval.run(present, None, out, quick=True, max_queries=QUERIES, command="pytest quick_all")
    return out, res


def test_results_json_is_complete(quick_run):
    out, res = quick_run
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert saved["quick"] is True and saved["sample"]["max_records"] == QUICK_RECORDS
    assert "seeded hash" in saved["sample"]["records"] and saved["datasets"].keys() == res["datasets"].keys()
    assert set(saved["summary"]) == set(saved["methods"])


@pytest.mark.parametrize("name", D.DATASETS)
def test_every_method_row_of_every_dataset(request, name):
    _require(name)  # before the run, so a missing dataset is skipped naming its own file
    out, _ = request.getfixturevalue("quick_run")
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    d = res["datasets"][name]
    assert d["n_queries"] == min(QUERIES, d["n_queries_total"])
    assert d["n_records"] <= d["n_records_total"]
    sample = d["corpus_sample"]
    if sample["records"] == "sampled":  # gold of the sampled queries + seeded filler, QUICK_RECORDS in all
        assert d["n_records"] == max(QUICK_RECORDS, sample["gold_records"]) < d["n_records_total"]
    assert list(d["methods"]) == list(res["methods"])  # every method row, in order
    for m, st in d["methods"].items():
        values = list(st["metrics"].values()) + list(st.get("domain_metrics", {}).values())
        assert len(st["metrics"]) == 6 and all(0.0 <= v <= 1.0 for v in values), (name, m, st["metrics"])
        assert st["recall_curve"] == sorted(st["recall_curve"]), (name, m)
        assert st["latency_ms"]["p50"] <= st["latency_ms"]["p95"]
        assert st["tokens"]["all_tools"] >= st["tokens"]["top5_mean"] > 0
    assert d["methods"]["oracle"]["metrics"]["mrr"] == 1.0  # every gold record is in the sampled corpus
    pairs = d["significance"]["pairs"]
    # p is NaN when the two rows score every sampled query the same (no variance to test)
    assert pairs and all(math.isnan(v["p"]) or 0.0 <= v["p"] <= 1.0 for pair in pairs.values() for v in pair.values())
    if name.startswith("apibench_"):
        assert "domain_metrics" in d["methods"]["bm25"]


def test_report_has_one_table_per_dataset_and_the_plots(quick_run):
    out, res = quick_run
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Quick sample (a pipeline check" in report
    for name in res["datasets"]:
        assert f"\n## {name}\n" in report
    assert report.count("| method | R@1 | R@5 | R@10 | nDCG@5 | nDCG@10 | MRR |") == len(res["datasets"])
    for png in ("recall_at_k.png", "latency_quality.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quick_corpus_keeps_gold_and_is_deterministic():
    _require("apibench_huggingface")
    from benchmarks.retrieval.comparison import quick_corpus, sample

    ds = D.load_dataset("apibench_huggingface")
    queries = sample(ds.queries, 12)
    small, info = quick_corpus(ds, queries, 40)
    again, _ = quick_corpus(D.load_dataset("apibench_huggingface"), queries, 40)
    ids = [r.id for r in small.records]
    assert ids == [r.id for r in again.records] and len(ids) == 40 == len(set(ids))
    assert info == {"records_total": len(ds.records), "gold_records": len(set().union(*(q.relevant for q in queries))),
                    "records": "sampled"}
    order = {r.id: i for i, r in enumerate(ds.records)}
    assert [order[i] for i in ids] == sorted(order[i] for i in ids)  # the corpus's own order
    for q in small.queries:
        assert q.relevant <= set(ids) and q.meta["domain_relevant"] <= set(ids)
    assert "quick sample: 40 of 895 records" in small.notes[-1]
    whole, info = quick_corpus(ds, queries, 10_000)
    assert whole.records == ds.records and info["records"] == "all"


def test_cli_quick_gorilla_and_bfcl(tmp_path):
    """`toolsift bench gorilla|bfcl --quick`: a few seconds each; the full runs are in benchmarks/results."""
    shared("gorilla", "eval-data", "responses")
    shared("bfcl", "possible_answer")
    from router.cli import app

    runner = CliRunner()
    for name in ("gorilla", "bfcl"):
        result = runner.invoke(app, ["bench", name, "--quick", "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        assert (tmp_path / name / "report.md").read_text(encoding="utf-8").startswith("# ")
    gor = json.loads((tmp_path / "gorilla" / "results.json").read_text(encoding="utf-8"))
    assert gor["quick"] and len(gor["files"]) == 24  # 3 hubs x 8 released response files
    for f in gor["files"]:
        for mode in ("gorilla", "strict"):
            assert sum(f[mode]["counts"].values()) == f["n"] > 0
            assert 0.0 <= f[mode]["accuracy"] <= 100.0 and 0.0 <= f[mode]["hallucination"] <= 100.0
    bf = json.loads((tmp_path / "bfcl" / "results.json").read_text(encoding="utf-8"))
    assert bf["quick"] and bf["entries"] == bf["correct"] + bf["not_correct"] > 0
    assert len(bf["exceptions"]) == bf["not_correct"]  # every answer not `correct` is listed with its reason
