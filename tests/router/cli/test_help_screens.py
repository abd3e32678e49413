"""Help screens a newcomer does not have to decode (issue 40): placeholders named for what they
hold, never a Python type; choices listed and completed; an example on every command; `serve mcp`
takes -k like route and serve openai."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import toolsift

COMMANDS = ["catalog add", "catalog stats", "catalog list", "catalog show", "catalog remove", "index", "route",
            "check", "audit", "serve openai", "serve anthropic", "serve mcp", "tune", "cache info", "cache clear",
            "cache ship", "tenants new-key", "tenants hash-key", "tenants check", "doctor", "demo"]
PYTHON_TYPE = re.compile(r"<(list\[|int|str>|float>|path>|bool>)|\{path\}|\{file\}")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_plain_placeholders_and_an_example(command):
    res = toolsift(*command.split(), "--help", env={"COLUMNS": "100"})
    assert res.returncode == 0, res.stderr
    assert not PYTHON_TYPE.search(res.stdout), PYTHON_TYPE.search(res.stdout).group(0)
    assert "Example:" in res.stdout and f"toolsift {command.split()[0]}" in res.stdout.split("Example:")[1]


def test_route_help_names_its_values():
    out = toolsift("route", "--help", env={"COLUMNS": "100"}).stdout
    for shown in ("--pin TOOL", "-n, --namespace NS", "-k, --k N", "--method <hybrid|bm25|dense>", "--db DB"):
        assert shown in out, shown


def test_method_completes_its_choices_not_file_names():
    script = Path(sys.executable).parent / "toolsift"
    env = {**os.environ, "_TOOLSIFT_COMPLETE": "complete_bash", "COMP_WORDS": "toolsift route --method ",
           "COMP_CWORD": "3"}
    res = subprocess.run([str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert set(res.stdout.split()) == {"hybrid", "bm25", "dense"}, (res.stdout, res.stderr)


def test_serve_mcp_takes_minus_k(tmp_path):
    res = toolsift("serve", "mcp", "-k", "3", "--config", tmp_path / "missing.json")
    assert "No such option" not in res.stderr, res.stderr
    assert res.returncode == 2 and "missing.json" in res.stderr


def test_bench_out_help_states_the_default_it_uses():
    out = " ".join(toolsift("bench", "retrieval", "--help").stdout.split())
    assert "--quick: benchmarks/results/quick/retrieval" in out


def test_cache_ship_encoder_has_help():
    out = " ".join(toolsift("cache", "ship", "--help").stdout.split())
    assert "--encoder ENCODER Which encoder embeds the passages" in out, out


def test_tune_training_options_have_help():
    out = " ".join(toolsift("tune", "--help", env={"COLUMNS": "100"}).stdout.split())
    for shown in ("--epochs N Passes over the training queries", "--batch-size BATCH_SIZE Queries per training step",
                  "--learning-rate LEARNING_RATE Optimizer step size", "--seed SEED Seed for batch order"):
        assert shown in out, (shown, out)
