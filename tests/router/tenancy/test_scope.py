"""ScopedRouter (issue 17, tenants): a router seen through some namespaces, on the Gorilla catalog
(BM25). The filter applies before ranking; whatever lies outside is never ranked, pinned or named."""
from __future__ import annotations

import pytest

from router.errors import RouterError
from router.tenancy.scope import ScopedRouter

QUERY = "Summarize this long news article about the elections into three sentences."


def test_ranks_only_inside_its_namespaces_and_matches_the_engine_filter(bm25_router):
    everywhere = bm25_router.select(QUERY, k=5, method="bm25")
    assert {s.record.namespace for s in everywhere} == {"huggingface"}  # the words belong to huggingface
    scoped = ScopedRouter(bm25_router, ["torchhub", "tensorflowhub"])
    mine = scoped.select(QUERY, k=5, method="bm25")
    assert mine and {s.record.namespace for s in mine} <= {"torchhub", "tensorflowhub"}
    engine = bm25_router.select(QUERY, k=5, method="bm25", include_namespaces=["tensorflowhub", "torchhub"])
    assert [s.record.id for s in mine] == [s.record.id for s in engine]
    assert len(scoped) == 174 and scoped.namespaces() == ["tensorflowhub", "torchhub"]
    unrestricted = ScopedRouter(bm25_router, None)
    assert [s.record.id for s in unrestricted.select(QUERY, k=5, method="bm25")] == [s.record.id for s in everywhere]


def test_pins_candidates_and_namespaces_outside_are_dropped_without_naming_them(bm25_router):
    scoped = ScopedRouter(bm25_router, ["torchhub", "no-such-namespace"])
    outside = next(r for r in bm25_router.records if r.namespace == "huggingface")
    inside = next(r for r in bm25_router.records if r.namespace == "torchhub")
    got = scoped.select(QUERY, k=3, method="bm25", pinned=[outside.id, outside.name, inside.id])
    assert got[0].record.id == inside.id and got[0].reason == "pinned"
    assert all(s.record.namespace == "torchhub" for s in got)
    assert scoped.select(QUERY, k=3, method="bm25", candidates=[outside.id]) == []
    assert scoped.select(QUERY, k=3, method="bm25", include_namespaces=["huggingface"]) == []
    assert scoped.select(QUERY, k=3, method="bm25", exclude_namespaces=["torchhub", "huggingface"]) == []
    assert scoped.get(outside.id) is None and scoped.get(inside.id) is inside
    assert ScopedRouter(bm25_router, ["nothing-here"]).select(QUERY, k=3, method="bm25") == []
    with pytest.raises(RouterError, match="unknown namespace") as err:  # what the scope keeps a tenant from
        bm25_router.select(QUERY, include_namespaces=["no-such-namespace"])
    assert "huggingface" in str(err.value)
