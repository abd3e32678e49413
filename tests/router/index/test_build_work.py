"""Work an index build does once per record, not once per stage (issue 39: index throughput)."""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from apidb import Catalog
from router import Router
from router import text as rtext
from router.index.build import build_index


def test_a_build_tokenizes_each_record_once(tmp_path, torchhub_records, hub_router, monkeypatch):
    """The BM25 index beside the catalog and the BM25 snapshot stored in it (what watching routers
    load) come from one tokenizing pass; the stored snapshot still routes like the file index."""
    # a description no earlier test tokenized: the process-wide token memo cannot hide a second pass
    records = [replace(r, description=f"{r.description} build-work-{i}") for i, r in enumerate(torchhub_records)]
    db = tmp_path / "hub.db"
    with Catalog(db) as cat:
        cat.sync(records)
    calls: Counter[str] = Counter()
    real = rtext.record_tokens

    def counting(record, weights=None):
        calls[record.id] += 1
        return real(record, weights)

    monkeypatch.setattr(rtext, "record_tokens", counting)
    report = build_index(db)
    assert report.records == len(records) and report.catalog_store == "stored"
    assert set(calls) == {r.id for r in records} and max(calls.values()) == 1
    monkeypatch.undo()
    query = "classify sports activities in videos"
    from_files = [s.record.id for s in Router.open(db).select(query, k=5, method="bm25")]
    live = Router.open(db, watch=True)
    try:
        assert [s.record.id for s in live.select(query, k=5, method="bm25")] == from_files
    finally:
        live.close()
