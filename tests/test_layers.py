"""The package layering of pyproject.toml ([tool.importlinter]), checked by import-linter itself.

apidb at the bottom; the checker and the retrieval core above it; the ways in (middleware,
gateway, agent) above the core; the command line above them; the benchmarks on top; no import
cycles between sibling modules. The second test proves the check can fail: it copies the tree,
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
    assert "4 kept, 0 broken" in proc.stdout


def _copy_tree(dest: Path) -> Path:
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__", "results", "data"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


@pytest.mark.parametrize("module, line, contract", [
    # the product imports the benchmarks
    ("router/engine.py", "import benchmarks.datasets", "Packages: benchmarks > router > checker > apidb"),
    # the bottom layer reaches up
    ("apidb/record.py", "import checker.verdict", "Packages: benchmarks > router > checker > apidb"),
    # the retrieval core uses a way in
    ("router/dense.py", "import router.middleware.request", "Router: the command line"),
    # the retrieval core uses the checker
    ("router/query.py", "import checker.messages", "The retrieval core never uses the checker"),
    # two ways in depend on each other
    ("router/gateway/server.py", "import router.agent.trace", "Router: the command line"),
    # a cycle, even through an import inside a function
    ("router/config.py", "def _late():\n    import router.engine", "No import cycles between sibling modules"),
])
def test_a_forbidden_import_breaks_the_check(tmp_path, module, line, contract):
    root = _copy_tree(tmp_path)
    target = root / module
    target.write_text(target.read_text(encoding="utf-8") + "\n\n" + line + "\n", encoding="utf-8")
    proc = _lint(root)
    assert proc.returncode != 0, proc.stdout
    broken = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, proc.stdout
