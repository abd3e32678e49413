"""Work a route does once per router, not once per request (issue 39: the latency of real requests)."""
from __future__ import annotations

from apidb.record import ApiRecord

PARTY = ("I'm hosting a cocktail party and I need some cocktail recipes. Can you suggest some cocktail "
         "recipes that contain vodka as one of the ingredients? Also, provide me with a cake recipe "
         "from The Birthday Cake DB.")


def test_explaining_a_tool_again_renders_nothing_again(stb_router, monkeypatch):
    """The matched fields of a tool chosen before come from the router's memo: no content hash
    (its canonical JSON) and no field tokenizing for it on a later request."""
    first = stb_router.select(PARTY, k=5)
    explained = [(s.record.id, s.matched_fields, s.matched_terms) for s in first]  # every one read
    assert any(fields for _, fields, _ in explained)
    hashed = []
    real = ApiRecord.content_hash  # a cached_property: computed once per record object

    def counting(self):
        hashed.append(self.id)
        return real.func(self)

    monkeypatch.setattr(ApiRecord, "content_hash", property(counting))
    again = stb_router.select(PARTY, k=5)
    assert [(s.record.id, s.matched_fields, s.matched_terms) for s in again] == explained
    assert hashed == []  # read after the explanations: those are what would hash


def test_explanations_are_found_only_when_read(stb_router, monkeypatch):
    """A caller that never reads the matched terms (the proxy, the OpenAI wrapper) does not pay for
    finding them; one that reads them gets what an eager explanation gave."""
    import router.ranking.explain as explain

    fresh = stb_router.with_records(stb_router.records)  # no explanation memo yet
    calls = []
    real = explain.matched_fields

    def counting(*args, **kwargs):
        calls.append(args[1].id)
        return real(*args, **kwargs)

    monkeypatch.setattr(explain, "matched_fields", counting)
    sel = fresh.select(PARTY, k=5)
    assert calls == []
    read = [(s.record.id, s.matched_terms, s.matched_fields) for s in sel]
    assert calls == [s.record.id for s in sel if s.bm25_score > 0]
    assert any(terms for _, terms, _ in read)
    for _, terms, fields in read:
        assert terms == list(fields)
    monkeypatch.undo()
    eager = {s.record.id: (s.matched_terms, s.matched_fields) for s in stb_router.select(PARTY, k=5)}
    assert {i: (t, f) for i, t, f in read} == eager
    assert sel[0].to_dict()["matched_fields"] == read[0][2]  # JSON output reads them too
