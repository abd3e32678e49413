"""Persisted index next to a real catalog: build, incremental re-index, broken files."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from apidb import Catalog
from router import Router, RouterError
from router.encoders.dense import forget_caches
from router.index.build import build_index, index_dir_for


def test_build_then_open_uses_both_indexes(hub_db):
    report = build_index(hub_db)
    assert report.records == 94 and report.embedded == 0 and report.reused == 94
    router = Router.open(hub_db)
    assert router.warnings == []
    sel = router.select("classify sports activities in videos", k=3)
    assert sel[0].dense_score is not None
    again = build_index(hub_db)
    assert again.up_to_date and again.embedded == 0


def test_one_changed_record_is_re_embedded_alone(hub_db, torchhub_records, own_embedding_cache):
    build_index(hub_db)
    changed = replace(torchhub_records[10], description=torchhub_records[10].description + " Now faster.")
    with Catalog(hub_db) as cat:
        cat.sync([changed] + [r for r in torchhub_records if r.id != changed.id])
    stale = Router.open(hub_db)  # catalog changed: warns, BM25 rebuilt, the changed record has no vector yet
    assert any("changed since the index" in w for w in stale.warnings)
    assert any("no cached vector" in w for w in stale.warnings)
    report = build_index(hub_db)
    assert report.embedded == 1 and report.reused == 93
    fresh = Router.open(hub_db)
    assert fresh.warnings == [] and fresh.get(changed.id).description.endswith("Now faster.")


def test_missing_dense_file_is_rebuilt_from_the_cache(hub_db):
    build_index(hub_db)
    manifest = json.loads((index_dir_for(hub_db) / "manifest.json").read_text())
    (index_dir_for(hub_db) / manifest["build"] / "dense.faiss").unlink()
    router = Router.open(hub_db)
    assert any("rebuilt from the embedding cache" in w for w in router.warnings)
    assert router.select("object detection", k=2)[0].dense_score is not None


def test_corrupt_files_fall_back_to_bm25_with_a_warning(hub_db, own_embedding_cache):
    build_index(hub_db)
    idir = index_dir_for(hub_db)
    manifest = json.loads((idir / "manifest.json").read_text())
    (idir / manifest["build"] / "dense.faiss").write_bytes(b"not a faiss index")
    (idir / manifest["build"] / "bm25" / "vocab.index.json").write_text("{broken")
    shutil.rmtree(idir / "cache")
    for f in own_embedding_cache.glob("emb-*"):  # the vectors are nowhere else either
        f.unlink()
    forget_caches()  # this process still holds the vectors in memory; a new process would not
    router = Router.open(hub_db)
    text = " ".join(router.warnings)
    assert "BM25 rebuilt in memory" in text and "dense search off" in text
    sel = router.select("object detection", k=2)  # hybrid asked, BM25 answers
    assert len(sel) == 2 and sel[0].dense_score is None
    (idir / "manifest.json").write_text("garbage")
    assert any("unreadable" in w for w in Router.open(hub_db).warnings)


def test_killed_build_leaves_previous_index_usable(hub_db):
    build_index(hub_db)
    idir = index_dir_for(hub_db)
    # what a build killed mid-way leaves: a half-written build folder and a temp manifest
    (idir / "build-deadbeef0000").mkdir()
    (idir / "build-deadbeef0000" / "dense.faiss").write_bytes(b"\0" * 10)
    (idir / ".manifest-xyz.json").write_text("{")
    router = Router.open(hub_db)
    assert router.warnings == []
    assert router.select("semantic segmentation", k=1)[0].dense_score is not None


def test_index_built_with_another_model_is_refused(hub_db, tmp_path):
    build_index(hub_db)
    with pytest.raises(RouterError, match="built with model 'toolsift-general-minilm'"):
        Router.open(hub_db, model=str(tmp_path))
    with pytest.raises(RouterError, match="unknown embedding model"):
        build_index(hub_db, model="no-such-model")


def test_no_index_means_bm25_in_memory(gorilla_db):
    router = Router.open(gorilla_db)
    assert any("no index" in w and "toolsift index --db" in w for w in router.warnings)
    assert len(router) == 1069
    assert router.select("translate english to german", k=3)[0].dense_score is None


def test_index_with_other_field_weights_keeps_dense(hub_db):
    build_index(hub_db, field_weights={"name": 1, "description": 1})
    router = Router.open(hub_db)
    assert len(router.warnings) == 1 and "other BM25 field weights" in router.warnings[0]
    assert router.select("object detection", k=1)[0].dense_score is not None
    assert build_index(hub_db).up_to_date is False  # a plain rebuild restores the defaults
    assert Router.open(hub_db).warnings == []
