"""Issue 42: `toolsift tune` and `--usage-log` on hostile input, through the installed command.

Each input is refused with one line naming the file (and line) or the option, exit 2, before
any training starts: never a traceback, a MemoryError, a model of NaN weights, or a hang.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BUNDLED_GORILLA
from tests.router.middleware.test_proxy_hardening import free_port
from tests.support.cli import toolsift

_SCRIPT = Path(sys.executable).parent / "toolsift"

def good(catalog: Path) -> str:
    """A labelled query whose tool the catalog holds: with it, only the option can be wrong."""
    records = json.loads(toolsift("catalog", "list", "--json", db=catalog).stdout)[:4]
    return "".join(json.dumps({"id": f"q{i}", "query": r["description"], "relevant": [r["id"]]}) + "\n"
                   for i, r in enumerate(records))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("tune-hostile") / "catalog.db"
    assert toolsift("catalog", "add", BUNDLED_GORILLA / "torchhub_api.jsonl", db=db).returncode == 0
    return db


def refused(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    for w in words:
        assert w in r.stderr, r.stderr


def tune(catalog: Path, out: Path, *args: object) -> subprocess.CompletedProcess:
    return toolsift("tune", "--db", catalog, "--out", out, *args)


def test_devices_fifos_and_deep_or_broken_lines_are_refused(catalog, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "model"
    refused(tune(catalog, out, "--queries", "/dev/zero"), "/dev/zero", "device")
    refused(tune(catalog, out, "--queries", fifo), str(fifo), "FIFO")  # never blocks waiting for a writer
    refused(tune(catalog, out, "--from-log", fifo), str(fifo), "FIFO")
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    refused(tune(catalog, out, "--from-log", deep), f"{deep}: line 1")
    surrogate = tmp_path / "surrogate.jsonl"
    surrogate.write_text(json.dumps({"v": 2, "ts": "t", "source": "proxy", "route": "routed", "query_hmac": "h",
                                     "query": "classify \ud800 images", "offered": ["a"], "called": "a",
                                     "id": None, "verdict": "valid"}) + "\n")
    refused(tune(catalog, out, "--from-log", surrogate), f"{surrogate}: line 1")
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "query": "classify \\ud800 images", "relevant": ["x"]}\n')
    refused(tune(catalog, out, "--queries", queries), f"{queries}: line 1")
    assert not out.exists()


@pytest.mark.parametrize("args, words", [
    (["--learning-rate", "nan"], "--learning-rate must be a positive finite number"),
    (["--learning-rate", "inf"], "--learning-rate must be a positive finite number"),
    (["--learning-rate", "-1e-5"], "--learning-rate"),
    (["--seed", str(2**70)], "--seed must be from 0"),
])
def test_numeric_options_are_checked_before_any_work(catalog, tmp_path, args, words):
    queries = tmp_path / "q.jsonl"
    queries.write_text(good(catalog))
    refused(tune(catalog, tmp_path / "model", "--queries", queries, "--holdout", "0", "--epochs", "1", *args), words)


def test_an_out_folder_that_cannot_be_written_is_said_before_training(catalog, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(good(catalog))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for out in (blocker / "model", Path("/proc/toolsift-model")):
        refused(tune(catalog, out, "--queries", queries), str(out), "cannot write the tuned model")


def test_serve_with_a_fifo_usage_log_is_one_line_not_a_hang(tmp_path):
    fifo = tmp_path / "usage.fifo"
    os.mkfifo(fifo)
    r = subprocess.run([str(_SCRIPT), "serve", "openai", "--upstream", "http://127.0.0.1:9/v1", "--usage-log",
                        str(fifo), "--port", str(free_port())], capture_output=True, text=True, timeout=60)
    refused(r, str(fifo), "not a regular file")
