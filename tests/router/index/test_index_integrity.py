"""Integrity and permissions of the persisted index (issue #19, item 7), on a real
TorchHub catalog and its real index files.

* flipped bytes in ``dense.faiss`` are caught by the manifest's checksum: a warning and
  the vectors rebuilt from the embedding cache, not a silently different top 5;
* the index takes the catalog file's permissions, so another user who may read the
  catalog routes with its dense index too (not keyword-only because of a 0600 manifest).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from router import Router
from router.index.build import build_index, index_dir_for

QUERY = "classify sports activities in videos"


def top5(router: Router) -> list[str]:
    return [s.record.id for s in router.select(QUERY, k=5, method="dense")]


def faiss_file(db: Path) -> Path:
    idir = index_dir_for(db)
    return idir / json.loads((idir / "manifest.json").read_text())["build"] / "dense.faiss"


def test_flipped_bytes_in_the_dense_index_are_caught(hub_db):
    build_index(hub_db)
    clean = Router.open(hub_db)
    assert clean.warnings == []
    expected = top5(clean)
    # flip the sign bit of every float of the best match's vector (an IndexFlatIP file
    # ends with the raw float32 vectors, in record order)
    path = faiss_file(hub_db)
    data = bytearray(path.read_bytes())
    n, dim = len(clean), clean.dense_index().vectors.shape[1]
    row = [r.id for r in clean.records].index(expected[0])
    start = len(data) - (n - row) * dim * 4
    for i in range(start + 3, start + dim * 4, 4):
        data[i] ^= 0x80
    path.write_bytes(bytes(data))

    damaged = Router.open(hub_db)
    text = " ".join(damaged.warnings)
    assert "dense.faiss" in text and "checksum" in text and "rebuilt from the embedding cache" in text
    assert top5(damaged) == expected
    # `toolsift index` does not call a damaged build up to date: it writes a clean one
    report = build_index(hub_db)
    assert not report.up_to_date and Router.open(hub_db).warnings == []


def test_a_damaged_bm25_file_is_rebuilt_in_memory(hub_db):
    build_index(hub_db)
    idir = index_dir_for(hub_db)
    build = idir / json.loads((idir / "manifest.json").read_text())["build"]
    vocab = build / "bm25" / "vocab.index.json"
    words = json.loads(vocab.read_text())
    a, b = list(words)[:2]
    words[a], words[b] = words[b], words[a]  # still valid JSON, silently wrong postings
    vocab.write_text(json.dumps(words))
    router = Router.open(hub_db)
    assert any("bm25" in w and "checksum" in w and "BM25 rebuilt in memory" in w for w in router.warnings)


def modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


@pytest.mark.parametrize("catalog_mode", [0o644, 0o640])
def test_index_files_take_the_catalog_files_permissions(hub_db, catalog_mode):
    os.chmod(hub_db, catalog_mode)
    build_index(hub_db)
    found = modes(index_dir_for(hub_db))
    folder_mode = catalog_mode | ((catalog_mode & 0o444) >> 2)
    for name, mode in found.items():
        path = index_dir_for(hub_db) / name
        assert mode == (folder_mode if path.is_dir() else catalog_mode), (name, oct(mode))
    assert found["manifest.json"] == catalog_mode


def world_reachable(path: Path) -> bool:
    """Whether any user may open ``path`` (every folder above it searchable by others)."""
    path = path.resolve()
    return all(p.stat().st_mode & 0o001 for p in path.parents) and bool(path.stat().st_mode & 0o004)


def test_another_user_of_a_shared_catalog_gets_dense_routing(hub_db):
    """The real `toolsift route` run as user nobody on a world-readable catalog."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to run a command as another user")
    if not world_reachable(Path(sys.executable)) or not world_reachable(Path(sys.executable).parent / "toolsift"):
        pytest.skip(f"another user cannot run {sys.executable} here (a private home folder)")
    shared_dir = Path(tempfile.mkdtemp(prefix="toolsift-shared-"))
    try:
        os.chmod(shared_dir, 0o755)
        db = shared_dir / "hub.db"
        shutil.copy(hub_db, db)
        shutil.copytree(index_dir_for(hub_db), index_dir_for(db))
        os.chmod(db, 0o644)
        build_index(db)
        home = Path(tempfile.mkdtemp(prefix="toolsift-home-"))
        os.chown(home, 65534, 65534)
        script = Path(sys.executable).parent / "toolsift"
        proc = subprocess.run([str(script), "route", QUERY, "--db", str(db), "--json", "-k", "3"],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "HOME": str(home), "HF_HUB_OFFLINE": "1"},
                              preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        shutil.rmtree(home, ignore_errors=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = json.loads(proc.stdout)
        assert out["warnings"] == [] and out["method"] == "hybrid", out["warnings"]
        assert out["tools"][0]["dense_score"] is not None
    finally:
        shutil.rmtree(shared_dir, ignore_errors=True)


def test_old_manifest_without_checksums_is_not_trusted(hub_db):
    build_index(hub_db)
    idir = index_dir_for(hub_db)
    manifest = json.loads((idir / "manifest.json").read_text())
    del manifest["files"]
    (idir / "manifest.json").write_text(json.dumps(manifest))
    router = Router.open(hub_db)
    assert any("no checksums" in w for w in router.warnings)
    assert np.isfinite(router.select(QUERY, k=1)[0].score)
    assert not build_index(hub_db).up_to_date
