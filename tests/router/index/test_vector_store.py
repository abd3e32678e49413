"""Embeddings computed once (issue 14): the shipped Gorilla vectors, the user-level cache shared
by every catalog and command, and `toolsift cache info|clear`."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from router import text as rtext
from router.encoders.dense import BASE_MODEL, DEFAULT_MODEL, cache_identity, embed_with_cache, forget_caches
from router.index.vector_store import (
    BUNDLED_DIR,
    ShippedVectors,
    shipped_vectors,
    vector_cache,
)
from tests.support.cli import toolsift


class _NoModel:
    """Stands where the embedder would be: any call to encode fails the test."""

    dim = 384

    def encode(self, *args, **kwargs):
        raise AssertionError("the model was asked to embed a passage a cache already holds")


def test_the_shipped_vectors_cover_the_bundled_catalog_for_the_default_encoder(gorilla_db):
    from apidb.catalog import Catalog

    shipped = ShippedVectors(BUNDLED_DIR / "gorilla.vectors.npz")
    assert shipped.identity == cache_identity(DEFAULT_MODEL, "onnx")
    assert shipped._vecs.dtype == np.float16
    with Catalog.open(gorilla_db) as cat:
        records = cat.records()
    keys = [rtext.embedding_key(r) for r in records]
    assert all(v is not None for v in shipped.get_many(keys)), "regenerate: toolsift cache ship (docs/cli.md)"
    assert shipped_vectors(cache_identity(DEFAULT_MODEL, "torch")) == []  # another vector space: never served
    base = ShippedVectors(BUNDLED_DIR / "gorilla-base.vectors.npz")  # for --model all-MiniLM-L6-v2
    assert base.identity == cache_identity(BASE_MODEL, "onnx")
    assert all(v is not None for v in base.get_many(keys))


@pytest.mark.slow
def test_shipped_vectors_are_the_encoders_own(gorilla_db):
    from apidb.catalog import Catalog
    from router.encoders.dense import Embedder

    with Catalog.open(gorilla_db) as cat:
        records = cat.records()[::300]
    shipped = shipped_vectors(cache_identity(DEFAULT_MODEL, "onnx"))[0]
    want = Embedder(DEFAULT_MODEL, "onnx").encode([rtext.record_passage(r) for r in records])
    got = np.vstack(shipped.get_many(rtext.embedding_key(r) for r in records))
    cos = (want * got).sum(1) / np.linalg.norm(want, axis=1) / np.linalg.norm(got, axis=1)
    # int8 dynamic quantization scales activations per batch, so the same passage encoded in
    # another batch differs a little (0.994-1.0 measured); float16 adds ~1e-4
    assert cos.min() > 0.99


def test_indexing_the_bundled_catalog_embeds_nothing(gorilla_db, user_cache):
    from router.index.build import build_index

    report = build_index(gorilla_db, encoder="onnx")
    assert report.embedded == 0 and report.reused == report.records == 1069
    # copied forward: the user-level cache now holds them for every other catalog and command
    assert len(vector_cache(DEFAULT_MODEL, "onnx").writable[-1]) >= 1035


@pytest.mark.slow
def test_a_second_catalog_with_the_same_tools_reuses_the_first_ones_vectors(tmp_path, user_cache):
    from apidb.catalog import Catalog
    from router.index.build import build_index

    tools = tmp_path / "tools.json"
    shutil.copy(BUNDLED_DIR.parents[1] / "examples" / "tools.json", tools)
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    for db in (first, second):
        assert toolsift("catalog", "add", tools, "--namespace", "demo", db=db).returncode == 0
    assert build_index(first, encoder="onnx").embedded == 8
    forget_caches()  # a new process: only the files remain
    assert build_index(second, encoder="onnx").embedded == 0  # another catalog, the same passages
    with Catalog.open(second) as cat:  # and an in-memory router (bench, tune, demo) asks no model either
        records = cat.records()
    vecs, encoded = embed_with_cache(_NoModel(), vector_cache(DEFAULT_MODEL, "onnx"),
                                     [rtext.embedding_key(r) for r in records],
                                     lambda i: rtext.record_passage(records[i]))
    assert encoded == 0 and vecs.shape == (8, 384)


def test_cache_info_and_clear(tmp_path, gorilla_db, user_cache):
    from router.index.build import build_index

    build_index(gorilla_db, encoder="onnx")
    env = {"TOOLSIFT_CACHE": str(user_cache)}
    info = json.loads(toolsift("cache", "info", env=env).stdout)
    assert info["cache_dir"] == str(user_cache) and info["vectors"] >= 1035
    assert any(f["model"] == cache_identity(DEFAULT_MODEL, "onnx") for f in info["files"])
    assert info["shipped"][0]["vectors"] == 1035
    text = toolsift("cache", "info", env=env, terminal=True)
    assert f"embedding cache: {user_cache}" in text.stdout
    cleared = json.loads(toolsift("cache", "clear", "--yes", env=env).stdout)
    assert cleared["deleted"] >= 1
    assert json.loads(toolsift("cache", "info", env=env).stdout)["vectors"] == 0
    assert (user_cache / "onnx").exists()  # exports are not embeddings: kept
