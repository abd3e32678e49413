"""`toolsift bench general-encoder` (issue 18): MiniLM tuned on the other families, scored on the
one left out, through the installed console script on the real shared data."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.datasets import available
from benchmarks.general_encoder import FAMILIES

_SCRIPT = Path(sys.executable).parent / "toolsift"


def _toolsift(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(_SCRIPT), *args], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.mark.skipif(not all(available(n) for names in FAMILIES.values() for n in names),
                    reason="shared benchmark data not found (set TOOLSIFT_SHARED_DATA)")
def test_quick_run_trains_without_the_scored_family_and_scores_it(tmp_path):
    done = _toolsift("bench", "general-encoder", "--quick", "--leave-out", "restbench", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert res["left_out"] == "restbench" and res["scored"] == ["restbench_tmdb"]
    assert not any(name.startswith("restbench") for name in res["trained_on"])  # nothing of it trained on
    assert set(res["trained_on"]) == {n for f, names in FAMILIES.items() if f != "restbench" for n in names}
    assert res["pairs"] == sum(res["trained_on"].values()) > 0
    for row in res["rows"]:
        for side in ("base", "tuned"):
            assert all(0.0 <= v <= 1.0 for v in row[side].values())
    hybrid = next(r for r in res["rows"] if r["method"] == "hybrid")
    assert hybrid["base"]["recall@10"] > 0.3, hybrid  # real RestBench queries are routed, not noise
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Nothing of restbench is seen by training" in report and "restbench_tmdb" in report
    assert "restbench_tmdb: hybrid nDCG@5" in done.stdout


def test_an_unknown_family_is_one_line_and_exit_2(tmp_path):
    done = _toolsift("bench", "general-encoder", "--leave-out", "nope", "--out", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: --leave-out: unknown family 'nope'")
    assert "Traceback" not in done.stderr
