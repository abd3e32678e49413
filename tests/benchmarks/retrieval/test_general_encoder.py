"""`toolsift bench general-encoder` (issue 18): MiniLM tuned on the other families, scored on the
one left out, through the installed console script on the real shared data."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.data.datasets import available
from benchmarks.retrieval.general_encoder import FAMILIES

_SCRIPT = Path(sys.executable).parent / "toolsift"


def _toolsift(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(_SCRIPT), *args], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


_DATA = pytest.mark.skipif(not all(available(n) for names in FAMILIES.values() for n in names),
                           reason="shared benchmark data not found (set TOOLSIFT_SHARED_DATA)")


def _cache_without_trained_models(tmp_path: Path) -> Path:
    """A $TOOLSIFT_CACHE holding the user's embedding caches but no trained model, so the run trains."""
    from router.encoders.dense import default_cache_dir

    cache = tmp_path / "cache"
    cache.mkdir()
    real = default_cache_dir()
    for entry in real.iterdir() if real.is_dir() else ():
        if entry.name != "general":
            (cache / entry.name).symlink_to(entry)
    return cache


@_DATA
def test_quick_leave_one_family_out_trains_without_the_scored_family(tmp_path):
    cache, out = _cache_without_trained_models(tmp_path), tmp_path / "out"
    done = _toolsift("bench", "general-encoder", "--quick", "--leave-out", "restbench", "--out", str(out),
                     env={"TOOLSIFT_CACHE": str(cache)})
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert res["mode"] == "leave-one-family-out" and res["scored"] == ["restbench_tmdb"]
    (info,) = res["training"].values()
    assert info["trained_on"] and not any(name.startswith("restbench") for name in info["trained_on"])
    assert info["pairs"] == sum(info["trained_on"].values()) > 0
    for row in res["rows"]:
        for side in ("base", "tuned"):
            assert all(0.0 <= v <= 1.0 for v in row[side].values())
    hybrid = next(r for r in res["rows"] if r["method"] == "hybrid")
    assert hybrid["base"]["recall@10"] > 0.3, hybrid  # real RestBench queries are routed, not noise
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Nothing of restbench is seen by training" in report and "restbench_tmdb" in report
    assert "restbench_tmdb: hybrid nDCG@5" in done.stdout
    # stderr is a pipe here, as in a background run's log: no bar, but one line on what is training
    assert f"training on all but restbench: {info['pairs']:,} pairs, " in done.stderr, done.stderr[-2000:]


@_DATA
def test_quick_cross_fit_scores_each_half_with_the_model_that_did_not_train_on_it(tmp_path):
    from benchmarks.data.datasets import load_dataset
    from benchmarks.retrieval.general_encoder import QUICK_PER_DATASET, QUICK_SCORED, QUICK_TRAIN
    from benchmarks.retrieval.general_training import training_pairs
    from benchmarks.retrieval.targets import _half

    done = _toolsift("bench", "general-encoder", "--quick", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert res["mode"] == "cross-fitted" and set(res["training"]) == {"dev", "test"}
    assert res["training"]["dev"]["spec"] != res["training"]["test"]["spec"]
    trained_texts = {h: {q for q, _ in training_pairs(h, QUICK_PER_DATASET, only=QUICK_TRAIN)[1]}
                     for h in ("dev", "test")}
    for name in res["scored"]:
        queries = load_dataset(name).queries[:QUICK_SCORED]
        for q in queries:  # scored by the other half's model, whose training never saw it
            other = "test" if _half(q.id, name) == "dev" else "dev"
            assert q.text not in trained_texts[other], (name, q.id)
        row = next(r for r in res["rows"] if r["dataset"] == name and r["method"] == "hybrid")
        assert row["queries"] == len(queries) and set(row["scored_by"]) == {"dev", "test"}
        assert "model trained on test" in row["scored_by"]["dev"]
    assert "scored by the model trained on the `test` halves" in (tmp_path / "report.md").read_text(encoding="utf-8")


def test_an_unknown_family_is_one_line_and_exit_2(tmp_path):
    done = _toolsift("bench", "general-encoder", "--leave-out", "nope", "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: --leave-out: unknown family 'nope'")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("extra", [["--leave-out", "apibench"], ["--quick"]])
def test_build_refuses_options_it_would_ignore(extra):
    from router.encoders.general_encoder import DELTA_FILE

    before = DELTA_FILE.stat().st_mtime_ns
    # refused before any training starts (a build that went ahead would run for tens of minutes)
    done = subprocess.run([str(_SCRIPT), "bench", "general-encoder", "--build", *extra], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: --build trains the shipped encoder on every family and takes no {extra[0]}")
    assert DELTA_FILE.stat().st_mtime_ns == before


def test_help_states_the_pairs_per_dataset_the_recipe_uses():
    from benchmarks.retrieval.general_training import PER_DATASET

    # the help is what a user reads before a run of tens of minutes: it must not drift from the recipe
    done = subprocess.run([str(_SCRIPT), "bench", "general-encoder", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"(default {PER_DATASET}," in " ".join(done.stdout.split())  # the help wraps lines
