"""Every benchmark `toolsift bench` runs by name (benchmarks/suite.py) points at a module with the
``run(out_dir, quick)`` that `bench all` calls: a module moved or split without its registry entry
made `bench all` report it as failed."""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from benchmarks.suite import DELEGATED


@pytest.mark.parametrize("name", sorted(DELEGATED))
def test_each_delegated_benchmark_has_its_run(name):
    module = importlib.import_module(DELEGATED[name][0])
    run = getattr(module, "run", None)
    assert callable(run), f"bench {name}: {module.__name__} has no run(out_dir, quick)"
    inspect.signature(run).bind(Path("out"), True)  # how run_delegated calls it: run(target, quick)
