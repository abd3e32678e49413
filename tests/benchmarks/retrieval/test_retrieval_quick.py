"""A quick retrieval benchmark run on a tiny real sample writes the documented outputs."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import shared

LEXICAL = ["rank_bm25", "bm25", "bm25_uniform", "oracle"]


@pytest.fixture(scope="module")
def lexical_run(tmp_path_factory):
    """rank-bm25 and the router's BM25 rows on StableToolBench (quick: 100 of its 2,231 tools) and
    RestBench Spotify (10 queries each)."""
    shared("stabletoolbench_solvable", "test_instruction", "G1_instruction.json")
    shared("restbench", "specs", "spotify_oas.json")
    from benchmarks.retrieval import comparison as retrieval

    out = tmp_path_factory.mktemp("retrieval")
    retrieval.run(["stabletoolbench_G1_instruction", "restbench_spotify"], LEXICAL, out, quick=True,
                  max_queries=10, command="pytest lexical_run")
    return out


def test_results_json_structure(lexical_run):
    res = json.loads((lexical_run / "results.json").read_text())
    assert res["command"] == "pytest lexical_run"
    assert res["versions"]["ranx"] and res["versions"]["rank-bm25"]
    assert list(res["methods"]) == LEXICAL
    stb = res["datasets"]["stabletoolbench_G1_instruction"]
    assert stb["n_records"] == 100 and stb["n_records_total"] == 2231  # quick: sampled corpus
    assert stb["n_queries"] == 10 and stb["n_queries_total"] == 163
    for name, d in res["datasets"].items():
        for m in LEXICAL:
            st = d["methods"][m]
            assert set(st["metrics"]) == {"recall@1", "recall@5", "recall@10", "ndcg@5", "ndcg@10", "mrr"}
            assert all(0.0 <= v <= 1.0 for v in st["metrics"].values()), (name, m)
            curve = st["recall_curve"]
            assert len(curve) == res["k_max"] and curve == sorted(curve)  # Recall@k never falls with k
            assert st["latency_ms"]["p50"] <= st["latency_ms"]["p95"]
            assert st["tokens"]["all_tools"] > st["tokens"]["top5_mean"] > 0
        assert d["methods"]["oracle"]["metrics"]["recall@10"] == 1.0
    # the baseline finds something, and the router's stemmed, field-weighted BM25 is at least in its league
    assert stb["methods"]["rank_bm25"]["metrics"]["recall@10"] > 0
    assert stb["methods"]["bm25"]["metrics"]["recall@10"] > 0
    assert res["summary"]["bm25"]["mean_stabletoolbench"]["ndcg@5"] == stb["methods"]["bm25"]["metrics"]["ndcg@5"]


def test_report_and_plots(lexical_run):
    report = (lexical_run / "report.md").read_text()
    assert "Command: `pytest lexical_run`" in report
    assert "## Headline: nDCG@5 / Recall@5" in report
    assert "## stabletoolbench_G1_instruction" in report and "## restbench_spotify" in report
    assert "| method | R@1 | R@5 | R@10 | nDCG@5 | nDCG@10 | MRR |" in report
    assert "**" in report  # winners in bold
    assert "GET /track/{id}" in report  # the dropped bad label is reported
    for png in ("recall_at_k.png", "latency_quality.png"):
        assert (lexical_run / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_router_rows_and_significance(tmp_path):
    """Dense and hybrid rows on a small real corpus (40 Spotify operations, embeddings cached)."""
    shared("restbench", "specs", "spotify_oas.json")
    from benchmarks.retrieval import comparison as retrieval

    res = retrieval.run(["restbench_spotify"], ["bm25", "dense", "hybrid_wsum", "hybrid_rrf"], tmp_path,
                        max_queries=12, plots=False)
    d = res["datasets"]["restbench_spotify"]
    assert d["methods"]["dense"]["metrics"]["recall@10"] > 0
    pairs = d["significance"]["pairs"]
    assert set(pairs) == {"hybrid_wsum vs bm25", "hybrid_wsum vs dense", "hybrid_rrf vs bm25", "hybrid_rrf vs dense"}
    assert all(0.0 <= v["p"] <= 1.0 for pair in pairs.values() for v in pair.values())
    assert "Significance" in (tmp_path / "report.md").read_text()


def test_cli_bench_retrieval_and_errors(tmp_path):
    shared("restbench", "specs", "spotify_oas.json")
    from router.cli import app

    runner = CliRunner()
    out = tmp_path / "r"
    result = runner.invoke(app, ["bench", "retrieval", "--datasets", "restbench_spotify", "--methods",
                                 "rank_bm25,oracle", "--max-queries", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "results.json").exists() and (out / "report.md").exists()

    from benchmarks import cli
    from benchmarks.data.datasets import DatasetError
    from benchmarks.retrieval.methods import MethodError

    with pytest.raises(MethodError, match="unknown method 'nope'"):
        runner.invoke(app, ["bench", "retrieval", "--methods", "nope", "--out", str(tmp_path / "x")],
                      catch_exceptions=False)
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        runner.invoke(app, ["bench", "retrieval", "--datasets", "nope", "--out", str(tmp_path / "x")],
                      catch_exceptions=False)
    cli.DELEGATED["missing"] = ("benchmarks.no_such_benchmark", "test")
    try:
        with pytest.raises(cli.BenchmarkError, match="module benchmarks.no_such_benchmark is missing"):
            cli.run_delegated("missing", tmp_path, True)
    finally:
        del cli.DELEGATED["missing"]


def test_scale_replicas_are_distinct_and_deterministic():
    """The synthetic scale catalogs: distinct ids and names, same tools, varied but stable text."""
    import numpy as np

    from apidb.record import ApiRecord
    from benchmarks.retrieval import scale

    base = [ApiRecord(id=f"ns/t{i}", namespace="ns", name=f"tool_{i}",
                      description=f"Finds things number {i}. Sorts them. Returns a list.") for i in range(7)]
    recs, origin = scale.replicate(base, 30)
    assert len(recs) == 30 and recs[:7] == base
    assert len({r.id for r in recs}) == 30 and len({r.name for r in recs}) == 30
    assert origin[7] == 0 and recs[7].name == "tool_0_v1" and recs[7].namespace == "ns_r1"
    assert sorted(recs[7].description.split(". ")) != [] and set(recs[7].description.replace(".", "").split()) \
        == set(base[0].description.replace(".", "").split())
    assert scale.replicate(base, 30)[0] == recs  # deterministic
    vecs = np.eye(7, 8, dtype=np.float32)
    out = scale.replica_vectors(vecs, origin, 7)
    assert np.allclose(out[:7], vecs) and np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert 0.95 < float(out[7] @ vecs[0]) < 1.0  # a replica sits close to its base tool


def test_single_and_multi_tool_requests_are_reported_apart(lexical_run):
    """Issue 38: requests with several gold tools get nDCG@5 and all gold @5/@10 of their own."""
    from benchmarks.data.datasets import load_dataset
    from benchmarks.retrieval.comparison import sample

    res = json.loads((lexical_run / "results.json").read_text())
    report = (lexical_run / "report.md").read_text()
    assert "## Multi-tool requests: all gold @10 / nDCG@5" in report
    kinds_seen = set()
    for name, d in res["datasets"].items():
        queries = sample(load_dataset(name).queries, 10)
        n_multi = sum(len(q.relevant) > 1 for q in queries)
        kinds = {"multi-tool": n_multi, "single-tool": len(queries) - n_multi}
        kinds = {k: n for k, n in kinds.items() if n}
        kinds_seen |= set(kinds)
        for m in LEXICAL:
            groups = d["methods"][m]["by_gold_count"]
            assert {g: v["queries"] for g, v in groups.items()} == kinds, (name, m)
            for g in groups.values():
                assert 0 <= g["all_gold@5"] <= g["all_gold@10"] <= 1
        assert d["methods"]["oracle"]["by_gold_count"]["multi-tool"]["all_gold@5"] == 1.0  # the gold is complete
        assert f"{name} ({n_multi} multi-tool q)" in report
    assert kinds_seen == {"single-tool", "multi-tool"}  # the sample holds both kinds
