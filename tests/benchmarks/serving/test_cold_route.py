"""`toolsift bench cold-route --quick --build`, as a user runs it: the installed console script in
a subprocess, fresh `toolsift route` processes timed, and a whole `toolsift index` of a copy of the
catalog with nothing cached (issue 15's index-build figure)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.data import datasets as D
from tests.conftest import shared


def _script() -> list[str]:
    exe = Path(sys.executable).parent / "toolsift"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "router.cli"]


def test_quick_cold_route_with_a_whole_index_build(tmp_path):
    from benchmarks.retrieval.scale import QUICK_BASE

    for name in QUICK_BASE:
        for rel in D.required_files(name):
            shared(*rel.split("/"))
    out = tmp_path / "out"
    proc = subprocess.run([*_script(), "bench", "cold-route", "--quick", "--build", "--runs", "1",
                           "--work", str(tmp_path / "work"), "--out", str(out)],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "`toolsift index` nothing cached:" in proc.stdout
    res = json.loads((out / "results.json").read_text())
    build = res["index_build"]
    # every passage embedded: the copy had no index and the cache was empty but for the ONNX export
    assert build["records"] == res["size"] == 2000 and build["embedded"] == build["records"]
    # docs/s is records over the whole process's wall time (which the report rounds to 0.01 s)
    assert build["docs_per_s"] > 0 and abs(build["docs_per_s"] - build["records"] / build["wall_seconds"]) < 1
    assert build["cpu_seconds"] > 0
    assert abs(build["docs_per_cpu_s"] - build["records"] / build["cpu_seconds"]) < 1
    # the length of what was embedded, in the encoder's word pieces (MiniLM reads at most 256)
    tokens = build["passage_tokens"]
    assert tokens["passages"] == build["records"] and 3 < tokens["mean"] <= tokens["max"] <= 256
    assert f"passages of {tokens['mean']} tokens on average" in proc.stdout
    # the README's rows come from the run's output, never typed
    assert (f"README row: | index build of 2,000 tools, nothing cached (a fresh `toolsift index`) | "
            f"{build['wall_seconds']} s wall: {build['docs_per_s']} docs/s, {build['docs_per_cpu_s']} docs per CPU "
            "second") in proc.stdout
    assert "README row: | a fresh `toolsift route` process, 2,000 indexed tools | hybrid " in proc.stdout
    assert not res["by_method"]["hybrid"]["imports"]["torch"]
    report = (out / "report.md").read_text()
    assert "| 2,000 | 2,000 |" in report and "Target (issue 15): at least 250 docs/s" in report
