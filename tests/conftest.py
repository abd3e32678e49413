"""Shared fixtures: where the real public data lives, and small real catalogs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.data.shared_data import data_root

ROOT = Path(__file__).resolve().parents[1]
BUNDLED_GORILLA = ROOT / "apidb" / "data" / "gorilla"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def shared(*parts: str) -> Path:
    """A path under ../shared/data; the test skips, saying why, when it is absent."""
    path = data_root().joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (set TOOLSIFT_SHARED_DATA)")
    return path


@pytest.fixture
def shared_data():
    return shared


def build_gorilla_catalog(db: Path) -> list:
    """Write a catalog of the bundled Gorilla API databases at ``db``; its records, as stored."""
    from apidb import Catalog
    from apidb.loaders import load

    with Catalog(db) as cat:
        cat.sync([r for f in sorted(BUNDLED_GORILLA.glob("*_api.jsonl")) for r in load(f).records])
        return cat.records()


@pytest.fixture
def gorilla_db(tmp_path):
    """A real catalog file built from the bundled Gorilla API databases."""
    db = tmp_path / "catalog.db"
    build_gorilla_catalog(db)
    return db


from tests.support.postgres import pg_cluster, pg_url  # noqa: E402,F401  (fixtures for every test package)


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog_at(request, tmp_path):
    """Where a catalog goes, once per backend: a file path, then a fresh PostgreSQL database's URL."""
    if request.param == "sqlite":
        return tmp_path / "catalog.db"
    return request.getfixturevalue("pg_url")
