"""Router test fixtures: small real catalogs, one embedding cache for the whole session.

The embedding model is loaded at most once per process (router.encoders.dense keeps it), and
only small record sets are embedded (TorchHub's 94 APIs, ~100 StableToolBench endpoints).
"""
from __future__ import annotations

import shutil

import pytest

from tests.conftest import BUNDLED_GORILLA, shared

STB_CATEGORIES = {"Weather", "Travel", "Food", "Music", "Finance"}


@pytest.fixture(scope="session")
def emb_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("embeddings")


@pytest.fixture(scope="session")
def torchhub_records():
    from apidb.loaders import load

    return load(BUNDLED_GORILLA / "torchhub_api.jsonl").records


@pytest.fixture(scope="session")
def gorilla_records():
    from apidb.loaders import load

    recs = []
    for f in sorted(BUNDLED_GORILLA.glob("*_api.jsonl")):
        recs += load(f).records
    return recs


@pytest.fixture(scope="session")
def stb_records():
    """StableToolBench G2_instruction endpoints of five categories (real RapidAPI tools)."""
    from apidb.loaders import load

    path = shared("stabletoolbench_solvable", "test_instruction", "G2_instruction.json")
    recs = load(path, format="toolbench").records
    return [r for r in recs if r.metadata.get("category_name") in STB_CATEGORIES]


@pytest.fixture(scope="session")
def hub_router(torchhub_records, emb_cache):
    """Hybrid router over TorchHub with its dense index built (embeds 94 records once)."""
    from router import Router

    r = Router.from_records(torchhub_records, cache_dir=emb_cache)
    r.dense_index()
    return r


@pytest.fixture(scope="session")
def stb_router(stb_records, emb_cache):
    from router import Router

    r = Router.from_records(stb_records, cache_dir=emb_cache)
    r.dense_index()
    return r


@pytest.fixture(scope="session")
def stb_base_router(stb_records, emb_cache):
    """`stb_router` with the untuned MiniLM, for tests of what the router does around the encoder on
    StableToolBench requests: the shipped general encoder trained on them."""
    from router import Router
    from router.encoders.model import BASE_MODEL

    r = Router.from_records(stb_records, cache_dir=emb_cache, model=BASE_MODEL)
    r.dense_index()
    return r


@pytest.fixture(scope="session")
def bm25_router(gorilla_records):
    """All 1,069 bundled Gorilla APIs, BM25 only (no model needed)."""
    from router import Router

    return Router.from_records(gorilla_records, dense=False)


@pytest.fixture
def hub_db(tmp_path, torchhub_records, hub_router, emb_cache):
    """A TorchHub catalog file whose index cache is pre-seeded from the session cache,
    so building it embeds nothing (the model already encoded these 94 records once)."""
    from apidb import Catalog
    from router.index.build import index_dir_for

    db = tmp_path / "hub.db"
    with Catalog(db) as cat:
        cat.sync(torchhub_records)
    cache = index_dir_for(db) / "cache"
    cache.mkdir(parents=True)
    for f in emb_cache.glob("emb-*.npz"):
        shutil.copy(f, cache / f.name)
    return db



@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    """An empty user-level embedding cache (``$TOOLSIFT_CACHE``) of this test's own, for tests
    that count what gets embedded: the session's (and earlier runs') cache would hold the
    vectors. ONNX exports stay shared (a symlink to the real folder): an export is not what
    these tests are about, and takes a torch import and a minute."""
    from router.encoders.dense import default_cache_dir, forget_caches

    real = default_cache_dir() / "onnx"
    own = tmp_path / "toolsift-cache"
    own.mkdir()
    real.mkdir(parents=True, exist_ok=True)
    (own / "onnx").symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("TOOLSIFT_CACHE", str(own))
    forget_caches()
    yield own
    forget_caches()


@pytest.fixture
def own_embedding_cache(user_cache, tmp_path, monkeypatch):
    """`user_cache`, and no vectors shipped with the package either (the bundled Gorilla
    catalog's): for tests that need a vector to be nowhere until the model makes it."""
    import router.index.vector_store as vector_store

    monkeypatch.setattr(vector_store, "BUNDLED_DIR", tmp_path / "no-shipped-vectors")
    monkeypatch.setattr(vector_store, "_SHIPPED", {})
    return user_cache
