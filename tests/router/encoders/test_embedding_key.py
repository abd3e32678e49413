"""Cached vectors are keyed by the passage the embedder reads, not only by the record."""
from __future__ import annotations

from dataclasses import replace

from apidb.loaders import load
from router import text as rtext
from tests.conftest import BUNDLED_GORILLA


def test_key_follows_the_rendered_passage(monkeypatch):
    rec = load(BUNDLED_GORILLA / "torchhub_api.jsonl").records[0]
    key = rtext.embedding_key(rec)
    assert key == rtext.embedding_key(replace(rec))  # same content, same passage, same key
    assert rtext.embedding_key(replace(rec, description=rec.description + " more")) != key
    # a new way of rendering passages must not reuse vectors of the old text
    monkeypatch.setattr(rtext, "_EMBEDDING_KEYS", {})
    monkeypatch.setattr(rtext, "record_passage", lambda r: "rendered differently: " + r.name)
    assert rtext.embedding_key(rec) != key
