"""The package layering of pyproject.toml ([tool.importlinter]), checked by import-linter itself.

apidb at the bottom; the checker and the retrieval core above it; the ways in (middleware,
gateway, agent, frameworks) above the core; the command line above them; the benchmarks on top; inside the
core, the encoders below the index below the ranking, training and tenancy above it; inside the
benchmarks, the data below the retrieval benchmarks below the rest; no import cycles between
sibling modules. The second test proves the check can fail: it copies the tree,
adds one forbidden import, and expects `lint-imports` to name it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("apidb", "checker", "router", "benchmarks")
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess:
    if not LINT.exists():
        pytest.skip(f"{LINT} is missing: install the dev extra (pip install -e '.[dev]')")
    # the tree under test first on the path: grimp must read `root`'s packages, not the installed ones
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_tree_keeps_every_layering_contract():
    proc = _lint(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "7 kept, 0 broken" in proc.stdout


def _no_data(folder: str, names: list[str]) -> list[str]:
    """Leave out caches, results and data folders (router/data, apidb/data), not a package named data."""
    return [n for n in names if n in ("__pycache__", "results")
            or (n == "data" and not (Path(folder) / n / "__init__.py").exists())]


def _copy_tree(dest: Path) -> Path:
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=_no_data)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


@pytest.mark.parametrize("module, line, contract", [
    # the product imports the benchmarks
    ("router/ranking/engine.py", "import benchmarks.data.datasets", "Packages: benchmarks > router > checker > apidb"),
    # the bottom layer reaches up
    ("apidb/record.py", "import checker.verdict", "Packages: benchmarks > router > checker > apidb"),
    # the retrieval core uses a way in
    ("router/encoders/dense.py", "import router.middleware.request", "Router: the command line"),
    # the retrieval core uses the checker
    ("router/ranking/query.py", "import checker.messages", "The retrieval core never uses the checker"),
    # two ways in depend on each other
    ("router/gateway/server.py", "import router.agent.trace", "Router: the command line"),
    # the framework adapters reach into another way in (they use the core's Router, like the proxy)
    ("router/frameworks/registry.py", "import router.middleware.request", "Router: the command line"),
    # the retrieval core uses the framework adapters
    ("router/ranking/engine.py", "import router.frameworks.tools", "Router: the command line"),
    # an agent framework imported outside its adapter (the frameworks are optional extras)
    ("router/middleware/proxy.py", "import llama_index.core", "The agent frameworks are optional"),
    ("router/ranking/query.py", "from langgraph.prebuilt import ToolNode", "The agent frameworks are optional"),
    # the encoders reach up into the index
    ("router/encoders/dense.py", "import router.index.build", "Retrieval core: training | tenancy > ranking"),
    # the index reaches up into the ranking
    ("router/index/lexical.py", "import router.ranking.engine", "Retrieval core: training | tenancy > ranking"),
    # the engine uses training (training is above the engine)
    ("router/ranking/engine.py", "import router.training.tune", "Retrieval core: training | tenancy > ranking"),
    # training and tenancy are independent of each other
    ("router/training/tune.py", "import router.tenancy.scope", "Retrieval core: training | tenancy > ranking"),
    # a benchmark's data reaches up into what is measured with it
    ("benchmarks/data/datasets.py", "import benchmarks.retrieval.methods", "Benchmarks: the command >"),
    # two kinds of benchmark depend on each other
    ("benchmarks/checker/gorilla_audit.py", "import benchmarks.serving.replicas", "Benchmarks: the command >"),
    # a cycle, even through an import inside a function
    ("router/ranking/config.py", "def _late():\n    import router.ranking.engine", "No import cycles between sibling modules"),
])
def test_a_forbidden_import_breaks_the_check(tmp_path, module, line, contract):
    root = _copy_tree(tmp_path)
    target = root / module
    target.write_text(target.read_text(encoding="utf-8") + "\n\n" + line + "\n", encoding="utf-8")
    proc = _lint(root)
    assert proc.returncode != 0, proc.stdout
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, proc.stdout
